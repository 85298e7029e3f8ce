"""Turning ranked chunk ids into hits: their stored text and provenance, and their score and
rank in every step of the search (keyword, dense, fused, rerank)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from lorebase.search.fusion import Arms, Scored
from lorebase.search.query import Candidate, Explanation, Hit, StepScore
from lorebase.store.base import Chunks, StoredChunk


@dataclass(frozen=True, slots=True)
class Steps:
    """The scores a search gave its candidates: each arm's ranking, every candidate's cosine
    (filled in for the keyword arm's), and the fused order after the floor (``fused``: None
    when only one arm ran, which then orders the hits alone)."""

    keyword: Scored
    dense: Scored
    cosines: Mapping[str, float]
    fused: Scored | None
    # Each step's ranking and each item's place in it (from 0): numbers, which the
    # collector does not follow (a search made ~400 tuples here for its ~20 hits).
    _places: tuple[tuple[str, Scored, dict[str, int]], ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        steps = (("keyword", self.keyword), ("dense", self.dense), ("fused", self.fused or []))
        places = tuple((name, ranking, _placed(ranking)) for name, ranking in steps)
        object.__setattr__(self, "_places", places)

    def of(self, item: str) -> dict[str, StepScore]:
        """``item``'s score in every step that saw it; a cosine read for fusion has no dense
        rank."""
        scores: dict[str, StepScore] = {}
        for name, ranking, places in self._places:
            place = places.get(item)
            if place is not None:
                scores[name] = StepScore(score=ranking[place][1], rank=place + 1)
            elif name == "dense" and item in self.cosines:
                scores[name] = StepScore(score=self.cosines[item], rank=None)
        return scores


class Hydrated:
    """Hits read from the store once each, by chunk id (a hit the reranker scored replaces
    the one read)."""

    def __init__(self, store: Chunks, kb_ids: Sequence[int], steps: Steps) -> None:
        self.store = store
        self.kb_ids = list(kb_ids)
        self.steps = steps
        self._hits: dict[str, Hit] = {}

    def by_id(self, ids: Sequence[str]) -> dict[str, Hit]:
        """The hits of ``ids`` (those still in the store), read in one call."""
        missing = [item for item in dict.fromkeys(ids) if item not in self._hits]
        for chunk in self.store.get_chunks(self.kb_ids, missing) if missing else ():
            self._hits[chunk.id] = _hit(chunk, self.steps.of(chunk.id))
        return {item: self._hits[item] for item in ids if item in self._hits}

    def hits(self, ids: Sequence[str]) -> list[Hit]:
        """The hits of ``ids`` in that order."""
        found = self.by_id(ids)
        return [found[item] for item in ids if item in found]

    def adopt(self, hits: Sequence[Hit]) -> None:
        """Keep these hits (rescored) in place of the ones read."""
        self._hits.update((hit.chunk_id, hit) for hit in hits)


def explained(
    arms: Arms, fused: Scored, kept: Scored, document_of: Mapping[str, str]
) -> Explanation:
    """The arms' candidates, the fused order and what the floor kept, each with its document
    (a candidate whose document is unknown — gone since — is left out)."""

    def candidates(ranking: Scored) -> tuple[Candidate, ...]:
        return tuple(
            Candidate(item, document_of[item], score)
            for item, score in ranking
            if item in document_of
        )

    return Explanation(
        keyword=candidates(arms.keyword),
        dense=candidates(arms.dense),
        fused=candidates(fused),
        supported=candidates(kept),
    )


def _placed(ranking: Scored) -> dict[str, int]:
    """Each item's place in ``ranking`` (from 0; its last, were it there twice)."""
    return {item: place for place, (item, _) in enumerate(ranking)}


def _hit(chunk: StoredChunk, scores: dict[str, StepScore]) -> Hit:
    return Hit(
        chunk_id=chunk.id, provenance=chunk.provenance, text=chunk.text, snippet="", scores=scores
    )
