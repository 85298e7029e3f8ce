"""The keyword arm's engines over one SQLite database, behind one seam.

``tantivy`` (the default) keeps a Tantivy side index per knowledge base
(:mod:`.tantivy_index`); ``fts5`` keeps SQLite's FTS5 index inside the database
(:mod:`.fts`, :mod:`.search`). Measured on the same chunks and queries (bench/README.md,
"Search latency"): Tantivy answers the keyword arm in milliseconds at 100k and 1M chunks where
FTS5 takes hundreds, ranks Cranfield and CISI as well, and costs fewer bytes per chunk; FTS5
needs nothing beside the database file. The engine is chosen when the store opens: the FTS5
index exists exactly while the database uses it (writes maintain it only then), so opening
with the other engine drops or rebuilds it; both are derived from the chunks table.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Protocol

from lorebase.errors import InvalidInput
from lorebase.settings import LEXICAL_ENGINES
from lorebase.store.base import Scored
from lorebase.store.relational.role import KeywordEngine
from lorebase.store.sqlite import fts, search

TANTIVY, FTS5 = LEXICAL_ENGINES
DEFAULT_LEXICAL = TANTIVY

Reader = Callable[[], AbstractContextManager[sqlite3.Connection]]


class LexicalEngine(KeywordEngine, Protocol):
    """BM25 over the chunks of some bases, inside the search's read transaction ``conn`` (a
    SQLite connection), and what an engine that may keep an index beside the database hears
    of."""

    def forget(self, kb_id: int) -> None:
        """A base was deleted (an index kept outside the database lets it go)."""

    def written(self) -> None:
        """A write transaction committed (an index kept outside the database may follow)."""

    def close(self) -> None:
        """The store closes."""


class Fts5Engine:
    """FTS5 inside the database, maintained by the write transactions themselves. Its own
    tokenizer analyses every text as English (Porter stemming over ``unicode61``): the
    languages of a base's passages are not used (see docs/languages.md; Tantivy, the default,
    analyses each passage in its language)."""

    def search(
        self,
        conn: sqlite3.Connection,
        kb_ids: Sequence[int],
        query: str,
        limit: int,
        document_ids: Sequence[str] | None,
        languages: Mapping[int, frozenset[str]],
    ) -> Scored:
        return search.keyword_search(conn, kb_ids, query, limit, document_ids)

    def ceiling(
        self,
        conn: sqlite3.Connection,
        kb_ids: Sequence[int],
        query: str,
        languages: Mapping[int, frozenset[str]],
    ) -> float:
        return search.keyword_ceiling(conn, kb_ids, query)

    def damaged(self, kb_ids: Sequence[int]) -> dict[int, str]:
        """Inside the database, the index is as sound as the file: nothing of its own."""
        return {}

    def forget(self, kb_id: int) -> None:
        """Its rows went in the delete's own transaction."""

    def written(self) -> None:
        """Its rows were written in the transaction itself."""

    def close(self) -> None:
        """Nothing of its own to close."""


def open_engine(
    name: str,
    conn: sqlite3.Connection,
    database: Path | None,
    reader: Reader | None = None,
    *,
    follow: bool = True,
) -> LexicalEngine:
    """The engine called ``name`` over the database ``conn`` is connected to (outside any
    transaction), the database made to keep FTS5 exactly when that engine is FTS5. The
    Tantivy indexes live in ``<database>.lexical/`` (in memory without a file) and, given a
    ``reader`` (read transactions on the database) and ``follow``, catch up in the background
    after writes."""
    if name not in LEXICAL_ENGINES:
        raise InvalidInput(
            f"unknown lexical engine {name!r}; choose one of {', '.join(LEXICAL_ENGINES)}"
        )
    fts.use_fts(conn, keep=name == FTS5)
    if name == FTS5:
        return Fts5Engine()
    from lorebase.store.sqlite.tantivy_index import TantivyIndexes

    folder = None if database is None else database.with_suffix(".lexical")
    return TantivyIndexes(folder, reader, follow=follow)
