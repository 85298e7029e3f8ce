"""Keeping a store sound and small: the :class:`Maintenance` role of a store, and the values
it answers with.

- :meth:`Maintenance.check` verifies what the store keeps — the database's own integrity, each
  base's keyword index and vectors against the rows they are derived from — and answers with
  :class:`Finding` values (where, and what is wrong, never a document's text); a damaged
  database gives findings, not an exception.
- :meth:`Maintenance.repair` rebuilds the indexes derived from the database (those kept
  beside it: the keyword and ANN indexes of the embedded store).
- :meth:`Maintenance.reclaimable` and :meth:`Maintenance.vacuum`: the space deletes left
  behind, and giving it back.
- :meth:`Maintenance.backup`: a consistent copy of the store's files into a folder, while
  other connections read and write (the embedded store); a store that lives in a database
  server refuses, saying which tool backs it up.

The caller holds the ingestion lock for what writes (repair, vacuum); checks and backups need
none. Importing this module loads no backend.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Protocol

CHECK_SAMPLE = 5
"""Chunks per base whose terms are looked up in its keyword index by a check."""
LISTED_PER_PROBLEM = 10
"""Documents named per kind of problem: a base with thousands of them is told by count."""


class Area(StrEnum):
    """What a finding is about."""

    DATABASE = "database"
    KEYWORD_INDEX = "keyword_index"
    VECTOR_INDEX = "vector_index"
    ORIGINAL = "original"


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing found wrong: in which ``area``, in which base and document when it is theirs,
    what (content-free), and whether rebuilding the derived indexes mends it."""

    area: Area
    problem: str
    kb_id: int | None = None
    document_id: str | None = None
    repairable: bool = False


@dataclass(frozen=True, slots=True)
class Reclaimable:
    """Bytes deletes left behind that a vacuum gives back: in the database file (its free
    pages) and in the indexes beside it (their deleted documents' share). ``estimated``: a
    statistics-based guess (PostgreSQL); ``note``: what reclaims it on its own, if anything."""

    database_bytes: int = 0
    index_bytes: int = 0
    estimated: bool = False
    note: str | None = None

    @property
    def total(self) -> int:
        return self.database_bytes + self.index_bytes


@dataclass(frozen=True, slots=True)
class Compaction:
    """What a vacuum did: the bytes the store's files took before and after (None where the
    store does not know them), each step done, and advice when some of it is the operator's
    to do."""

    before_bytes: int | None
    after_bytes: int | None
    steps: tuple[str, ...] = ()
    advice: str | None = None


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What a backup of the store wrote: its files, relative to the backup's folder (and to
    the data directory, where a restore puts them back), and whether the derived indexes are
    among them (otherwise they are rebuilt from the database when first used)."""

    files: tuple[str, ...]
    indexes: bool


class Maintenance(Protocol):
    """Checking, repairing, compacting and backing up a store (see the module's doc)."""

    def check(
        self, kb_ids: Sequence[int] | None = None, sample: int = CHECK_SAMPLE
    ) -> list[Finding]:
        """The database's integrity, and for each base of ``kb_ids`` (None: every base) its
        keyword index (documents counted against its chunks, the terms of ``sample`` random
        chunks found) and its vectors (counted against its chunks, of its identity and
        dimension). Never raises on damage: a database that cannot be read is a finding."""
        ...

    def repair(self, kb_ids: Sequence[int]) -> list[int]:
        """Rebuild the derived indexes of these bases from the database; the bases that had
        any to rebuild. The caller holds the ingestion lock."""
        ...

    def reclaimable(self) -> Reclaimable:
        """What a vacuum would give back now (cheap: counters, not a scan)."""
        ...

    def vacuum(self) -> Compaction:
        """Give back what deletes left behind. The caller holds the ingestion lock."""
        ...

    def backup(self, folder: Path, *, indexes: bool = True) -> Snapshot:
        """Copy the store, consistent as of one moment, into the empty ``folder``, with a
        snapshot of its derived indexes unless ``indexes`` is false. ``Unsupported`` (saying
        what to use instead) for a store kept in a database server."""
        ...

    def disk_bytes(self) -> int | None:
        """The bytes the store's files take on disk (None: kept by a database server)."""
        ...


def listed(ids: Sequence[str]) -> str:
    """Document ids for a message: the first :data:`LISTED_PER_PROBLEM`, then how many more."""
    shown = ", ".join(ids[:LISTED_PER_PROBLEM])
    more = len(ids) - LISTED_PER_PROBLEM
    return f"{shown} and {more} more" if more > 0 else shown
