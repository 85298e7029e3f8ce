"""One hit per document: a document's best passage stands for it, its other matching passages
come along (as Elasticsearch's field collapsing and Vespa's grouping give them). Pure
functions over ranked chunk ids.

A result list of ten passages from a collection of long documents named about six documents,
the same file three times; collapsed, ten hits are ten documents, each ranked by its best
passage (its other passages do not add to its rank: see :mod:`lorebase.search.fusion`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace

from lorebase.search.query import Hit

PASSAGES_PER_HIT = 3
"""At most this many of a document's other matching passages come with its hit (each costs a
read and a snippet; a result list shows where else a document answers, not all of it)."""


def by_document(order: Iterable[str], document_of: Mapping[str, str]) -> list[list[str]]:
    """The ids grouped by document, groups in the order of their first (best) id, each group
    in the given order. An id whose document is unknown is a group of its own. Pure."""
    groups: dict[str, list[str]] = {}
    for item in order:
        groups.setdefault(document_of.get(item, f"\0{item}"), []).append(item)
    return list(groups.values())


def collapsed(
    groups: Sequence[Sequence[str]],
    hits: Mapping[str, Hit],
    passages: int = PASSAGES_PER_HIT,
) -> list[Hit]:
    """A hit per group: its first passage's, with up to ``passages`` more of the group's
    attached, best first (a passage not in ``hits`` is left out). Pure."""
    out = []
    for group in groups:
        found = [hits[item] for item in group if item in hits]
        if not found:
            continue
        others = tuple(found[1 : passages + 1])
        out.append(replace(found[0], passages=others) if others or found[0].passages else found[0])
    return out


def one_line(hit: Hit) -> str:
    """``hit``'s text with its runs of spaces and line ends made one space: what tells a
    repeated passage. Pure."""
    return " ".join(hit.text.split())


def without_repeats(hits: Sequence[Hit], flat: Callable[[Hit], str] = one_line) -> list[Hit]:
    """Hits whose passage (trail and text on one line: ``flat``) was already shown higher up
    are left out: a copy of a file, boilerplate repeated across documents. Pure when ``flat``
    is."""
    seen: set[tuple[tuple[str, ...], str]] = set()
    return [hit for hit in hits if _first_time(hit, seen, flat)]


def first_hits(
    groups: Sequence[Sequence[str]],
    read: Callable[[Sequence[str]], Mapping[str, Hit]],
    wanted: int,
    deepest: int,
    passages: int = PASSAGES_PER_HIT,
    flat: Callable[[Hit], str] = one_line,
) -> list[Hit]:
    """The first ``wanted`` hits of ``groups`` (as :func:`collapsed` makes them) whose passage
    is not a repeat (as :func:`without_repeats` tells), looking at no group past the
    ``deepest``-th. Hits are read a batch at a time, as many groups as hits are still wanted:
    most searches read ``wanted`` groups once (reading every group a repeat might need cost a
    search twice the reads it shows). ``flat``: a hit's text on one line (a search gives the
    one its snippets keep, not made twice)."""
    kept: list[Hit] = []
    seen: set[tuple[tuple[str, ...], str]] = set()
    start, end = 0, min(len(groups), deepest)
    while len(kept) < wanted and start < end:
        batch = groups[start : min(end, start + wanted - len(kept))]
        start += len(batch)
        found = read([item for group in batch for item in group[: passages + 1]])
        kept += [hit for hit in collapsed(batch, found, passages) if _first_time(hit, seen, flat)]
    return kept[:wanted]


def _first_time(
    hit: Hit, seen: set[tuple[tuple[str, ...], str]], flat: Callable[[Hit], str]
) -> bool:
    """Whether ``hit``'s passage is not in ``seen`` (it is, after)."""
    key = (hit.provenance.trail, flat(hit))
    if key in seen:
        return False
    seen.add(key)
    return True
