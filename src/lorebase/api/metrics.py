"""Prometheus metrics, in a registry of the app's own (no process-wide globals)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

SEARCH_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
EMBED_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class _StateCollector(Collector):
    """Documents by state and queue depth, read when scraped."""

    def __init__(
        self,
        documents_by_state: Callable[[], dict[str, int]],
        queue_depth: Callable[[], int],
        admissions: Callable[[], tuple[int, int]],
        damaged_indexes: Callable[[], int],
        stale_documents: Callable[[], dict[int, int]] = dict,
        seconds_left: Callable[[], dict[int, float]] = dict,
    ) -> None:
        self._documents = documents_by_state
        self._depth = queue_depth
        self._admissions = admissions
        self._damaged = damaged_indexes
        self._stale = stale_documents
        self._left = seconds_left

    def collect(self) -> Iterable[Metric]:
        documents = GaugeMetricFamily("lorebase_documents", "Documents by state", labels=["state"])
        for state, count in sorted(self._documents().items()):
            documents.add_metric([state], count)
        yield documents
        yield GaugeMetricFamily("lorebase_queue_depth", "Uploads waiting", value=self._depth())
        accepted, rejected = self._admissions()
        admissions = GaugeMetricFamily(
            "lorebase_admissions", "Uploads admitted to the queue", labels=["outcome"]
        )
        admissions.add_metric(["accepted"], accepted)
        admissions.add_metric(["rejected"], rejected)
        yield admissions
        yield GaugeMetricFamily(
            "lorebase_keyword_indexes_damaged",
            "Knowledge bases whose keyword index was found damaged and is being rebuilt",
            value=self._damaged(),
        )
        yield from self._pace()

    def _pace(self) -> Iterable[Metric]:
        """Stale documents and the time left of running passes, by base id (the label
        ``kb``: ids, as the events name bases; a base's name is its owner's to show)."""
        stale = GaugeMetricFamily(
            "lorebase_stale_documents",
            "Documents an older version made, read again by the next pass",
            labels=["kb"],
        )
        for kb_id, count in sorted(self._stale().items()):
            stale.add_metric([str(kb_id)], count)
        yield stale
        left = GaugeMetricFamily(
            "lorebase_pass_seconds_left",
            "Seconds a running pass has left, from its recent rate (a pass still measuring "
            "its rate, or none running: no sample)",
            labels=["kb"],
        )
        for kb_id, seconds in sorted(self._left().items()):
            left.add_metric([str(kb_id)], seconds)
        yield left


class _UsageCollector(Collector):
    """The model calls this process counted (see lorebase.usage), by role and model."""

    def __init__(
        self, usage: Callable[[], Mapping[tuple[str, str], tuple[int, int, int, float]]]
    ) -> None:
        self._usage = usage

    def collect(self) -> Iterable[Metric]:
        names = ("calls", "texts", "tokens", "seconds")
        families = [
            CounterMetricFamily(
                f"lorebase_model_{name}",
                f"Model {name} counted by this process (usage accounting)",
                labels=["role", "model"],
            )
            for name in names
        ]
        for (role, model), values in sorted(self._usage().items()):
            for family, value in zip(families, values, strict=True):
                family.add_metric([str(role), model], value)
        yield from families


class Metrics:
    def __init__(
        self,
        documents_by_state: Callable[[], dict[str, int]],
        queue_depth: Callable[[], int],
        admissions: Callable[[], tuple[int, int]],
        damaged_indexes: Callable[[], int] = lambda: 0,
        stale_documents: Callable[[], dict[int, int]] = dict,
        seconds_left: Callable[[], dict[int, float]] = dict,
        usage: Callable[[], Mapping[tuple[str, str], tuple[int, int, int, float]]] = dict,
    ) -> None:
        """``stale_documents`` and ``seconds_left``: by base id (every base; a base with
        none, or no pass measured, left out); ``usage``: the model calls this process
        counted, by (role, model): calls, texts, tokens, seconds."""
        self.registry = CollectorRegistry()
        self.search_seconds = Histogram(
            "lorebase_search_seconds",
            "Search latency",
            ["mode"],
            buckets=SEARCH_BUCKETS,
            registry=self.registry,
        )
        self.embed_batch_seconds = Histogram(
            "lorebase_embed_batch_seconds",
            "Embedder batch latency",
            buckets=EMBED_BUCKETS,
            registry=self.registry,
        )
        self.requests = Counter(
            "lorebase_http_requests",
            "HTTP requests",
            ["route", "status"],
            registry=self.registry,
        )
        self.registry.register(
            _StateCollector(
                documents_by_state,
                queue_depth,
                admissions,
                damaged_indexes,
                stale_documents,
                seconds_left,
            )
        )
        self.registry.register(_UsageCollector(usage))
