"""The ``Reranker`` seam: a relevance score for each passage against one query.

An implementation writes one method, :meth:`Reranker.score`. The base class checks what comes
back (one finite score per passage) and names the reranker by its :attr:`model` in step
scores. A cross-encoder reads query and passage together, so it judges relevance better than
either search arm, at a cost per passage: search sends it only the best fused candidates.

A reranker that cannot answer raises :class:`~lorebase.errors.Unavailable`; search then keeps
the fused order and says so in its warnings.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence

from lorebase.errors import Unavailable


class Reranker(ABC):
    """Scores passages for a query; higher is more relevant. Scores compare only within one
    call (different rerankers use different scales)."""

    model: str = "reranker"

    @abstractmethod
    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        """One score per passage, in the order given."""

    def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        """:meth:`score`, checked: as many finite scores as passages."""
        if not passages:
            return []
        scores = [float(s) for s in self.score(query, list(passages))]
        if len(scores) != len(passages) or not all(math.isfinite(s) for s in scores):
            raise Unavailable(
                f"the reranker {self.model} answered {len(scores)} scores for "
                f"{len(passages)} passages (or a score that is not a number)"
            )
        return scores
