"""A deterministic reranker for tests: the share of the query's words a passage contains.

Not a model of relevance worth shipping as a default; it exists so that search with
``rerank=True`` can be tested end to end without a model server, and so that a test can make
the reranker fail on purpose (``unavailable``) or watch what it was sent (``calls``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from lorebase.errors import InvalidInput, Unavailable
from lorebase.rerank.base import Reranker

_WORD = re.compile(r"\w+")


class FakeReranker(Reranker):
    def __init__(
        self, *, unavailable: bool = False, refused: bool = False, model: str = "fake-reranker"
    ) -> None:
        self.model = model
        self.unavailable = unavailable
        self.refused = refused  # answers as a server that refuses the request (HTTP 401)
        self.calls: list[tuple[str, tuple[str, ...]]] = []  # (query, passages) per call

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        if self.unavailable:
            raise Unavailable("the fake reranker is switched off")
        if self.refused:
            raise InvalidInput("the fake reranker refused the request: HTTP 401; check the key")
        self.calls.append((query, tuple(passages)))
        wanted = {word.casefold() for word in _WORD.findall(query)}
        scores = []
        for passage in passages:
            words = {word.casefold() for word in _WORD.findall(passage)}
            shared = len(wanted & words) / len(wanted) if wanted else 0.0
            scores.append(shared - len(passage) * 1e-9)  # ties: the shorter passage first
        return scores
