"""Prometheus metrics, in a registry of the app's own (no process-wide globals)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
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
    ) -> None:
        self._documents = documents_by_state
        self._depth = queue_depth
        self._admissions = admissions
        self._damaged = damaged_indexes

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


class Metrics:
    def __init__(
        self,
        documents_by_state: Callable[[], dict[str, int]],
        queue_depth: Callable[[], int],
        admissions: Callable[[], tuple[int, int]],
        damaged_indexes: Callable[[], int] = lambda: 0,
    ) -> None:
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
            _StateCollector(documents_by_state, queue_depth, admissions, damaged_indexes)
        )
