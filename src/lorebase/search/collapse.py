"""One hit per document: a document's best passage stands for it, its other matching passages
come along (as Elasticsearch's field collapsing and Vespa's grouping give them). Pure
functions over ranked chunk ids.

A result list of ten passages from a collection of long documents named about six documents,
the same file three times; collapsed, ten hits are ten documents, each ranked by its best
passage (its other passages do not add to its rank: see :mod:`lorebase.search.fusion`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
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
        out.append(replace(found[0], passages=tuple(found[1 : passages + 1])))
    return out


def without_repeats(hits: Sequence[Hit]) -> list[Hit]:
    """Hits whose passage (trail and text) was already shown higher up are left out: a copy
    of a file, boilerplate repeated across documents. Pure."""
    seen: set[tuple[tuple[str, ...], str]] = set()
    kept = []
    for hit in hits:
        key = (hit.provenance.trail, " ".join(hit.text.split()))
        if key not in seen:
            seen.add(key)
            kept.append(hit)
    return kept
