"""The keyword arm over Tantivy: one side index per knowledge base, kept in step with SQLite.

FTS5's ``bm25()`` walks every row of every query term, and natural questions hold words that
a third of the chunks contain: at 1M chunks the keyword arm took ~0.4 s at p50 and ~1 s at
p95 even with a split query plan (bench/README.md). Tantivy stores each term's document
frequency and prunes with block-max WAND, so it reads only the blocks that can still reach
the top k.

How it stays correct:

- **Derived data.** The chunks table is the truth; each base's index lives in
  ``<db>.lexical/kb<K>/`` (or in memory for an in-memory database) and is rebuilt from the
  chunks whenever it is missing, unreadable, of another layout version, or belongs to a
  deleted base whose id was reused. Deleting the folder only costs a rebuild.
- **In step by generation**, like the dense indexes: every write to a base bumps its
  generation and stamps the documents it changed. A search reads the base's generation in its
  own read transaction; an index behind it first *catches up* from that same snapshot: the
  changed documents' chunks are deleted and added again, the documents gone are deleted,
  all in one Tantivy commit, so a search sees a document whole or not at all, and never a
  deleted one.
- **Crash-safe by idempotence.** What each index holds is recorded in ``state.sqlite`` next to
  the indexes (the generation it reflects and its documents), written *after* Tantivy's
  commit. A crash between the two leaves the record behind the index, and the next catch-up
  deletes and adds the same documents again, which changes nothing. The record's write
  transaction also serialises catch-ups across processes sharing the database.
- **Per-base statistics.** Each base has its own index, so a term's document frequency and
  the average chunk length are the base's own: a small base is no longer ranked with a big
  base's statistics (FTS5's are table-wide).
- **A damaged index never ends the process.** Tantivy maps its segment files into memory; a
  mapped file that shrinks under it (truncated by a disk fault, a careless hand, a full disk)
  makes the next read of it a SIGBUS, which no Python code can catch: the whole server died.
  So before a search reads an index, the sizes of its segment files are compared with the
  largest each was seen at (segment files never shrink; a merge writes new ones), and its
  folder must still be there. The searcher changes only when lorebase reloads it — at a
  catch-up, or when a search finds segment files that were not there at the last look (a
  merge that ended since) — and the sizes are looked at right after: Tantivy's own reader
  would follow every commit on disk (another process's, a merge's) and map files never
  looked at. A damaged index is let go unread, its base answers by keyword with nothing
  until it is rebuilt (the search says ``lexical_index_damaged``, the log and
  :meth:`TantivyIndexes.damaged` say which base and why), and it is rebuilt from the chunks
  in the background.

What is indexed and how a query is scored: :mod:`.tantivy_schema`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import shutil
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, overload

from lorebase.analysis import merged, query_variants
from lorebase.errors import Conflict
from lorebase.private import narrow_files, private_file, private_folder
from lorebase.store.base import Scored
from lorebase.store.relational.dialect import once_a_snapshot
from lorebase.store.restriction import Restriction
from lorebase.store.sqlite.fts import CHUNK_TEXT_SQL, PATH_TEXT_SQL
from lorebase.store.sqlite.rows import base_generations
from lorebase.store.sqlite.search import merge_top
from lorebase.store.sqlite.tantivy_files import (
    copy_index,
    deleted_bytes,
    files_problem,
    has_deletes,
)
from lorebase.store.sqlite.tantivy_schema import (
    ANALYZER,
    LAYOUT_VERSION,
    STORED_ELSEWHERE,
    analyzer,
    base_query,
    ceiling,
    document_code,
    hit_ids,
    id_words,
    schema,
    tantivy,
    weighted_text,
)

WRITE_BATCH_DOCUMENTS = 500
"""Documents whose chunks are read from SQLite per statement during a catch-up."""
SMALL_CATCH_UP = 5_000
"""Chunks up to which a catch-up indexes on one thread with a small heap; above, two threads
and a larger heap (a rebuild), which makes fewer, larger segments."""
WRITER_HEAP = (16_000_000, 96_000_000)
"""Tantivy's writer heap (bytes, shared by its threads) for small and large catch-ups."""
STATE_FILE = "state.sqlite"
STATE_TIMEOUT_S = 60.0
"""How long a catch-up waits for another process's catch-up of the same folder."""
QUIET_S = 1.0
"""After writes, the indexes catch up in the background once the writes pause this long, so
the first search after a pass does not pay for it (a Tantivy commit syncs its files: ~0.2 s
on this loaded machine, plus the indexing itself)."""
MAX_LAG_S = 30.0
"""While writes keep coming, the background catch-up still runs this often."""

log = logging.getLogger(__name__)

Reader = Callable[[], AbstractContextManager[sqlite3.Connection]]


_CHUNK_FIELDS_SQL = (
    "SELECT c.id, c.document_id, c.language, coalesce(d.title, ''), s.headings, "
    f"{PATH_TEXT_SQL}, coalesce(c.symbol, ''), {CHUNK_TEXT_SQL} "
    "FROM chunks AS c JOIN documents AS d ON d.id = c.document_id "
    "JOIN sections AS s ON s.id = c.section_id "
    "WHERE c.document_id IN (SELECT value FROM json_each(?))"
)

_BASE_CHUNKS_SQL = "SELECT id FROM chunks WHERE kb_id = ?"
_SAMPLE_SQL = (
    "SELECT c.id, c.document_id, c.language, coalesce(d.title, ''), s.headings, "
    f"{PATH_TEXT_SQL}, coalesce(c.symbol, ''), {CHUNK_TEXT_SQL} "
    "FROM chunks AS c JOIN documents AS d ON d.id = c.document_id "
    "JOIN sections AS s ON s.id = c.section_id "
    "WHERE c.rowid IN (SELECT rowid FROM chunks WHERE kb_id = ? ORDER BY random() LIMIT ?)"
)
"""Random chunks of a base, with the fields their indexed text is made of."""
FEW_DOCUMENTS = 64
"""Up to this many allowed documents, a keyword search restricts its query to them (a term
set); beyond, it ranks the base deeper and keeps theirs when that depth costs less than their
term set (see :data:`DEPTH_PER_DOCUMENT`)."""
FILTER_DEPTH_SLACK = 2.0
"""How much deeper than the allowed documents' share predicts a filtered search reads (their
chunks are not spread evenly over the ranking)."""
DEPTH_PER_DOCUMENT = 8
"""Hits of a deeper ranking that cost what one document of a term set costs (measured at 1M
chunks: ~0.6 us a hit read with its document code, ~5 us a document of a term set)."""
MAX_FILTER_DEPTH = 20_000
"""The deepest unrestricted ranking read for a filtered search (a term set beyond)."""
SAMPLE_HITS = 100_000
"""Hits read per sampled term (within its document: every chunk of the longest document)."""
Problem = tuple[str, str | None]
"""Something wrong with an index (content-free) and the document it concerns, if one."""
_RECORDED_SQL = "SELECT id FROM documents WHERE kb_id = ?"

_STATE_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS bases (kb_id INTEGER PRIMARY KEY, created_at REAL NOT NULL, "
    "generation INTEGER NOT NULL, version INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS documents (kb_id INTEGER NOT NULL, id TEXT NOT NULL, "
    "PRIMARY KEY (kb_id, id)) WITHOUT ROWID",
)


@dataclass(slots=True)
class _Slot:
    """One base's open index, the generation its searcher reflects, and the largest size each
    of its files was seen at (see :func:`damage`)."""

    index: Any
    created_at: float
    generation: int
    sizes: dict[str, int] = field(default_factory=dict)


UNCHECKED_FILES = ("meta.json", ".managed.json")
"""Files Tantivy rewrites in place (a commit's list of segments): they may shrink."""


def damage(folder: Path, seen: dict[str, int]) -> str | None:
    """Why the index in ``folder`` may not be read (content-free), or None; ``seen``: the
    largest size each of its segment files was seen at, brought up to date. Segment files are
    immutable once written, so one smaller than it was is damaged; one gone was collected after
    a merge (its mapping stays valid). Reads the folder's listing and each file's size only."""
    if not (folder / "meta.json").is_file():
        return "its folder or its meta.json is gone"
    try:
        entries = list(os.scandir(folder))
    except OSError as error:
        return f"its folder cannot be read ({type(error).__name__})"
    for entry in entries:
        name = entry.name
        if name in UNCHECKED_FILES or name.endswith(".lock") or not entry.is_file():
            continue
        try:
            size = entry.stat().st_size
        except FileNotFoundError:
            continue  # collected since the listing
        if size < seen.get(name, 0):
            return "a segment file shrank (truncated)"
        seen[name] = size
    return None


class TantivyIndexes:
    """The Tantivy side indexes of one SQLite database (see the module's doc). Thread-safe:
    catch-ups are serialised by a lock (and by the state record across processes); searches
    run on immutable searchers outside it."""

    def __init__(
        self, folder: Path | None, reader: Reader | None = None, *, follow: bool = True
    ) -> None:
        """``reader`` opens a read transaction on the database: with it (and ``follow``),
        writes are followed by a catch-up in the background (see :meth:`written`). Without
        ``follow`` (a server's process beside its indexer, which follows the writes that
        matter) the next search of a base catches it up."""
        self.folder = folder
        self.follow = follow
        self._slots: dict[int, _Slot] = {}
        self._lock = threading.Lock()
        self._schema = schema()
        self._analyzer = analyzer()
        self._memory_state: sqlite3.Connection | None = None
        self._reader = reader
        self._wake = threading.Condition()
        self._first_write: float | None = None
        self._last_write = 0.0
        self._closed = False
        self._follower: threading.Thread | None = None
        # Bases whose index was found damaged, and why, until it is rebuilt.
        self._damaged: dict[int, str] = {}

    # -- following writes -----------------------------------------------------------------

    def written(self) -> None:
        """A write transaction committed: catch up in the background once writes pause."""
        if self._reader is None or not self.follow:
            return
        with self._wake:
            if self._closed:
                return
            now = time.monotonic()
            self._last_write = now
            if self._first_write is None:
                self._first_write = now
            if self._follower is None:
                self._follower = threading.Thread(
                    target=self._follow, name="lorebase-lexical", daemon=True
                )
                self._follower.start()
            self._wake.notify()

    def close(self) -> None:
        """Stop the background catch-up, then catch up with writes it had not yet taken (at
        most ``MAX_LAG_S`` of them): the next process's first search finds the index current
        (``lorebase add`` then ``lorebase search``: the search paid ~0.4 s for it before)."""
        with self._wake:
            self._closed = True
            follower, self._follower = self._follower, None
            pending = self._first_write is not None
            self._wake.notify()
        if follower is not None and follower is not threading.current_thread():
            follower.join()
        if pending and self._reader is not None:
            self._catch_up_all()

    def _follow(self) -> None:
        while True:
            with self._wake:
                while not self._closed:
                    if self._first_write is None:
                        self._wake.wait()
                        continue
                    now = time.monotonic()
                    due = min(self._last_write + QUIET_S, self._first_write + MAX_LAG_S)
                    if now >= due:
                        break
                    self._wake.wait(due - now)
                if self._closed:
                    return
                self._first_write = None
            self._catch_up_all()

    def _catch_up_all(self) -> None:
        """Every base's index brought to the database's current generation (errors are
        logged by kind: the next search catches up and reports them itself)."""
        assert self._reader is not None
        try:
            with self._reader() as conn:
                kb_ids = [row[0] for row in conn.execute("SELECT id FROM knowledge_bases")]
                self.indexes_for(conn, kb_ids)
        except Exception as exc:
            log.warning("background lexical catch-up failed: %s", type(exc).__name__)

    # -- searching ------------------------------------------------------------------------

    def search(
        self,
        conn: sqlite3.Connection,
        kb_ids: Sequence[int],
        query: str,
        limit: int,
        document_ids: Sequence[str] | None,
        languages: Mapping[int, frozenset[str]],
    ) -> Scored:
        """BM25 hits over these bases, merged by score, for raw user text analysed as each
        base's languages; ``conn`` is the search's read transaction (the snapshot every index
        is brought to)."""
        if limit <= 0 or not kb_ids or (document_ids is not None and not document_ids):
            return []
        per_base: list[Scored] = []
        for kb_id, index in self.indexes_for(conn, kb_ids, with_ids=True):
            tokens = merged(query_variants(query, languages.get(kb_id, ())))
            if not tokens:
                continue
            searcher = index.searcher()
            ranked = None
            if document_ids is not None and len(document_ids) > FEW_DOCUMENTS:
                ranked = self._filtered_after(
                    conn, kb_id, searcher, tokens, limit, Restriction.of(document_ids)
                )
            if ranked is None:
                query_of_base = base_query(self._schema, searcher, tokens, document_ids)
                found = searcher.search(query_of_base, limit, count=False).hits
                ids = hit_ids(searcher, found)
                ranked = [(i, float(score)) for i, (score, _) in zip(ids, found, strict=True)]
            per_base.append(ranked)
        return merge_top(per_base, limit)

    def _filtered_after(
        self,
        conn: sqlite3.Connection,
        kb_id: int,
        searcher: Any,
        tokens: dict[str, int],
        limit: int,
        allowed: Restriction,
    ) -> Scored | None:
        """The best ``limit`` hits of the ``allowed`` documents, found by ranking the whole
        base deeper and keeping theirs (by the document code each hit carries) — exact, since
        a restriction changes no score: the first ``limit`` kept are the restricted ranking's
        first ``limit``. A term set of many documents is slow to build and walk (~5 us a
        document at 1M chunks) while each hit of a deeper ranking costs ~0.6 us. None when the
        depth the allowed share needs would cost more than their term set, or the depth read
        keeps fewer than ``limit`` while more hits lie beyond it (the caller then restricts
        the query itself)."""
        documents = allowed.derived(("documents", kb_id), lambda: _document_count(conn, kb_id))
        share = min(1.0, len(allowed) / max(documents, 1))
        depth = math.ceil(limit / max(share, 1e-9) * FILTER_DEPTH_SLACK)
        if depth > min(MAX_FILTER_DEPTH, DEPTH_PER_DOCUMENT * len(allowed)):
            return None
        found = searcher.search(
            base_query(self._schema, searcher, tokens, None), depth, count=False
        ).hits
        codes = allowed.derived("document codes", lambda: frozenset(map(document_code, allowed)))
        owners = searcher.fast_field_values("document_code", [address for _, address in found])
        chosen = [hit for hit, owner in zip(found, owners, strict=True) if owner in codes][:limit]
        if len(chosen) < limit and len(found) == depth:
            return None
        ids = hit_ids(searcher, chosen)
        return [(chunk_id, float(score)) for chunk_id, (score, _) in zip(ids, chosen, strict=True)]

    def ceiling(
        self,
        conn: sqlite3.Connection,
        kb_ids: Sequence[int],
        query: str,
        languages: Mapping[int, frozenset[str]],
    ) -> float:
        """The most a chunk could score for ``query`` in any of these bases (each ranks by its
        own statistics), caught up to ``conn``'s snapshot as :meth:`search` is."""
        if not kb_ids:
            return 0.0
        return max(
            (
                ceiling(index.searcher(), query_variants(query, languages.get(kb_id, ())))
                for kb_id, index in self.indexes_for(conn, kb_ids, with_ids=True)
            ),
            default=0.0,
        )

    @overload
    def indexes_for(
        self, conn: sqlite3.Connection, kb_ids: Sequence[int], *, with_ids: Literal[False] = ...
    ) -> list[Any]: ...

    @overload
    def indexes_for(
        self, conn: sqlite3.Connection, kb_ids: Sequence[int], *, with_ids: Literal[True]
    ) -> list[tuple[int, Any]]: ...

    def indexes_for(
        self, conn: sqlite3.Connection, kb_ids: Sequence[int], *, with_ids: bool = False
    ) -> list[Any]:
        """The index of each base (with ``with_ids``: its base's id beside it), caught up to
        the generation ``conn`` sees; a base whose index is damaged is left out (see
        :meth:`damaged`) and its index rebuilt. Found once in a snapshot (a search and its
        ceiling share the keyword arm's): the files were looked at a moment before."""
        found: list[tuple[int, Any]] = once_a_snapshot(
            conn, ("tantivy indexes", tuple(kb_ids)), lambda: self._indexes_for(conn, kb_ids)
        )
        return found if with_ids else [index for _, index in found]

    def _indexes_for(
        self, conn: sqlite3.Connection, kb_ids: Sequence[int]
    ) -> list[tuple[int, Any]]:
        indexes: list[tuple[int, Any]] = []
        for kb_id, generation, created_at in base_generations(conn, kb_ids):
            if kb_id in self._damaged:
                continue
            slot = self._slots.get(kb_id)
            # A slot of an earlier base of this id (deleted, maybe by another process, and
            # made again) is not damaged but stale: the catch-up starts it afresh.
            current = slot if slot is not None and slot.created_at == created_at else None
            if current is not None and self._quarantined(kb_id, current):
                continue
            if slot is None or slot.created_at != created_at or slot.generation < generation:
                with self._lock:
                    slot = self._catch_up(conn, kb_id, generation, created_at)
                if self._quarantined(kb_id, slot):
                    continue
            indexes.append((kb_id, slot.index))
        return indexes

    def damaged(self, kb_ids: Sequence[int]) -> dict[int, str]:
        """The bases among ``kb_ids`` whose index was found damaged, and why (content-free),
        until its rebuild is done: their keyword search finds nothing meanwhile."""
        return {kb_id: self._damaged[kb_id] for kb_id in kb_ids if kb_id in self._damaged}

    def _quarantined(self, kb_id: int, slot: _Slot) -> bool:
        """Whether ``slot``'s index is damaged (see :func:`damage`): then it is let go unread
        and rebuilt from the chunks in the background."""
        if self.folder is None:
            return False
        known = len(slot.sizes)
        reason = damage(self._kb_folder(kb_id), slot.sizes)
        if reason is None and len(slot.sizes) > known:
            # New segment files since the last look (a merge that ended after the catch-up,
            # another process's commit): sized now, so the searcher may read them; what the
            # reload maps beyond the listing is sized right after, as a catch-up does.
            try:
                reason = self._reloaded(kb_id, slot)
            except (OSError, ValueError) as error:  # its files changed under the reload
                reason = f"it could not be read again ({type(error).__name__})"
        if reason is None:
            return False
        with self._lock:
            if self._slots.get(kb_id) is slot:
                del self._slots[kb_id]
            first = kb_id not in self._damaged
            self._damaged[kb_id] = reason
        if first:
            log.warning(
                "the keyword index of base %d is damaged (%s); rebuilding it", kb_id, reason
            )
            threading.Thread(
                target=self._rebuild, args=(kb_id,), name="lorebase-lexical-rebuild", daemon=True
            ).start()
        return True

    def _reloaded(self, kb_id: int, slot: _Slot) -> str | None:
        """``slot``'s searcher moved to the index's last commit, then the sizes of the files it
        may map looked at (see :func:`damage`): why it may not be read, or None."""
        slot.index.reload()
        return None if self.folder is None else damage(self._kb_folder(kb_id), slot.sizes)

    def rebuild(self, kb_id: int) -> None:
        """A base's index made anew from the chunks, on the caller's thread: its folder and
        record removed (a search holding the old index reads it to its end), then a catch-up
        from one read transaction. What the catch-up raises is raised."""
        with self._lock, self._state() as state:
            self._slots.pop(kb_id, None)
            state.execute("DELETE FROM bases WHERE kb_id = ?", (kb_id,))
            state.execute("DELETE FROM documents WHERE kb_id = ?", (kb_id,))
            self._remove_folder(kb_id)
        if self._reader is not None:
            with self._reader() as conn:
                for found, generation, created_at in base_generations(conn, [kb_id]):
                    with self._lock:
                        self._catch_up(conn, found, generation, created_at)

    def _rebuild(self, kb_id: int) -> None:
        """A damaged base's index made anew from the chunks (on its own thread)."""
        started = time.monotonic()
        try:
            self.rebuild(kb_id)
        except Exception as exc:  # the next search tries again
            log.warning(
                "rebuilding the keyword index of base %d failed: %s", kb_id, type(exc).__name__
            )
        else:
            log.info(
                "the keyword index of base %d was rebuilt in %.1f s",
                kb_id,
                time.monotonic() - started,
            )
        finally:
            with self._lock:
                self._damaged.pop(kb_id, None)

    def check(self, conn: sqlite3.Connection) -> None:
        """Raise :class:`Conflict` when an index, caught up, does not hold exactly its base's
        chunks (the integrity check FTS5 has built in)."""
        for (kb_id,) in conn.execute("SELECT id FROM knowledge_bases").fetchall():
            (index,) = self.indexes_for(conn, [kb_id])
            searcher = index.searcher()
            everything = tantivy().Query.all_query()
            found = searcher.search(everything, max(1, searcher.num_docs), count=False).hits
            indexed = hit_ids(searcher, found)
            stored = {row[0] for row in conn.execute(_BASE_CHUNKS_SQL, (kb_id,))}
            if len(indexed) != len(set(indexed)) or set(indexed) != stored:
                raise Conflict(
                    f"the lexical index of base {kb_id} holds {len(indexed)} chunks where the "
                    f"base has {len(stored)}; delete {self.folder} to rebuild it"
                )

    # -- maintenance (lorebase check, vacuum, backup) -------------------------------------

    def verify(self, conn: sqlite3.Connection, kb_id: int, sample: int) -> list[Problem]:
        """What is wrong with a base's index (content-free, with the document where there is
        one), checked against ``conn``'s snapshot: first its files, read without opening the
        index (:func:`damage`, then every committed file's checksum: a damaged index is
        reported, never opened, since a fresh open would quietly rebuild it); then, caught up,
        its documents counted against the base's chunks, and a term of each of ``sample``
        random chunks looked up in it."""
        if kb_id in self._damaged:
            return [(f"{self._damaged[kb_id]}; it is being rebuilt", None)]
        folder = None if self.folder is None else self._kb_folder(kb_id)
        if folder is not None and folder.exists():
            with self._lock, self._state():  # no commit runs while its files are read
                reason = damage(folder, {}) or files_problem(folder)
            if reason is not None:
                return [(reason, None)]
        found = self.indexes_for(conn, [kb_id])
        if not found:
            return [(self._damaged.get(kb_id, "it could not be opened"), None)]
        searcher = found[0].searcher()
        (stored,) = conn.execute("SELECT count(*) FROM chunks WHERE kb_id = ?", (kb_id,)).fetchone()
        problems: list[Problem] = []
        if searcher.num_docs != stored:
            problems.append(
                (f"it holds {searcher.num_docs} chunks where the base has {stored}", None)
            )
        for chunk_id, document_id, language, *fields in conn.execute(
            _SAMPLE_SQL, (kb_id, max(0, sample))
        ):
            terms = weighted_text(fields, language).split()
            if terms and chunk_id not in self._found_by(searcher, max(terms, key=len), document_id):
                problems.append(("a term of one of its chunks does not find it", document_id))
        return problems

    def _found_by(self, searcher: Any, term: str, document_id: str) -> set[str]:
        """The chunks of a document one indexed term finds."""
        t = tantivy()
        query = t.Query.boolean_query(
            [
                (t.Occur.Must, t.Query.term_query(self._schema, "text", term)),
                (t.Occur.Must, t.Query.term_query(self._schema, "document", document_id)),
            ]
        )
        return set(hit_ids(searcher, searcher.search(query, SAMPLE_HITS, count=False).hits))

    def snapshot(self, target: Path) -> list[Path]:
        """Copy every base's index whose files are sound, and the record of what each holds,
        into ``target`` (the backup's ``<db>.lexical``), while no catch-up commits: index and
        record agree. Taken *before* the database is copied, the record is at or behind the
        copy, and the first search after a restore catches up the difference; a base left out
        is rebuilt. The files written."""
        if self.folder is None or not (self.folder / STATE_FILE).is_file():
            return []
        written: list[Path] = []
        with self._lock, self._state() as state:
            bases = state.execute("SELECT kb_id, created_at, generation, version FROM bases")
            kept = []
            for row in bases.fetchall():
                folder = self._kb_folder(row[0])
                if damage(folder, {}) is None and files_problem(folder) is None:
                    written += copy_index(folder, target / folder.name)
                    kept.append(row)
            ids = json.dumps([row[0] for row in kept])
            documents = state.execute(
                "SELECT kb_id, id FROM documents WHERE kb_id IN (SELECT value FROM json_each(?))",
                (ids,),
            ).fetchall()
        record = private_file(private_folder(target) / STATE_FILE)
        conn = sqlite3.connect(record, isolation_level=None)
        try:
            for statement in _STATE_SCHEMA:
                conn.execute(statement)
            conn.execute("BEGIN")
            conn.executemany("INSERT INTO bases VALUES (?, ?, ?, ?)", kept)
            conn.executemany("INSERT INTO documents VALUES (?, ?)", documents)
            conn.execute("COMMIT")
        finally:
            conn.close()
        return [*written, record]

    def reclaimable(self) -> int:
        """The bytes deleted chunks take in the indexes until their segments merge."""
        if self.folder is None:
            return 0
        return sum(deleted_bytes(folder) for folder in self.folder.glob("kb*"))

    def compact(self) -> list[int]:
        """Rebuild the indexes that hold deleted chunks (this binding of Tantivy merges only
        by its own policy: a rebuild is the merge); the bases rebuilt."""
        if self.folder is None:
            return []
        bases = [
            int(folder.name[2:])
            for folder in sorted(self.folder.glob("kb*"))
            if folder.name[2:].isdigit() and has_deletes(folder)
        ]
        for kb_id in bases:
            self.rebuild(kb_id)
        return bases

    def forget(self, kb_id: int) -> None:
        """A base was deleted: close its index and remove its folder and record."""
        with self._lock:
            self._slots.pop(kb_id, None)
            with self._state() as state:
                state.execute("DELETE FROM bases WHERE kb_id = ?", (kb_id,))
                state.execute("DELETE FROM documents WHERE kb_id = ?", (kb_id,))
                self._remove_folder(kb_id)

    # -- catching up ----------------------------------------------------------------------

    def _catch_up(
        self, conn: sqlite3.Connection, kb_id: int, generation: int, created_at: float
    ) -> _Slot:
        slot = self._slots.get(kb_id)
        if slot is not None and slot.created_at == created_at and slot.generation >= generation:
            return slot  # another thread caught up while this one waited
        with self._state() as state:
            record = state.execute(
                "SELECT created_at, generation, version FROM bases WHERE kb_id = ?", (kb_id,)
            ).fetchone()
            fresh = (
                record is None
                or record[0] != created_at
                or record[2] != LAYOUT_VERSION
                or (slot is None and not self._folder_intact(kb_id))
            )
            if fresh:
                self._slots.pop(kb_id, None)
                slot = None
                state.execute("DELETE FROM documents WHERE kb_id = ?", (kb_id,))
                self._remove_folder(kb_id)
                indexed = -1
            else:
                indexed = record[1]
            if slot is None or slot.created_at != created_at:
                slot = _Slot(self._open(kb_id), created_at, indexed)
            if indexed < generation:
                self._apply(conn, state, slot.index, kb_id, indexed)
                state.execute(
                    "INSERT OR REPLACE INTO bases (kb_id, created_at, generation, version) "
                    "VALUES (?, ?, ?, ?)",
                    (kb_id, created_at, generation, LAYOUT_VERSION),
                )
                indexed = generation
            self._reloaded(kb_id, slot)  # the sizes it is read at (judged by the caller)
            # An index ahead of this snapshot (another process caught up further) answers
            # for the newer state, as the dense indexes do.
            slot.generation = max(indexed, generation)
        self._slots[kb_id] = slot
        return slot

    def _apply(
        self,
        conn: sqlite3.Connection,
        state: sqlite3.Connection,
        index: Any,
        kb_id: int,
        indexed: int,
    ) -> None:
        """Bring ``index`` from generation ``indexed`` to what ``conn`` sees, in one commit;
        then record its documents (``state``'s transaction commits after the caller's)."""
        t = tantivy()
        listed = "SELECT id, generation, chunk_count FROM documents WHERE kb_id = ?"
        current = {doc: (stamp, count) for doc, stamp, count in conn.execute(listed, (kb_id,))}
        changed = [doc for doc, (stamp, _) in current.items() if stamp > indexed]
        known = {row[0] for row in state.execute(_RECORDED_SQL, (kb_id,))}
        gone = known - current.keys()
        large = sum(current[doc][1] for doc in changed) > SMALL_CATCH_UP
        writer = index.writer(heap_size=WRITER_HEAP[large], num_threads=2 if large else 1)
        # A process killed inside a commit leaves files its meta.json never named (a delete
        # file, a segment); the next commit may want one of those names and fail with
        # FileAlreadyExists. Collecting them first (Tantivy lists every file it writes before
        # writing it) makes the catch-up after a kill -9 go through.
        writer.garbage_collect_files()
        try:
            # Every changed document, not only those recorded: after a crash between a commit
            # and its record, the index may hold a document the record does not name.
            for document_id in (*gone, *changed):
                writer.delete_documents_by_term("document", document_id)
            for start in range(0, len(changed), WRITE_BATCH_DOCUMENTS):
                batch = changed[start : start + WRITE_BATCH_DOCUMENTS]
                for chunk_id, document_id, language, *fields in conn.execute(
                    _CHUNK_FIELDS_SQL, (json.dumps(batch),)
                ):
                    text = weighted_text(fields, language)
                    document = t.Document(document=document_id, text=text)
                    words = id_words(chunk_id)
                    if words is None:
                        document.add_text("chunk", chunk_id)
                        words = (STORED_ELSEWHERE, STORED_ELSEWHERE)
                    document.add_unsigned("id_high", words[0])  # a keyword makes an i64
                    document.add_unsigned("id_low", words[1])
                    document.add_unsigned("document_code", document_code(document_id))
                    writer.add_document(document)
            writer.commit()
        except BaseException:
            with contextlib.suppress(Exception):
                writer.rollback()
            raise
        finally:
            writer.wait_merging_threads()
            if self.folder is not None:  # Tantivy writes its segments with the umask's mode
                narrow_files(self._kb_folder(kb_id))
        state.executemany(
            "DELETE FROM documents WHERE kb_id = ? AND id = ?", [(kb_id, doc) for doc in gone]
        )
        state.executemany(
            "INSERT OR IGNORE INTO documents (kb_id, id) VALUES (?, ?)",
            [(kb_id, doc) for doc in changed],
        )

    def _open(self, kb_id: int) -> Any:
        t = tantivy()
        if self.folder is None:
            index = t.Index(self._schema)
        else:
            path = private_folder(self._kb_folder(kb_id))
            index = t.Index(self._schema, path=str(path), reuse=True)
            narrow_files(path)  # the lock files it made
        index.register_tokenizer(ANALYZER, self._analyzer)
        # Its searcher changes only when lorebase reloads it and then looks at the files'
        # sizes (see _quarantined): Tantivy's own reader follows every commit (another
        # process's, a merge's) and would map segment files the damage check never saw.
        index.config_reader(reload_policy="Manual")
        return index

    # -- the folder and the state record --------------------------------------------------

    def _kb_folder(self, kb_id: int) -> Path:
        assert self.folder is not None
        return self.folder / f"kb{int(kb_id)}"

    def _folder_intact(self, kb_id: int) -> bool:
        """Whether a base's folder can be opened as an index of this layout (a new process
        trusts the record only then)."""
        if self.folder is None:
            return False
        path = self._kb_folder(kb_id)
        if not (path / "meta.json").is_file():
            return False
        try:
            index = tantivy().Index.open(str(path))
            return bool(index.schema is not None)
        except (OSError, ValueError):
            return False

    def _remove_folder(self, kb_id: int) -> None:
        if self.folder is not None:
            shutil.rmtree(self._kb_folder(kb_id), ignore_errors=True)

    @contextlib.contextmanager
    def _state(self) -> Iterator[sqlite3.Connection]:
        """The state record in one ``BEGIN IMMEDIATE`` transaction: held across a catch-up,
        it makes another process's catch-up of the same folder wait."""
        if self.folder is None:
            if self._memory_state is None:
                self._memory_state = _state_connection(":memory:")
            conn = self._memory_state
            close = False
        else:
            conn = _state_connection(str(private_file(private_folder(self.folder) / STATE_FILE)))
            close = True
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        finally:
            if close:
                conn.close()


def _state_connection(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(
        path, isolation_level=None, check_same_thread=False, timeout=STATE_TIMEOUT_S
    )
    conn.execute("PRAGMA journal_mode = WAL")
    for statement in _STATE_SCHEMA:
        conn.execute(statement)
    return conn


def _document_count(conn: sqlite3.Connection, kb_id: int) -> int:
    (documents,) = conn.execute(
        "SELECT count(*) FROM documents WHERE kb_id = ?", (kb_id,)
    ).fetchone()
    return int(documents)
