"""Asking a question set through the real search and measuring what users get.

:func:`run_task` asks every question of an :class:`EvalTask` in every mode exactly as a user's
search asks it (``top_k`` 10 documents, one hit per document, the relevance floor applied) and
scores those hits: recall and precision at k, MRR@10 and nDCG@10 of the documents they name, in
that order. No deeper list and no other path than users': a hit the floor cut is missing.

Beside the modes, **baselines** computed from the very arm lists the hybrid search fused in the
same run (:class:`~lorebase.search.query.Explanation`): each arm alone, and plain
document-level reciprocal rank fusion — each arm's candidates (100 deep) collapsed to documents
where they first appear, then fused with k = 60. A fusion worth its keep beats them.

**No answer**, per mode: the share of unanswerable questions (``answerable: false`` in an
evals file, or off-topic questions added with ``off_topic``) the search answered "nothing
relevant" (``no_answer_rate``), and the share of answerable questions that lost every relevant
document the ranking held in its first ten to the floor (``lost_rate``).

**Halves**: ``half`` keeps the questions of one half (:func:`query_half`, a stable hash of
the question's id), so a change is chosen on one half and confirmed on the other.

Latency is that of those searches (one untimed question first loads the model and vectors);
with ``rerank``, how often the reranker's gate skipped it and the time that saved. Preparing
tasks (indexing) and keeping results is :mod:`lorebase.eval.tasks`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from lorebase.embed.registry import kb_embedders
from lorebase.errors import InvalidInput
from lorebase.eval import metrics
from lorebase.eval.datasets import Question
from lorebase.ingest.report import IngestReport
from lorebase.search.bounds import MAX_QUERY_CHARS, MAX_TOP_K, Mode
from lorebase.search.fusion import DEFAULT_FUSION, FUSIONS, rrf
from lorebase.search.query import Candidate, Hit, SearchResponse

if TYPE_CHECKING:
    from lorebase.app import Lorebase

RESULT_SCHEMA = 2
RANK_DEPTH = 10
"""MRR and nDCG are reported at 10: a search asks for at least this many documents."""
DEFAULT_KS = (10,)
ALL_MODES = (Mode.KEYWORD, Mode.DENSE, Mode.HYBRID)
BASELINES = ("keyword", "dense", "rrf")
"""Each arm alone (its candidates collapsed to documents), and plain document-level RRF."""
Half = Literal["a", "b"]
HALVES: tuple[Half, ...] = ("a", "b")


def query_half(question_id: str) -> Half:
    """The half a question belongs to: the parity of the first byte of the SHA-256 of its id
    (stable across runs, machines and versions). Pure."""
    return HALVES[hashlib.sha256(question_id.encode("utf-8")).digest()[0] % 2]


@dataclass(frozen=True, slots=True)
class EvalConfig:
    """What to measure: modes, the cut-offs of recall and precision, the relevance floor's
    cosine (None: the one the base's own model has in search), the fusion hybrid searches use,
    whether the reranker reorders the candidates, and which half of the questions to ask
    (None: all)."""

    modes: tuple[Mode, ...] = ALL_MODES
    ks: tuple[int, ...] = DEFAULT_KS
    no_answer_threshold: float | None = None
    fusion: str = DEFAULT_FUSION
    rerank: bool = False
    half: Half | None = None

    def __post_init__(self) -> None:
        if self.fusion not in FUSIONS:
            raise InvalidInput(f"fusion must be one of: {', '.join(sorted(FUSIONS))}")
        if not self.modes:
            raise InvalidInput("choose at least one mode")
        object.__setattr__(self, "modes", tuple(dict.fromkeys(Mode(m) for m in self.modes)))
        if not self.ks or not all(1 <= k <= MAX_TOP_K for k in self.ks):
            raise InvalidInput(f"every k must be between 1 and {MAX_TOP_K}")
        object.__setattr__(self, "ks", tuple(sorted(set(self.ks))))
        if self.half is not None and self.half not in HALVES:
            raise InvalidInput("half must be a or b")

    @property
    def top_k(self) -> int:
        """How many documents each question asks for: 10, or the largest k."""
        return max(*self.ks, RANK_DEPTH)


@dataclass(frozen=True, slots=True)
class EvalTask:
    """A question set bound to the knowledge base that answers it."""

    dataset: str
    kind: str  # "beir" or "evals"
    source: str
    kb: str
    questions: tuple[Question, ...]
    document_of: Callable[[str], str]  # a hit's document path -> the id relevance uses
    notes: tuple[str, ...] = ()
    index: IngestReport | None = None


@dataclass(frozen=True, slots=True)
class QuestionOutcome:
    id: str
    answerable: bool
    ranked: tuple[str, ...]  # the hits' documents, best first, each once
    top_score: float | None  # the best dense score among the hits
    latency_ms: float
    metrics: dict[str, float]
    no_answer: bool = False  # the search found nothing relevant
    lost: bool | None = None  # answerable: the floor cut every relevant document of the ten
    rerank: str | None = None  # what the rerank step did (see SearchResponse.rerank)
    rerank_ms: float | None = None  # time the reranker took or was waited for
    baselines: dict[str, dict[str, float]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ModeResult:
    mode: str
    answered_by: str  # the mode the search really ran (keyword when the embedder is down)
    metrics: dict[str, float | None]
    no_answer: dict[str, Any]
    citation_coverage: float | None
    hits: int
    latency_ms: dict[str, float | None]
    warnings: dict[str, int] = field(default_factory=dict)  # questions per warning code
    notes: dict[str, int] = field(default_factory=dict)  # questions per note code
    outcomes: list[QuestionOutcome] = field(default_factory=list)
    rerank: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class EvalResult:
    dataset: str
    kind: str
    source: str
    kb: str
    embedder: str | None
    created_at: float
    questions: int
    unanswerable: int
    documents: int
    config: dict[str, Any]
    modes: list[ModeResult]
    baselines: dict[str, dict[str, float | None]] | None = None
    notes: list[str] = field(default_factory=list)
    index: dict[str, Any] | None = None
    schema: int = RESULT_SCHEMA

    def to_json(self, details: bool = False) -> dict[str, Any]:
        """Plain JSON values; per-question outcomes only with ``details``."""
        out = dataclasses.asdict(self)
        for mode in out["modes"]:
            if details:
                for outcome in mode["outcomes"]:
                    outcome["ranked"] = outcome["ranked"][:RANK_DEPTH]
            else:
                del mode["outcomes"]
        return out

    def mode(self, name: str) -> ModeResult:
        return next(m for m in self.modes if m.mode == name)


# -- running ---------------------------------------------------------------------------------


def run_task(
    lb: Lorebase,
    task: EvalTask,
    config: EvalConfig | None = None,
    on_question: Callable[[str, int, int], None] | None = None,
) -> EvalResult:
    """Ask every question in every mode and measure. ``on_question(mode, done, total)``."""
    config = config or EvalConfig()
    questions = [q for q in task.questions if config.half in (None, query_half(q.id))]
    if not questions:
        raise InvalidInput("the question set is empty" + (" in that half" if config.half else ""))
    texts = [query_text(q.text) for q in questions]
    notes = list(task.notes)
    cut = sum(1 for q, text in zip(questions, texts, strict=True) if text != q.text)
    if cut:
        notes.append(f"{cut} questions were cut to {MAX_QUERY_CHARS} characters")
    kb = lb.kb(task.kb)
    if config.no_answer_threshold is None:  # the floor the base's own model has in search
        answering = kb_embedders(kb).answering
        threshold = lb.embedders.threshold(answering, lb.settings.search.no_answer_threshold)
        config = dataclasses.replace(config, no_answer_threshold=threshold)
    bound = dataclasses.replace(task, questions=tuple(questions))
    paths = {record.id: record.path for record in lb.documents(task.kb)}

    def name(document_id: str) -> str:
        """A document as relevance names it (through its path)."""
        path = paths.get(document_id)
        return task.document_of(path) if path is not None else document_id

    modes = [_run_mode(lb, bound, texts, mode, config, name, on_question) for mode in config.modes]
    hybrid = next((m for m in modes if m.mode == Mode.HYBRID.value), None)
    return EvalResult(
        dataset=task.dataset,
        kind=task.kind,
        source=task.source,
        kb=task.kb,
        # The identity its vectors were made with (the base's own embedder's).
        embedder=kb.identity_key,
        created_at=time.time(),
        questions=len(questions),
        unanswerable=sum(1 for q in questions if not q.answerable),
        documents=kb.indexed,
        config={
            "modes": [m.value for m in config.modes],
            "ks": list(config.ks),
            "top_k": config.top_k,
            "no_answer_threshold": config.no_answer_threshold,
            "fusion": config.fusion,
            "rerank": config.rerank,
            "half": config.half,
        },
        modes=modes,
        baselines=_baselines(hybrid, config.ks) if hybrid is not None else None,
        notes=notes,
        index=_index_summary(task.index),
    )


def _run_mode(
    lb: Lorebase,
    task: EvalTask,
    texts: list[str],
    mode: Mode,
    config: EvalConfig,
    name: Callable[[str], str],
    on_question: Callable[[str, int, int], None] | None,
) -> ModeResult:
    def search(text: str) -> SearchResponse:
        return lb.search(
            text,
            kb=task.kb,
            top_k=config.top_k,
            mode=mode,
            fusion=config.fusion,
            rerank=config.rerank,
            no_answer_threshold=config.no_answer_threshold,
            explain=True,
        )

    search(texts[0])  # untimed: it loads the model and the vector matrix
    outcomes: list[QuestionOutcome] = []
    answered_by: set[str] = set()
    warnings: Counter[str] = Counter()
    notes: Counter[str] = Counter()
    covered: list[bool] = []
    for done, (question, text) in enumerate(zip(task.questions, texts, strict=True), start=1):
        started = time.perf_counter()
        response = search(text)
        latency = (time.perf_counter() - started) * 1000
        answered_by.add(response.mode.value)
        warnings.update({w.split(":", 1)[0] for w in response.warnings})
        notes.update({n.split(":", 1)[0] for n in response.notes})
        covered += [_cited(hit) for hit in response.hits]
        outcomes.append(_outcome(task, question, response, latency, config.ks, name))
        if on_question is not None:
            on_question(mode.value, done, len(task.questions))
    by = Mode.KEYWORD.value if answered_by == {Mode.KEYWORD.value} else mode.value
    assert config.no_answer_threshold is not None  # set by run_task
    return ModeResult(
        mode=mode.value,
        answered_by=by,
        metrics=_averages(outcomes, config.ks),
        no_answer=no_answer_summary(outcomes, config.no_answer_threshold),
        citation_coverage=metrics.mean(covered),
        hits=len(covered),
        latency_ms=metrics.latency_summary([o.latency_ms for o in outcomes]),
        warnings=dict(sorted(warnings.items())),
        notes=dict(sorted(notes.items())),
        outcomes=outcomes,
        rerank=rerank_summary(outcomes) if config.rerank else None,
    )


def _outcome(
    task: EvalTask,
    question: Question,
    response: SearchResponse,
    latency: float,
    ks: Sequence[int],
    name: Callable[[str], str],
) -> QuestionOutcome:
    ranked = tuple(metrics.distinct(task.document_of(h.provenance.path) for h in response.hits))
    explanation = response.explanation
    assert explanation is not None  # asked for
    lost: bool | None = None
    scores: dict[str, float] = {}
    baselines: dict[str, dict[str, float]] = {}
    if question.answerable:
        scores = question_metrics(ranked, question, ks)
        unfloored = documents_of(explanation.fused, name)[:RANK_DEPTH]
        wanted = metrics.relevant(question.relevance)
        lost = bool(wanted.intersection(unfloored)) and not wanted.intersection(ranked[:RANK_DEPTH])
        if response.mode is Mode.HYBRID:
            baselines = {
                label: question_metrics(found, question, ks)
                for label, found in baseline_rankings(
                    documents_of(explanation.keyword, name), documents_of(explanation.dense, name)
                ).items()
            }
    return QuestionOutcome(
        question.id,
        question.answerable,
        ranked,
        _top_dense(response.hits),
        latency,
        scores,
        no_answer=response.no_answer,
        lost=lost,
        rerank=response.rerank,
        rerank_ms=response.timings_ms.get("rerank"),
        baselines=baselines,
    )


def baseline_rankings(keyword: Sequence[str], dense: Sequence[str]) -> dict[str, list[str]]:
    """The baselines' document rankings from each arm's documents (best first, each once):
    each arm alone, and plain RRF (k = 60) of the two. Pure."""
    fused = rrf([[(d, 0.0) for d in keyword], [(d, 0.0) for d in dense]])
    return {"keyword": list(keyword), "dense": list(dense), "rrf": [d for d, _ in fused]}


def documents_of(candidates: Sequence[Candidate], name: Callable[[str], str]) -> list[str]:
    """The documents of ranked candidates, where each first appears, named as relevance
    names them."""
    return metrics.distinct(name(candidate.document_id) for candidate in candidates)


def metric_names(ks: Sequence[int]) -> list[str]:
    """The metric keys a result has, in display order."""
    return [
        *(f"recall@{k}" for k in ks),
        *(f"precision@{k}" for k in ks),
        f"mrr@{RANK_DEPTH}",
        f"ndcg@{RANK_DEPTH}",
    ]


def question_metrics(
    ranked: Sequence[str], question: Question, ks: Sequence[int]
) -> dict[str, float]:
    relevance = question.relevance
    out = {f"recall@{k}": metrics.recall_at_k(ranked, relevance, k) for k in ks}
    out |= {f"precision@{k}": metrics.precision_at_k(ranked, relevance, k) for k in ks}
    out[f"mrr@{RANK_DEPTH}"] = metrics.reciprocal_rank(ranked, relevance, RANK_DEPTH)
    out[f"ndcg@{RANK_DEPTH}"] = metrics.ndcg_at_k(ranked, relevance, RANK_DEPTH)
    return out


def query_text(text: str, limit: int = MAX_QUERY_CHARS) -> str:
    """The question as a search takes it: at most ``limit`` characters, cut at a space."""
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = text[:limit]
    return cut.rsplit(None, 1)[0] if " " in cut else cut


def _averages(outcomes: list[QuestionOutcome], ks: Sequence[int]) -> dict[str, float | None]:
    answerable = [o for o in outcomes if o.answerable]
    return {name: metrics.mean(o.metrics[name] for o in answerable) for name in metric_names(ks)}


def _baselines(hybrid: ModeResult, ks: Sequence[int]) -> dict[str, dict[str, float | None]]:
    answerable = [o for o in hybrid.outcomes if o.answerable and o.baselines]
    return {
        label: {
            name: metrics.mean(o.baselines[label][name] for o in answerable)
            for name in metric_names(ks)
        }
        for label in BASELINES
    }


def no_answer_summary(outcomes: Sequence[QuestionOutcome], threshold: float) -> dict[str, Any]:
    """The search's own "nothing relevant found" over the questions: the share of unanswerable
    ones it said it to (``no_answer_rate``, the higher the better), the share of answerable ones
    that lost every relevant document of their first ten to the floor (``lost_rate``, the
    lower the better) and the share of answerable ones it said it to (``turned_away_rate``)."""
    unanswerable = [o for o in outcomes if not o.answerable]
    answerable = [o for o in outcomes if o.answerable]
    return {
        "threshold": threshold,
        "unanswerable": len(unanswerable),
        "no_answer_rate": metrics.mean(float(o.no_answer) for o in unanswerable),
        "answerable": len(answerable),
        "lost_rate": metrics.mean(float(bool(o.lost)) for o in answerable),
        "turned_away_rate": metrics.mean(float(o.no_answer) for o in answerable),
    }


def rerank_summary(outcomes: Sequence[QuestionOutcome]) -> dict[str, Any]:
    """How the rerank step went over the questions: how many were reranked, skipped by the
    gate, timed out or failed; the reranker's time spent, and what it would have been had every
    question been reranked (each skipped one at the mean time of the reranked ones)."""
    statuses = Counter(o.rerank for o in outcomes)
    spent = sum(o.rerank_ms or 0.0 for o in outcomes)
    mean = metrics.mean(
        o.rerank_ms for o in outcomes if o.rerank == "reranked" and o.rerank_ms is not None
    )
    skipped = statuses["rerank_skipped"]
    every = None if mean is None else spent + mean * skipped
    return {
        "questions": len(outcomes),
        "reranked": statuses["reranked"],
        "skipped": skipped,
        "timeout": statuses["rerank_timeout"],
        "failed": statuses["reranker_unavailable"] + statuses["reranker_refused"],
        "skip_rate": skipped / len(outcomes) if outcomes else None,
        "ms_spent": round(spent, 3),
        "ms_if_every_query_reranked": None if every is None else round(every, 3),
        "ms_saved": None if every is None else round(every - spent, 3),
    }


def _top_dense(hits: Sequence[Hit]) -> float | None:
    dense = [hit.scores["dense"].score for hit in hits if "dense" in hit.scores]
    return max(dense) if dense else None


def _cited(hit: Hit) -> bool:
    where = hit.provenance
    return metrics.citation_complete(
        where.kind, where.path, trail=where.trail, page=where.page, line=where.line
    )


def _index_summary(report: IngestReport | None) -> dict[str, Any] | None:
    if report is None:
        return None
    return {
        "seconds": round(report.seconds, 3),
        "files": report.files,
        "added": report.added,
        "updated": report.updated,
        "unchanged": report.unchanged,
        "failed": len(report.failed),
        "chunks": report.chunks,
        "embedded": report.embedded,
        "reused": report.reused,
    }
