"""What a document says about itself — front matter, document properties — as the metadata
a document keeps (:attr:`lorebase.types.Extracted.metadata`), which searches filter on
(:mod:`lorebase.fields`).

:func:`flattened` turns a parsed front matter (YAML, TOML, MultiMarkdown) into flat keys:
a nested mapping's keys joined with ``.`` (``review.owner``), a list of plain values kept as a
list, dates as ISO text, anything else (a list of mappings, binary) left out. The names people
use for the same thing are made one (:data:`ALIASES`: ``authors`` is ``author``, ``tag`` and
``categories`` are ``tags``). :func:`properties` does the same for the core properties of
office and PDF files (author, title, created, modified, subject, keywords). Pure.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from typing import Any

from lorebase.types import MetadataValue

ALIASES = {
    "authors": "author",
    "creator": "author",
    "creators": "author",
    "tag": "tags",
    "categories": "tags",
    "category": "tags",
    "keywords": "tags",
    "published": "date",
    "pubdate": "date",
    "publish_date": "date",
    "publishdate": "date",
    "created_at": "created",
    "creation_date": "created",
    "creationdate": "created",
    "moddate": "modified",
    "modified_at": "modified",
    "last_modified": "modified",
    "lastmod": "modified",
    "updated": "modified",
}
"""Other names of a field, and the one lorebase keeps."""
MAX_DEPTH = 3
MAX_ITEMS = 64
MAX_VISITED = 512
"""Values looked at in all (front matter may nest and repeat itself through YAML aliases)."""


def flattened(meta: Any) -> dict[str, MetadataValue]:
    """A parsed front matter as flat metadata (see the module's doc); not a mapping: none."""
    found: dict[str, list[str]] = {}
    if isinstance(meta, Mapping):
        _flatten(meta, "", found, 0, [MAX_VISITED])
    return {key: values[0] if len(values) == 1 else tuple(values) for key, values in found.items()}


def _flatten(
    meta: Mapping[Any, Any],
    prefix: str,
    found: dict[str, list[str]],
    depth: int,
    budget: list[int],
) -> None:
    for raw_key, value in list(meta.items())[:MAX_ITEMS]:
        budget[0] -= 1
        if budget[0] < 0:
            return
        key = " ".join(str(raw_key).split()).lower()
        if not key:
            continue
        name = f"{prefix}{ALIASES.get(key, key) if not prefix else key}"
        if isinstance(value, Mapping):
            if depth < MAX_DEPTH:
                _flatten(value, f"{name}.", found, depth + 1, budget)
            continue
        items = list(value[:MAX_ITEMS]) if isinstance(value, list | tuple) else [value]
        budget[0] -= len(items)
        values = [text for item in items if (text := _plain(item, name)) is not None]
        if name == "tags":
            values = [part for v in values for part in _split_tags(v)]
        if values:
            bucket = found.setdefault(name, [])
            bucket.extend(v for v in values if v not in bucket)


def _plain(value: Any, name: str) -> str | None:
    """A plain value as text; None for what is not one (a mapping, bytes, nothing)."""
    if value is None or isinstance(value, bytes | bytearray | Mapping | list | tuple):
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    text = " ".join(str(value).split())
    return text or None


def _split_tags(value: str) -> list[str]:
    """``"policy, hr"`` (one string listing tags, as keywords properties do) as two tags."""
    separator = ";" if ";" in value else ","
    return [part.strip() for part in value.split(separator) if part.strip()]


def properties(pairs: Iterable[tuple[str, Any]]) -> dict[str, MetadataValue]:
    """Core properties (``author``, ``title``, ``created``…, each as named by the format) as
    metadata: empty ones left out, names made one by :data:`ALIASES`."""
    return flattened({name: value for name, value in pairs if value not in (None, "")})
