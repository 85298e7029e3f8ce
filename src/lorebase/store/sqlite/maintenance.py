""":class:`~lorebase.store.maintenance.Maintenance` of the embedded store: one SQLite file and
the indexes derived from it beside it (Tantivy's ``<db>.lexical/``, the ANN graphs'
``<db>.ann/``).

- **check**: ``PRAGMA integrity_check`` on a read connection, the rows both backends check
  alike (:mod:`lorebase.store.relational.maintenance`), every compressed chunk text
  decompressed (a damaged one names its document), each base's keyword index
  (:meth:`TantivyIndexes.verify`: its files' checksums read without opening it, its document
  count, a sample of terms; FTS5's own integrity check) and its ANN graphs (their metadata's
  dimension against the identity's, their count against the stored vectors when they reflect
  the base's generation). A database that cannot be read gives a finding, never an exception.
- **repair**: the keyword index of each base rebuilt from the chunks, its ANN graphs removed
  (rebuilt from the stored vectors on the next load) and its in-memory dense indexes dropped.
- **vacuum**: the chunk texts an older lorebase stored uncompressed stored as this one does
  (:func:`~lorebase.store.document_text.stored_chunk_text`; the keyword indexes read the same
  text, so they stay as they are), ``VACUUM``, a checkpoint that truncates the WAL, and the
  keyword indexes holding deleted chunks rebuilt (this binding of Tantivy merges only by its
  own policy).
- **backup**: first the keyword indexes (:meth:`TantivyIndexes.snapshot`: their record is then
  at or behind the database's copy, and the first search after a restore catches up the
  difference), then the database through SQLite's online backup API (one step, in one read
  transaction: writers carry on in the WAL meanwhile), then the ANN graphs (caches: any saved
  graph is brought to the rows it is loaded with).
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lorebase.errors import DamagedDatabase
from lorebase.private import private_file, private_folder
from lorebase.store.document_text import stored_chunk_text
from lorebase.store.maintenance import Area, Compaction, Finding, Reclaimable, Snapshot, listed
from lorebase.store.relational.dialect import Bound
from lorebase.store.relational.maintenance import MaintenanceChecks
from lorebase.store.sqlite import fts
from lorebase.store.sqlite.database import connect_reader
from lorebase.store.sqlite.tantivy_files import copy_private, folder_bytes, json_of
from lorebase.store.vectors import blob_bytes

if TYPE_CHECKING:  # the store's parts, made by its __init__
    from lorebase.store.sqlite.database import SqliteDatabase
    from lorebase.store.sqlite.dense import DenseIndexes
    from lorebase.store.sqlite.lexical import LexicalEngine
    from lorebase.store.sqlite.tantivy_index import TantivyIndexes

INTEGRITY_LINES = 1000
"""Problems ``PRAGMA integrity_check`` lists at most (the first says where it starts)."""
REBUILD_WAIT_S = 60.0
"""How long a repair waits for a rebuild of the same index that this process's searches began
when they found it damaged (the check after the repair would report it still rebuilding)."""
COMPRESS_BATCH = 2_000
"""Chunk rows a vacuum reads per write transaction when it compresses older texts (writers
wait for one batch at most)."""
_NULL_VALUE = re.compile(r"NULL value in (\w+)\.(\w+)")
_GRAPH_FILE = re.compile(r"kb(\d+)-identity(\d+)\.json")
_GRAPH_SUFFIXES = (".usearch", ".json")

_BASE_GRAPH_ROWS_SQL = (
    "SELECT count(*) FROM chunks AS c "
    "JOIN vectors AS v ON v.chunk_rowid = c.rowid AND v.identity_id = ? WHERE c.kb_id = ?"
)


def database_problem(error: sqlite3.Error) -> str:
    """What a database error says about the file (content-free: SQLite's own words)."""
    name = getattr(error, "sqlite_errorname", None) or type(error).__name__
    return f"the database cannot be read ({name}: {error})"


DAMAGE_CODES = {"SQLITE_CORRUPT", "SQLITE_NOTADB"}


def raise_if_damaged(path: Path, error: sqlite3.DatabaseError) -> None:
    """:class:`DamagedDatabase` for an error that says the file is damaged (a locked or busy
    database is not)."""
    name = getattr(error, "sqlite_errorname", "") or ""
    if name.split("_VTAB")[0] in DAMAGE_CODES or type(error) is sqlite3.DatabaseError:
        raise DamagedDatabase(str(path), f"{name or type(error).__name__}: {error}") from error


def integrity_problems(conn: sqlite3.Connection) -> list[str]:
    """What ``PRAGMA integrity_check`` finds, less its false alarms: SQLite before 3.41
    reports "NULL value in T.C" for NOT NULL columns of some WITHOUT ROWID tables whose
    primary key is not their first columns (``document_fields``) although no row holds a
    NULL there; each such line is checked against the table."""
    lines = [str(row[0]) for row in conn.execute(f"PRAGMA integrity_check({INTEGRITY_LINES})")]
    if lines == ["ok"]:
        return []
    verified: dict[str, bool] = {}
    kept = []
    for line in lines:
        match = _NULL_VALUE.fullmatch(line)
        if match is None:
            kept.append(line)
            continue
        if line not in verified:
            table, column = match[1], match[2]
            found = conn.execute(
                f'SELECT 1 FROM "{table}" WHERE "{column}" IS NULL LIMIT 1'
            ).fetchone()
            verified[line] = found is not None
        if verified[line]:
            kept.append(line)
    if kept or len(lines) < INTEGRITY_LINES:
        return kept
    # Only false alarms, as many as were asked for: the tables they hid are checked alone.
    alarmed = {_NULL_VALUE.fullmatch(line)[1] for line in lines}  # type: ignore[index]
    tables = [
        str(row[0])
        for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        if str(row[0]) not in alarmed
    ]
    for table in tables:
        found = [
            str(row[0])
            for row in conn.execute(f'PRAGMA integrity_check("{table}")')
            if str(row[0]) != "ok"
        ]
        kept += found
    return kept


class SqliteMaintenance(MaintenanceChecks):
    """:class:`~lorebase.store.maintenance.Maintenance` of the SQLite file and the indexes
    beside it (see the module's doc)."""

    path: Path
    _db: SqliteDatabase
    _dense: DenseIndexes
    _dense_lock: threading.Lock
    _lexical: LexicalEngine
    _VECTOR_OF_CHUNK = "v.chunk_rowid = c.rowid"
    _VECTOR_LENGTH = "length(v.vector)"
    _DAMAGE = (sqlite3.DatabaseError,)

    # -- what the derived indexes are -----------------------------------------------------
    def _tantivy(self) -> TantivyIndexes | None:
        from lorebase.store.sqlite.tantivy_index import TantivyIndexes

        return self._lexical if isinstance(self._lexical, TantivyIndexes) else None

    def _lexical_folder(self) -> Path:
        return self.path.with_suffix(".lexical")

    def _ann_folder(self) -> Path:
        return self._dense.ann_folder or self.path.with_suffix(".ann")

    def _stored_length(self, dim: int) -> int:
        return blob_bytes(dim)

    # -- check ----------------------------------------------------------------------------
    def _damage(self, error: BaseException) -> str:
        return database_problem(error) if isinstance(error, sqlite3.Error) else str(error)

    def _check_file(self) -> list[Finding]:
        """SQLite's own check of the file, on a connection of its own."""
        try:
            conn = connect_reader(self.path)
            try:
                lines = integrity_problems(conn)
            finally:
                conn.close()
        except sqlite3.DatabaseError as error:
            return [Finding(Area.DATABASE, database_problem(error))]
        if not lines:
            return []
        damaged = (
            f"the database file is damaged ({len(lines)} problem(s) found by SQLite's "
            f"integrity check, the first: {lines[0][:200]}); restore it from a backup "
            "(lorebase restore DIR)"
        )
        return [Finding(Area.DATABASE, damaged)]

    def _check_rows(self, tx: Bound, kb_ids: Sequence[int] | None) -> list[Finding]:
        return super()._check_rows(tx, kb_ids) + self._damaged_texts(tx, kb_ids)

    def _damaged_texts(self, tx: Bound, kb_ids: Sequence[int] | None) -> list[Finding]:
        """The documents holding a chunk whose stored text does not decompress (read through
        ``chunk_text``, which gives NULL for one), by base."""
        damaged: dict[int, list[str]] = {}
        for kb_id, document_id in tx.all(
            "SELECT DISTINCT kb_id, document_id FROM chunks "
            f"WHERE typeof(text) = 'blob' AND {fts.CHUNK_TEXT_FUNCTION}(text, id) IS NULL "
            "ORDER BY kb_id, document_id"
        ):
            if kb_ids is None or int(kb_id) in kb_ids:
                damaged.setdefault(int(kb_id), []).append(str(document_id))
        problem = (
            "{} document(s) hold a chunk whose stored text does not decompress (a damaged "
            "row): {}; read them again (`lorebase sync --full`; an upload: reindex it)"
        )
        said = {kb_id: problem.format(len(ids), listed(ids)) for kb_id, ids in damaged.items()}
        return [Finding(Area.DATABASE, said[k], k, ids[0]) for k, ids in damaged.items()]

    def _check_indexes(self, tx: Bound, kb_ids: list[int], sample: int) -> list[Finding]:
        """The ANN graphs, then the keyword index of each base (Tantivy: its files, its
        count, a sample of its terms; FTS5: its own check)."""
        found = self._check_graphs(tx, kb_ids)
        tantivy = self._tantivy()
        if tantivy is None:
            return found + self._check_fts()
        return found + [
            Finding(Area.KEYWORD_INDEX, problem, kb_id, document_id, repairable=True)
            for kb_id in kb_ids
            for problem, document_id in tantivy.verify(tx.raw, kb_id, sample)
        ]

    def _check_fts(self) -> list[Finding]:
        """FTS5's own check of its index against the chunks (a write transaction of a
        moment: SQLite runs it as a command)."""
        try:
            with self._db.write() as conn:
                if fts.fts_present(conn):
                    conn.execute(fts.integrity_check_sql())
        except sqlite3.DatabaseError as error:
            problem = f"the full-text index disagrees with the chunks ({error})"
            return [Finding(Area.KEYWORD_INDEX, problem, repairable=True)]
        return []

    def _check_graphs(self, tx: Bound, kb_ids: list[int]) -> list[Finding]:
        """The saved ANN graphs of these bases against the stored vectors."""
        folder = self._ann_folder()
        if not folder.is_dir():
            return []
        dims = {int(i): int(dim) for i, dim in tx.all("SELECT id, dim FROM identities")}
        generations = {
            int(kb_id): int(generation)
            for kb_id, generation in tx.all("SELECT id, generation FROM knowledge_bases")
        }
        problems = []
        for meta_path in sorted(folder.iterdir()):
            match = _GRAPH_FILE.fullmatch(meta_path.name)
            if match is None:
                continue
            kb_id, identity_id = int(match[1]), int(match[2])
            if kb_id in generations and kb_id not in kb_ids:
                continue
            problem = _graph_problem(tx, meta_path, kb_id, identity_id, dims, generations)
            if problem:
                base = kb_id if kb_id in generations else None
                problems.append((f"{problem} (identity {identity_id})", base))
        return [Finding(Area.VECTOR_INDEX, p, base, repairable=True) for p, base in problems]

    # -- repair ---------------------------------------------------------------------------
    def repair(self, kb_ids: Sequence[int]) -> list[int]:
        tantivy = self._tantivy()
        repaired = []
        for kb_id in kb_ids:
            if tantivy is not None:
                tantivy.rebuild(kb_id)
            with self._dense_lock:
                self._dense.forget({kb_id})
            self._remove_graphs(kb_id)
            repaired.append(kb_id)
        if tantivy is None and kb_ids:
            with self._db.write() as conn:
                if fts.fts_present(conn):
                    conn.execute(fts.rebuild_fts_sql())
        self._remove_orphan_graphs()
        deadline = time.monotonic() + REBUILD_WAIT_S
        while tantivy is not None and tantivy.damaged(kb_ids) and time.monotonic() < deadline:
            time.sleep(0.05)  # a rebuild this process began on its own, on finding the damage
        return repaired

    def _remove_graphs(self, kb_id: int) -> None:
        folder = self._ann_folder()
        if folder.is_dir():
            for path in folder.glob(f"kb{int(kb_id)}-identity*"):
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()

    def _remove_orphan_graphs(self) -> None:
        """Graphs of bases that are gone."""
        folder = self._ann_folder()
        if not folder.is_dir():
            return
        with self._read() as conn:
            bases = {int(row[0]) for row in conn.execute("SELECT id FROM knowledge_bases")}
        for path in folder.iterdir():
            match = re.fullmatch(r"kb(\d+)-identity\d+\.(usearch|json)", path.name)
            if match is not None and int(match[1]) not in bases:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()

    # -- space ----------------------------------------------------------------------------
    def reclaimable(self) -> Reclaimable:
        with self._read() as conn:
            (free,) = conn.execute("PRAGMA freelist_count").fetchone()
            (page,) = conn.execute("PRAGMA page_size").fetchone()
        tantivy = self._tantivy()
        return Reclaimable(
            database_bytes=int(free) * int(page),
            index_bytes=tantivy.reclaimable() if tantivy is not None else 0,
        )

    def vacuum(self) -> Compaction:
        before = self.disk_bytes()
        steps = []
        compressed = self._compress_older_texts()
        if compressed:
            steps.append(f"{compressed} chunk text(s) an older lorebase wrote compressed")
        with self._db.schema() as conn:
            conn.execute("VACUUM")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        steps.append("database vacuumed")
        tantivy = self._tantivy()
        if tantivy is not None:
            rebuilt = tantivy.compact()
            if rebuilt:
                steps.append(f"keyword index of base(s) {', '.join(map(str, rebuilt))} rebuilt")
        return Compaction(before, self.disk_bytes(), tuple(steps))

    def _compress_older_texts(self) -> int:
        """Store the chunk texts kept as TEXT (an older lorebase wrote them) compressed where
        that is smaller, in batches of :data:`COMPRESS_BATCH` rows; how many were."""
        compressed, after = 0, 0
        while True:
            with self._db.write() as conn:
                found = conn.execute(
                    "SELECT rowid, text FROM chunks WHERE rowid > ? AND typeof(text) = 'text' "
                    "ORDER BY rowid LIMIT ?",
                    (after, COMPRESS_BATCH),
                ).fetchall()
                if not found:
                    return compressed
                after = int(found[-1][0])
                stored = [(stored_chunk_text(text), rowid) for rowid, text in found]
                changed = [(value, rowid) for value, rowid in stored if isinstance(value, bytes)]
                conn.executemany("UPDATE chunks SET text = ? WHERE rowid = ?", changed)
                compressed += len(changed)

    def disk_bytes(self) -> int:
        files = [self.path.with_name(self.path.name + s) for s in ("", "-wal", "-shm")]
        total = 0
        for path in files:
            with contextlib.suppress(FileNotFoundError):
                total += path.stat().st_size
        return total + folder_bytes(self._lexical_folder()) + folder_bytes(self._ann_folder())

    # -- backup ---------------------------------------------------------------------------
    def backup(self, folder: Path, *, indexes: bool = True) -> Snapshot:
        written: list[Path] = []
        tantivy = self._tantivy()
        if indexes and tantivy is not None:  # FTS5's index is in the database's copy
            written += tantivy.snapshot(folder / self._lexical_folder().name)
        written.append(self._copy_database(folder / self.path.name))
        if indexes:
            written += self._copy_graphs(folder / self._ann_folder().name)
        names = tuple(path.relative_to(folder).as_posix() for path in written)
        return Snapshot(names, indexes)

    def _copy_database(self, target: Path) -> Path:
        """The database as of one moment, through SQLite's online backup API, as one file
        (rollback journal: no WAL file beside it; opening it turns WAL on again)."""
        private_file(target)
        source = connect_reader(self.path)
        try:
            copy = sqlite3.connect(target, isolation_level=None)
            try:
                source.backup(copy)  # all pages in one step: one read transaction
                copy.execute("PRAGMA journal_mode = DELETE")
            finally:
                copy.close()
        finally:
            source.close()
        return target

    def _copy_graphs(self, target: Path) -> list[Path]:
        folder = self._ann_folder()
        if not folder.is_dir():
            return []
        written = []
        for path in sorted(folder.iterdir()):
            if path.suffix not in _GRAPH_SUFFIXES or not path.is_file():
                continue  # temporary files of a save in progress
            private_folder(target)
            with contextlib.suppress(FileNotFoundError):
                copy_private(path, target / path.name)
                written.append(target / path.name)
        return written


def _graph_problem(
    tx: Bound,
    meta_path: Path,
    kb_id: int,
    identity_id: int,
    dims: dict[int, int],
    generations: dict[int, int],
) -> str:
    """What is wrong with one saved graph (content-free; empty when it is sound)."""
    if kb_id not in generations:
        return f"a saved ANN graph of base {kb_id}, which is gone, was left behind"
    try:
        meta: Any = json_of(meta_path)
    except (OSError, ValueError):
        return "the metadata of its saved ANN graph cannot be read"
    if not isinstance(meta, dict) or not meta_path.with_suffix(".usearch").is_file():
        return "its saved ANN graph is missing or unreadable"
    if identity_id not in dims:
        return "its saved ANN graph is of an identity that is not registered"
    if meta.get("dim") != dims[identity_id]:
        return (
            f"its saved ANN graph is of dimension {meta.get('dim')} where its identity's "
            f"is {dims[identity_id]}"
        )
    count = meta.get("count")
    if meta.get("generation") == generations[kb_id]:  # a graph behind the rows is only late
        (stored,) = tx.one(_BASE_GRAPH_ROWS_SQL, (identity_id, kb_id))
    else:
        stored = count
    return (
        ""
        if count == stored
        else f"its saved ANN graph holds {count} vectors where it has {stored}"
    )
