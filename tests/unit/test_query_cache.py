"""Recent questions' vectors are remembered: asking again embeds nothing; bounded; read-only;
keyed by identity (another model's vector is never handed out)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from lorebase.app import open_lorebase
from lorebase.embed.fake import FakeEmbedder
from lorebase.search.query_cache import QueryVectors
from lorebase.settings import ServeSettings, Settings


def test_a_question_asked_again_is_remembered_under_its_identity_only() -> None:
    cache = QueryVectors(size=2)
    cache.put("model-a", "leave policy", np.ones(3, dtype=np.float32))
    found = cache.get("model-a", "leave policy")
    assert found is not None and found.tolist() == [1.0, 1.0, 1.0]
    assert cache.get("model-b", "leave policy") is None
    assert cache.get("model-a", "Leave policy") is None  # the exact text
    with pytest.raises(ValueError):
        found[0] = 2.0  # handed to every search that asks again: never changed in place


def test_the_least_recently_asked_go_first() -> None:
    cache = QueryVectors(size=2)
    for question in ("a", "b"):
        cache.put("m", question, np.zeros(2, dtype=np.float32))
    assert cache.get("m", "a") is not None  # "a" asked again: "b" is now the oldest
    cache.put("m", "c", np.zeros(2, dtype=np.float32))
    assert cache.get("m", "b") is None and cache.get("m", "a") is not None
    QueryVectors(size=0).put("m", "x", np.zeros(2))  # remembering nothing is allowed


def test_a_search_asked_again_embeds_its_question_once(tmp_path: Path) -> None:
    """The page re-runs a search when a filter chip changes: the question is not embedded
    again, and the hits are the same."""
    asked: list[str] = []

    class Counting(FakeEmbedder):
        def embed_query(self, text: str) -> np.ndarray:
            asked.append(text)
            return super().embed_query(text)

    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text("# Herons\n\nThe grey heron hunts fish at dawn.\n")
    settings = Settings(data_dir=tmp_path / "data", serve=ServeSettings(watch=False, workers=1))
    with open_lorebase(settings=settings, embedder=Counting()) as lb:
        lb.add([folder], kb="notes")
        first = lb.search("heron at dawn", kb="notes").hits
        again = lb.search("heron at dawn", kb="notes", top_k=3).hits
        lb.search("fish", kb="notes")
    assert asked == ["heron at dawn", "fish"]
    assert [h.chunk_id for h in first][:1] == [h.chunk_id for h in again][:1]
