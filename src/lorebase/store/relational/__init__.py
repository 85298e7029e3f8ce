"""The relational store written once: catalogue, documents, uploads and the row helpers they
share, over any database that speaks the small :class:`~.dialect.Dialect` (SQLite and
PostgreSQL today).

What truly differs between the backends stays behind the two seams that were already there —
the lexical engine (Tantivy or FTS5 beside SQLite; PostgreSQL full text inside it) and the
vector engine (in-memory matrices over SQLite rows; pgvector) — and a few hooks a backend's
role implements (:class:`~.role.RelationalRole`): how chunks and vectors are written, what a
write must tell the indexes kept beside the rows, how an identity is registered.
"""
