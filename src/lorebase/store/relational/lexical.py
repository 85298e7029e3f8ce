"""The keyword arm, written once: arguments checked, then the backend's keyword engine
(:class:`~.role.KeywordEngine`: Tantivy or FTS5 beside SQLite, PostgreSQL full text) asked
inside one read transaction, told the analyses each base's passages were indexed with (a
question is analysed as each of them: :func:`lorebase.analysis.query_variants`)."""

from __future__ import annotations

from collections.abc import Sequence

from lorebase.store.base import Scored
from lorebase.store.records import document_list, kb_list
from lorebase.store.relational import rows
from lorebase.store.relational.role import RelationalRole


class LexicalMixin(RelationalRole):
    """:class:`~lorebase.store.base.LexicalIndex` over the store's keyword engine."""

    def keyword_search(
        self,
        kb_ids: Sequence[int],
        query: str,
        limit: int,
        document_ids: Sequence[str] | None = None,
    ) -> Scored:
        documents = document_list(document_ids)
        if limit <= 0 or not kb_ids or (documents is not None and not documents):
            return []
        kbs = kb_list(kb_ids)
        with self._read() as conn:
            languages = rows.kb_languages(self._dialect.bind(conn), kbs)
            return self._lexical.search(conn, kbs, query, limit, documents, languages)

    def keyword_ceiling(self, kb_ids: Sequence[int], query: str) -> float:
        if not kb_ids:
            return 0.0
        kbs = kb_list(kb_ids)
        with self._read() as conn:
            languages = rows.kb_languages(self._dialect.bind(conn), kbs)
            return self._lexical.ceiling(conn, kbs, query, languages)

    def lexical_damage(self, kb_ids: Sequence[int]) -> dict[int, str]:
        return self._lexical.damaged(kb_list(kb_ids))
