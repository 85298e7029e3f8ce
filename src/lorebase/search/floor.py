"""The relevance floor: a hit that neither arm supports is not an answer.

The keyword arm runs an OR query, so a chunk in its list matches at least one query term: that
is support. The dense arm returns its nearest chunks whatever their score (in a small base,
every chunk), so a dense hit is support only at a cosine of at least the no-answer threshold
(:data:`~lorebase.settings.DEFAULT_NO_ANSWER_THRESHOLD`, the score off-topic questions stay
under). A fused candidate with neither is cut. Keyword mode has nothing to cut; dense mode
keeps what clears the threshold. A search left with nothing says ``no_answer``.

The same support decides what hybrid fuses (:func:`fuse_supported`): a dense rank under the
threshold is not evidence, so it no longer lifts a chunk the keyword arm matched by one word
of the question above the dense arm's own answer (in a small base the dense arm returns every
chunk, and consensus made "I lost my credentials" answer with the lost-badge page).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from lorebase.search.fusion import Fusion, Scored

NO_FLOOR = float("-inf")
"""A threshold that keeps every hit (to measure ranking without the floor)."""

Threshold = float | Mapping[str, float]
"""One cosine for every dense candidate, or one per candidate: bases embedded with different
models searched together, each model's candidates held to its own threshold (cosines of two
models are not on one scale)."""


def bar(threshold: Threshold, item: str) -> float:
    """The cosine ``item`` must reach (a candidate missing from a mapping never does). Pure."""
    if isinstance(threshold, Mapping):
        return threshold.get(item, float("inf"))
    return threshold


def merge_dense(rankings: Sequence[tuple[Scored, float]]) -> tuple[Scored, dict[str, float]]:
    """One dense ranking from the rankings of several embedding models (each with its own
    threshold), and the threshold of each candidate. The rankings hold different chunks (a
    base is embedded by one model) and their cosines are not comparable: candidates are taken
    rank by rank — every model's first, then every model's second — and within a rank by how
    far each clears its own model's threshold. Each keeps its own cosine. Pure."""
    thresholds: dict[str, float] = {}
    keyed = []
    for group, (ranking, threshold) in enumerate(rankings):
        for rank, (item, score) in enumerate(ranking):
            if item in thresholds:
                continue
            thresholds[item] = threshold
            keyed.append(((rank, -(score - threshold), group), item, score))
    keyed.sort(key=lambda entry: entry[0])
    return [(item, score) for _, item, score in keyed], thresholds


def is_supported(keyword_found: bool, dense: float | None, threshold: float) -> bool:
    """Whether a hit is an answer: the keyword arm found it, or its dense score is at least
    ``threshold``."""
    return keyword_found or (dense is not None and dense >= threshold)


def supported(fused: Scored, arms: Mapping[str, Scored], threshold: Threshold) -> Scored:
    """The candidates of ``fused`` that the keyword arm found or whose dense score is at least
    ``threshold`` (its own, with one per candidate), in their order. Without a dense arm every
    candidate came from the keyword arm, so nothing is cut."""
    found = {item for item, _ in arms.get("keyword", ())}
    dense = dict(arms.get("dense", ()))
    return [
        (item, score)
        for item, score in fused
        if is_supported(item in found, dense.get(item), bar(threshold, item))
    ]


def fuse_supported(fusion: Fusion, arms: Mapping[str, Scored], threshold: Threshold) -> Scored:
    """Hybrid's fused list: ``fusion`` over the dense arm's supported candidates (cosine at
    least ``threshold``, each its own with several models; in their order) and the
    keyword arm, the dense arm first so an exact tie goes to it (its candidates passed a
    calibrated bar, a keyword candidate may match one word of many). The dense arm's other
    candidates follow in its order with fused score 0: no arm supports them, so the floor cuts
    them, and a search without the floor (``NO_FLOOR``) fuses every dense rank. Pure."""
    dense = list(arms.get("dense", ()))
    strong = [(item, score) for item, score in dense if score >= bar(threshold, item)]
    rankings = [strong] if "dense" in arms else []
    if "keyword" in arms:
        rankings.append(list(arms["keyword"]))
    fused = fusion(rankings)
    seen = {item for item, _ in fused}
    return fused + [(item, 0.0) for item, score in dense if item not in seen]
