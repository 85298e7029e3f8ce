""":class:`~lorebase.store.maintenance.Maintenance` of the shared store: PostgreSQL keeps its
own files sound (its WAL, checksums, autovacuum), so lorebase checks what is its own.

- **check**: the database answers; the rows both backends check alike
  (:mod:`lorebase.store.relational.maintenance`: chunks against documents, vectors against
  their identity's count and dimension); each base's keyword statistics (a document's token
  count against its chunks' lexemes); lorebase's indexes valid (an index a failed ``CREATE
  INDEX CONCURRENTLY`` or a crash left invalid) and each identity's HNSW index present.
- **repair**: ``REINDEX`` of the invalid ones and the missing HNSW indexes made; nothing else
  is derived outside the rows.
- **reclaimable**: an estimate from the statistics (dead rows' share of each table's size);
  autovacuum makes that space reusable on its own.
- **vacuum**: a plain ``VACUUM (ANALYZE)`` of lorebase's tables (no lock that stops readers
  or writers), with the advice for giving space back to the disk.
- **backup**: refused, saying what ``pg_dump`` needs (:data:`BACKUP_ADVICE`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from lorebase.errors import Unsupported
from lorebase.store.maintenance import Area, Compaction, Finding, Reclaimable, Snapshot, listed
from lorebase.store.postgres import dense
from lorebase.store.postgres.database import PostgresDatabase
from lorebase.store.relational.dialect import Bound
from lorebase.store.relational.maintenance import MaintenanceChecks

BACKUP_ADVICE = (
    "a PostgreSQL store is backed up with PostgreSQL's own tools, not `lorebase backup`: "
    '`pg_dump --format=custom --file lorebase.dump "$LOREBASE_STORE"` dumps everything '
    "lorebase keeps there (bases, documents, chunks, vectors, accounts, the sealed originals "
    "of uploads, the job queue); `pg_restore --dbname URL lorebase.dump` puts it back into a "
    "database whose server has the pgvector (`vector`) and `unaccent` extensions available. "
    "Beside the dump keep LOREBASE_DATA_KEY (without it the uploads' originals and names "
    "cannot be opened; it is not in the dump) and each machine's embedders.toml, if any"
)
RECLAIM_NOTE = (
    "an estimate from PostgreSQL's statistics; autovacuum makes this space reusable on its "
    "own, and VACUUM FULL or pg_repack gives it back to the disk"
)
VACUUM_ADVICE = (
    "plain VACUUM makes dead rows' space reusable but rarely shrinks the files; to give it "
    "back to the disk run `VACUUM FULL` (it locks each table while it rewrites it) or "
    "pg_repack (online) at a quiet hour"
)
_OWN_TABLES_SQL = (
    "SELECT relid, relname, n_live_tup, n_dead_tup, pg_total_relation_size(relid) "
    "FROM pg_stat_user_tables WHERE schemaname = current_schema()"
)
_INVALID_INDEXES_SQL = (
    "SELECT c.relname FROM pg_index AS i JOIN pg_class AS c ON c.oid = i.indexrelid "
    "JOIN pg_namespace AS n ON n.oid = c.relnamespace "
    "WHERE n.nspname = current_schema() AND NOT i.indisvalid ORDER BY c.relname"
)
_INDEX_NAMES_SQL = (
    "SELECT c.relname FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace "
    "WHERE n.nspname = current_schema() AND c.relkind = 'i'"
)
_TOKENS_SQL = (
    "SELECT d.id FROM documents AS d LEFT JOIN chunks AS c ON c.document_id = d.id "
    "WHERE d.kb_id = ? GROUP BY d.id, d.lexical_tokens "
    "HAVING d.lexical_tokens != coalesce(sum(c.lexical_length), 0)"
)
_BASE_IDENTITIES_SQL = (
    "SELECT DISTINCT v.kb_id, v.identity_id, i.dim FROM vectors AS v "
    "JOIN identities AS i ON i.id = v.identity_id"
)


class PostgresMaintenance(MaintenanceChecks):
    """What lorebase checks and mends of its own in the shared database (see the module's
    doc); the server keeps its files."""

    _db: PostgresDatabase
    _VECTOR_OF_CHUNK = "v.chunk_seq = c.seq"

    _VECTOR_LENGTH = "vector_dims(v.vector)"

    # -- check: the keyword statistics and the indexes ------------------------------------
    def _check_indexes(self, tx: Bound, kb_ids: list[int], sample: int) -> list[Finding]:
        return self._check_tokens(tx, kb_ids) + self._index_findings(tx, kb_ids)

    @staticmethod
    def _check_tokens(tx: Bound, kb_ids: list[int]) -> list[Finding]:
        off = {kb_id: [str(row[0]) for row in tx.all(_TOKENS_SQL, (kb_id,))] for kb_id in kb_ids}
        return [
            Finding(
                Area.KEYWORD_INDEX,
                f"{len(ids)} document(s) record another token count than their chunks' "
                f"lexemes hold (BM25 length statistics): {listed(ids)}; read them "
                "again (`lorebase sync --full`; an upload: reindex it)",
                kb_id,
                ids[0],
            )
            for kb_id, ids in off.items()
            if ids
        ]

    def _index_findings(self, tx: Bound, kb_ids: list[int]) -> list[Finding]:
        invalid = [
            Finding(_area_of(name), f"the index {name} is invalid (a build cut short)")
            for (name,) in tx.all(_INVALID_INDEXES_SQL)
        ]
        present = {str(row[0]) for row in tx.all(_INDEX_NAMES_SQL)}
        missing = [
            (int(kb_id), identity_id)
            for kb_id, identity_id, dim in tx.all(_BASE_IDENTITIES_SQL)
            if int(kb_id) in kb_ids
            and dense.create_index_sql(identity_id, dim) is not None
            and dense.index_name(identity_id) not in present
        ]
        return [replace(f, repairable=True) for f in invalid] + [
            Finding(
                Area.VECTOR_INDEX,
                f"the HNSW index of identity {i} ({dense.index_name(i)}) is missing",
                kb_id,
                repairable=True,
            )
            for kb_id, i in missing
        ]

    # -- repair ---------------------------------------------------------------------------
    def repair(self, kb_ids: Sequence[int]) -> list[int]:
        """``REINDEX`` of lorebase's invalid indexes and the missing HNSW indexes made, while
        readers and writers carry on (``CONCURRENTLY``); the bases whose indexes those were
        (every base of ``kb_ids`` for an index over all chunks)."""
        with self._reading() as tx:
            invalid = [str(row[0]) for row in tx.all(_INVALID_INDEXES_SQL)]
            present = {str(row[0]) for row in tx.all(_INDEX_NAMES_SQL)}
            identities = [(int(k), int(i), int(d)) for k, i, d in tx.all(_BASE_IDENTITIES_SQL)]
        repaired: set[int] = set()
        with self._db.connection() as conn:
            for name in invalid:
                conn.execute(f'REINDEX INDEX CONCURRENTLY "{name}"')
                repaired.update(
                    kb_ids
                    if not name.startswith("vectors_hnsw_")
                    else [k for k, i, _ in identities if dense.index_name(i) == name]
                )
            for kb_id, identity_id, dim in identities:
                statement = dense.create_index_sql(identity_id, dim)
                if statement is not None and dense.index_name(identity_id) not in present:
                    conn.execute(statement)
                    present.add(dense.index_name(identity_id))
                    repaired.add(kb_id)
        return sorted(k for k in repaired if k in set(kb_ids))

    # -- space ----------------------------------------------------------------------------
    def reclaimable(self) -> Reclaimable:
        with self._reading() as tx:
            tables = tx.all(_OWN_TABLES_SQL)
        dead = 0.0
        for _, _, live, dead_rows, size in tables:
            rows = int(live or 0) + int(dead_rows or 0)
            if rows and dead_rows:
                dead += int(size) * int(dead_rows) / rows
        return Reclaimable(database_bytes=int(dead), estimated=True, note=RECLAIM_NOTE)

    def vacuum(self) -> Compaction:
        before = self._table_bytes()
        with self._reading() as tx:
            names = [str(row[1]) for row in tx.all(_OWN_TABLES_SQL)]
        with self._db.connection() as conn:
            for name in sorted(names):
                conn.execute(f'VACUUM (ANALYZE) "{name}"')
        steps = (f"VACUUM (ANALYZE) of {len(names)} table(s)",)
        return Compaction(before, self._table_bytes(), steps, VACUUM_ADVICE)

    def _table_bytes(self) -> int:
        with self._reading() as tx:
            return sum(int(row[4]) for row in tx.all(_OWN_TABLES_SQL))

    def disk_bytes(self) -> int | None:
        """Kept by the database server."""
        return None

    def backup(self, folder: Path, *, indexes: bool = True) -> Snapshot:
        raise Unsupported(BACKUP_ADVICE)


def _area_of(index: str) -> Area:
    if index.startswith("vectors_hnsw_"):
        return Area.VECTOR_INDEX
    if index == "chunks_lexemes":
        return Area.KEYWORD_INDEX
    return Area.DATABASE
