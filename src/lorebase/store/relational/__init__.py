"""The relational store written once: catalogue, documents, uploads, chunk reads, the keyword
and dense arms up to their engines, vector writes and the row helpers they share, over any
database that speaks the small :class:`~.dialect.Dialect` (SQLite and PostgreSQL today),
composed as :class:`~.store.RelationalStore`.

What truly differs between the backends stays behind the two seams that were already there —
the lexical engine (Tantivy or FTS5 beside SQLite; PostgreSQL full text inside it: a
:class:`~.role.KeywordEngine`) and the vector engine (in-memory matrices over SQLite rows;
pgvector) — and a few hooks a backend's role implements (:class:`~.role.RelationalRole`): how
chunks and vectors are written and read back, what a write must tell the indexes kept beside
the rows, what a registered identity needs. A backend's database shares its life cycle
(:class:`~.database.BaseDatabase`).
"""
