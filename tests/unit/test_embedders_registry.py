"""The named embedders' registry (built once, reachability remembered, a failure remembered a
moment) and the pure merge of dense rankings made by different models."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lorebase.embed.base import Embedder
from lorebase.embed.fake import FakeEmbedder
from lorebase.embed.http import HttpEmbedder
from lorebase.embed.registry import Embedders, kb_embedders, public_url
from lorebase.errors import NotFound
from lorebase.search.floor import bar, merge_dense, supported
from lorebase.search.fusion import Arms, convex
from lorebase.settings import ChunkSettings
from lorebase.settings.embedders import BUNDLED, EmbedderConfig
from lorebase.store.base import KnowledgeBase
from lorebase.store.states import Scope


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def registry(clock: Clock | None = None) -> tuple[Embedders, list[str]]:
    built: list[str] = []

    def build(config: EmbedderConfig, cache: Path) -> Embedder:
        built.append(config.name)
        assert config.dimensions is not None
        return FakeEmbedder(config.dimensions, model=config.name)

    configs = [
        EmbedderConfig("small", kind="fake", dimensions=8),
        EmbedderConfig("wide", kind="fake", dimensions=16, no_answer_threshold=0.6),
    ]
    default = FakeEmbedder(4)
    embedders = Embedders(
        configs, Path("/nowhere"), default=default, build=build, clock=clock or Clock()
    )
    return embedders, built


def test_each_embedder_is_built_once_on_first_use_and_bundled_is_always_named() -> None:
    embedders, built = registry()
    assert embedders.names() == [BUNDLED, "small", "wide"]
    assert built == []
    first = embedders.get("small")
    assert embedders.get("small") is first and built == ["small"]
    assert embedders.get(None) is embedders.default
    with pytest.raises(NotFound, match="lorebase embedders") as refused:
        embedders.get("nope")
    assert "small" in str(refused.value)  # the message lists the names there are


def test_thresholds_are_each_models_own_or_the_search_settings() -> None:
    embedders, _ = registry()
    assert embedders.threshold("wide", 0.35) == 0.6
    assert embedders.threshold("small", 0.35) == 0.35
    assert embedders.threshold(None, 0.35) == 0.35


def test_reachability_is_remembered_and_a_failure_is_known_for_a_moment() -> None:
    clock = Clock()
    embedders, _ = registry(clock)
    small = embedders.get("small")
    assert isinstance(small, FakeEmbedder)
    assert embedders.reachability("small").reachable
    small.unavailable = True
    assert embedders.reachability("small").reachable  # remembered
    clock.now += 31
    found = embedders.reachability("small")
    assert not found.reachable and "unavailable" in (found.detail or "")
    assert embedders.known_down("small") is not None
    clock.now += 6
    assert embedders.known_down("small") is None  # tried again after a moment
    embedders.mark_unreachable("wide", "embedding server at 127.0.0.1:9 did not answer")
    assert embedders.known_down("wide") is not None
    assert embedders.reachability("wide", max_age=30).detail == (
        "embedding server at 127.0.0.1:9 did not answer"
    )


def test_a_base_answers_with_its_embedder_and_indexes_with_its_target() -> None:
    kb = KnowledgeBase(1, "docs", "", Scope.GLOBAL, None, ChunkSettings(), None, 0.0)
    assert kb_embedders(kb) == kb_embedders(kb)  # pure
    assert (kb_embedders(kb).answering, kb_embedders(kb).indexing) == (None, None)
    moving = KnowledgeBase(
        1, "docs", "", Scope.GLOBAL, None, ChunkSettings(), None, 0.0,
        embedder="small", embedder_next="wide",
    )  # fmt: skip
    assert (kb_embedders(moving).answering, kb_embedders(moving).indexing) == ("small", "wide")


def test_public_urls_carry_no_credentials() -> None:
    assert public_url("http://user:secret@10.0.0.5:8080/v1?key=1") == "http://10.0.0.5:8080/v1"
    assert public_url(None) is None


# -- merging the rankings of several models ------------------------------------------------------
ranking = st.lists(st.floats(-1, 1, allow_nan=False), max_size=12)


@given(st.lists(st.tuples(ranking, st.floats(-1, 1, allow_nan=False)), max_size=4))
def test_merge_takes_every_model_rank_by_rank_keeping_each_ones_order_and_cosines(
    groups: list[tuple[list[float], float]],
) -> None:
    rankings = [
        ([(f"g{g}c{i}", score) for i, score in enumerate(sorted(scores, reverse=True))], floor)
        for g, (scores, floor) in enumerate(groups)
    ]
    merged, thresholds = merge_dense(rankings)
    everything = [pair for found, _ in rankings for pair in found]
    assert sorted(merged) == sorted(everything)  # each once, with its own cosine
    for g, (found, floor) in enumerate(rankings):
        own = [item for item, _ in merged if item.startswith(f"g{g}c")]
        assert own == [item for item, _ in found]  # each model's order kept
        assert all(thresholds[item] == floor for item, _ in found)
    # Rank by rank: nothing at rank r + 1 of one model comes before rank r of another.
    rank = {item: i for found, _ in rankings for i, (item, _) in enumerate(found)}
    positions = [rank[item] for item, _ in merged]
    assert positions == sorted(positions)


def test_within_a_rank_the_one_furthest_over_its_own_floor_comes_first() -> None:
    low_floor = ([("a1", 0.40), ("a2", 0.30)], 0.20)  # 0.20 over its floor
    high_floor = ([("b1", 0.70), ("b2", 0.65)], 0.60)  # 0.10 over its floor
    merged, _ = merge_dense([high_floor, low_floor])
    assert [item for item, _ in merged] == ["a1", "b1", "a2", "b2"]


def test_the_floor_holds_each_candidate_to_its_own_models_threshold() -> None:
    dense, thresholds = merge_dense([([("a", 0.5), ("b", 0.3)], 0.4), ([("c", 0.3)], 0.2)])
    cosines = dict(dense)
    assert [item for item, _ in supported(dense, {}, None, cosines, thresholds)] == ["a", "c"]
    assert bar(thresholds, "unknown") == float("inf")
    keyword = [("b", 3.0)]
    fused = convex(Arms(keyword, dense, {"a": 1.0, "b": 0.6, "c": 0.6}))
    # b is under its model's floor: only its keyword match (all of the ceiling) supports it.
    kept = supported(fused, dict(keyword), 3.0, cosines, thresholds)
    assert [item for item, _ in kept] == ["b", "a", "c"]


def test_a_model_server_embeds_queries_with_a_client_held_to_the_search_deadline() -> None:
    server = EmbedderConfig("remote", url="http://127.0.0.1:9/v1", model="m", dimensions=8)
    embedders = Embedders([server], Path("/nowhere"), query_seconds=0.5)
    indexing, querying = embedders.get("remote"), embedders.for_queries("remote")
    assert isinstance(indexing, HttpEmbedder) and isinstance(querying, HttpEmbedder)
    assert querying is not indexing and querying.identity == indexing.identity
    assert (querying.endpoint.read_timeout, querying.endpoint.max_retries) == (0.5, 1)
    assert indexing.endpoint.read_timeout == 60.0  # a pass waits as configured
    assert embedders.for_queries("remote") is querying  # one client, kept
    local, _ = registry()
    assert local.for_queries("small") is local.get("small")  # a local model: the same one
    embedders.close()
