"""The rerank step of a search: gate, depth and deadline around one :class:`Reranker` call.

:func:`rerank_hits` takes the hydrated candidates (best fused first) and gives them back in the
reranker's order, or in the fused order with the reason it was kept. The reasons are codes, and
each message starts with its code (``reason: text``), as a search's warnings do:

- ``rerank_skipped`` (a note, not a warning): the fused first is clearly ahead
  (:func:`~lorebase.search.gate.clearly_ahead`), or there is nothing to reorder;
- ``rerank_timeout``: the reranker did not answer within the deadline;
- ``reranker_unavailable``: none configured, or it failed;
- ``reranker_refused``: it refused the request (a wrong key, model or URL).

The call runs on a worker thread and the search waits for it at most ``deadline`` seconds, so
a stuck server never holds a search; the late answer is dropped. Messages never quote the
query or a passage.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from concurrent.futures import Executor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, replace
from typing import Final

from lorebase.chunk.base import embed_text
from lorebase.errors import InvalidInput, LorebaseError
from lorebase.rerank.base import Reranker
from lorebase.search.fusion import Scored
from lorebase.search.gate import clearly_ahead
from lorebase.search.query import Hit, RerankStatus, StepScore, elapsed_ms

RERANKED: Final = "reranked"
SKIPPED: Final = "rerank_skipped"
TIMEOUT: Final = "rerank_timeout"
UNAVAILABLE: Final = "reranker_unavailable"
REFUSED: Final = "reranker_refused"
NOT_CONFIGURED = f"{UNAVAILABLE}: no reranker is configured; fused order kept"


@dataclass(frozen=True, slots=True)
class RerankOutcome:
    """The hits in their final order, what the step did (:data:`RERANKED` or a reason code),
    a note or warning (``reason: text``) when it kept the fused order, and the time the
    reranker took or was waited for (None when it was not asked)."""

    hits: list[Hit]
    status: RerankStatus
    message: str | None = None
    ms: float | None = None
    warning: bool = False


def rerank_hits(
    reranker: Reranker,
    pool: Executor,
    deadline: float,
    query: str,
    hits: list[Hit],
    depth: int,
    arms: Mapping[str, Scored],
) -> RerankOutcome:
    """The first ``depth`` hits in the reranker's order, each with its ``rerank`` step score,
    the rest after them in fused order; the fused order with the reason when the gate skips
    the reranker, or it fails, refuses or misses the ``deadline`` (seconds). The reranker
    reads what the embedder read: the passage under its title and headings."""
    if len(hits) < 2:
        return RerankOutcome(hits, SKIPPED, f"{SKIPPED}: fewer than two hits, nothing to reorder")
    if clearly_ahead(hits[0].chunk_id, arms):
        return RerankOutcome(
            hits,
            SKIPPED,
            f"{SKIPPED}: the first hit leads every search arm by a clear margin; fused order kept",
        )
    head, rest = hits[:depth], hits[depth:]
    passages = [embed_text(hit.provenance.title, hit.provenance.trail, hit.text) for hit in head]
    started = time.perf_counter()
    future = pool.submit(reranker.rerank, query, passages)
    try:
        scores = future.result(timeout=deadline)
    except FutureTimeout:
        future.cancel()  # still queued: never sent; already running: its answer is dropped
        return _kept(hits, TIMEOUT, f"the reranker did not answer within {deadline:g} s", started)
    except InvalidInput as error:  # refused: a wrong key, model or URL (content-free text)
        return _kept(hits, REFUSED, str(error), started)
    except LorebaseError:
        return _kept(hits, UNAVAILABLE, "the reranker did not answer", started)
    ms = elapsed_ms(started)
    order = sorted(range(len(head)), key=lambda i: -scores[i])  # stable: fused order on ties
    reranked = [
        replace(head[i], scores={**head[i].scores, "rerank": StepScore(score=scores[i], rank=rank)})
        for rank, i in enumerate(order, start=1)
    ]
    return RerankOutcome(reranked + rest, RERANKED, ms=ms)


def _kept(hits: list[Hit], status: RerankStatus, why: str, started: float) -> RerankOutcome:
    return RerankOutcome(
        hits, status, f"{status}: {why}; fused order kept", ms=elapsed_ms(started), warning=True
    )
