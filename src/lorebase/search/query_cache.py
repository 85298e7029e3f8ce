"""The vectors of recent questions, so that asking again — the page re-runs a search when a
filter chip changes, an agent repeats itself, people page through results — does not embed the
question again. Keyed by the embedding identity and the question's exact text; the least
recently asked go first. Kept in memory only (a question is never written anywhere)."""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

QUESTIONS = 512
"""Vectors kept (384 float32 each with the bundled model: under 1 MB in all)."""


class QueryVectors:
    """A bounded, thread-safe map from (identity key, question) to the question's vector."""

    def __init__(self, size: int = QUESTIONS) -> None:
        self._size = size
        self._held: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self._guard = threading.Lock()

    def get(self, identity: str, question: str) -> np.ndarray | None:
        with self._guard:
            found = self._held.get((identity, question))
            if found is not None:
                self._held.move_to_end((identity, question))
            return found

    def put(self, identity: str, question: str, vector: np.ndarray) -> None:
        if self._size <= 0:
            return
        kept = np.array(vector, copy=True)
        kept.setflags(write=False)  # handed out to every search that asks again
        with self._guard:
            self._held[(identity, question)] = kept
            self._held.move_to_end((identity, question))
            while len(self._held) > self._size:
                self._held.popitem(last=False)
