"""Keeping a data directory sound and small, and copying it: :class:`Maintaining` (check and
repair, compaction, backups, the reclaimable space status shows) and :func:`restore`.

- **check** asks the store (:meth:`~lorebase.store.maintenance.Maintenance.check`: its
  database, each base's keyword index and vectors) and opens every upload's sealed original
  (it must decrypt whole, under the data key, to the bytes its document records); with
  ``repair`` it rebuilds the derived indexes of the bases found wanting, under the ingestion
  lock, and checks again.
- **backup** writes into an empty folder, while servers read and write: the store's consistent
  copy (:meth:`~lorebase.store.maintenance.Maintenance.backup`), then the sealed originals (an
  upload writes its original before its row, so every row of the copy finds its original),
  the files of the data directory a lorebase is opened with (``embedders.toml``, the agent
  ``profiles.json``, the key file unless left out or the key comes from
  ``LOREBASE_DATA_KEY``), and last a manifest of every file with its size and SHA-256.
- **restore** (:func:`restore`) verifies the backup against its manifest first, refuses while
  a process holds the target's ingestion lock (naming it) and a target with data in it unless
  asked to replace it, copies into a temporary folder beside the target and renames it into
  place (the replaced directory's model cache is kept).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lorebase.errors import Conflict, InvalidInput, LorebaseError, NotFound, Unsupported
from lorebase.lock import LOCK_FILE, SERVE_LOCK_FILE, WATCH_LOCK_FILE, IngestLock, serving_lock
from lorebase.private import private_file, private_folder
from lorebase.service.originals import BLOBS_FOLDER, Originals
from lorebase.settings import Settings
from lorebase.store.base import Store
from lorebase.store.maintenance import (
    CHECK_SAMPLE,
    Area,
    Compaction,
    Finding,
    Reclaimable,
    listed,
)
from lorebase.vault.blobs import BlobStore
from lorebase.vault.keys import KEY_FILE

__all__ = [
    "MANIFEST",
    "Area",
    "BackupReport",
    "CheckReport",
    "Compaction",
    "Finding",
    "Maintaining",
    "Reclaimable",
    "RestoreReport",
    "restore",
]

MANIFEST = "manifest.json"
MANIFEST_FORMAT = "lorebase-backup"
MANIFEST_VERSION = 1
READ_BYTES = 1 << 20
KEPT_FILES = ("embedders.toml", "profiles.json")
"""Files of the data directory a lorebase is opened with, copied when they are there."""
KEPT_ON_REPLACE = ("models", "data.key")
"""What a restore moves from the directory it replaces into the restored one when the backup
does not bring its own: the model cache, and the data key (a backup made with ``--no-key``
holds none; deleting the only copy would leave every upload's original unreadable)."""


@dataclass(frozen=True, slots=True)
class CheckReport:
    """What a check found (``findings``), the bases a repair rebuilt the indexes of, and what
    is still wrong after it (``remaining``: the findings themselves without a repair);
    ``names``: the bases' names by id, where the database could tell them."""

    findings: list[Finding]
    remaining: list[Finding]
    repaired: list[int] = field(default_factory=list)
    names: dict[int, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.remaining


@dataclass(frozen=True, slots=True)
class BackupReport:
    """A backup written: its folder, its files and their bytes, whether the derived indexes
    are in it, and where the data key must come from at restore."""

    folder: Path
    files: int
    bytes: int
    indexes: bool
    key: str
    seconds: float


@dataclass(frozen=True, slots=True)
class RestoreReport:
    """A restore done: into which data directory, its files and bytes, and the data key."""

    data_dir: Path
    files: int
    bytes: int
    key: str
    replaced: bool


class Maintaining:
    """Check, repair, compaction and backups of one lorebase (see the module's doc)."""

    def __init__(
        self, settings: Settings, store: Store, lock: IngestLock, originals: Originals
    ) -> None:
        self._settings = settings
        self._store = store
        self._lock = lock
        self._originals = originals

    # -- check and repair -----------------------------------------------------------------
    def check(
        self,
        kb_ids: Sequence[int] | None = None,
        *,
        repair: bool = False,
        sample: int = CHECK_SAMPLE,
    ) -> CheckReport:
        findings = self._findings(kb_ids, sample)
        names = self._names()
        repairable = [f for f in findings if f.repairable]
        if not repair or not repairable:
            return CheckReport(findings, findings, names=names)
        everyone = list(names) if kb_ids is None else list(kb_ids)
        bases = sorted(
            {f.kb_id for f in repairable if f.kb_id is not None}
            | (set(everyone) if any(f.kb_id is None for f in repairable) else set())
        )
        with self._alone():
            repaired = self._store.repair(bases)
        return CheckReport(findings, self._findings(kb_ids, sample), repaired, names)

    def _findings(self, kb_ids: Sequence[int] | None, sample: int) -> list[Finding]:
        return [*self._store.check(kb_ids, sample), *self._check_originals(kb_ids)]

    def _names(self) -> dict[int, str]:
        try:
            return {kb.id: kb.name for kb in self._store.list_kbs(totals=False)}
        except Exception:  # a damaged database: the check said so
            return {}

    def _check_originals(self, kb_ids: Sequence[int] | None) -> list[Finding]:
        """Every upload's original opens under the data key, whole, to the bytes its
        document records."""
        try:
            uploads = [
                (kb_id, document_id)
                for kb_id, document_id in self._store.list_uploads()
                if kb_ids is None or kb_id in kb_ids
            ]
        except Exception:  # a damaged database: the check said so
            return []
        if not uploads:
            return []
        try:
            blobs = self._originals.blobs
        except LorebaseError as error:
            return [Finding(Area.ORIGINAL, f"the uploads' originals cannot be opened: {error}")]
        bad: dict[int, list[tuple[str, str]]] = {}
        for kb_id, document_id in uploads:
            problem = _original_problem(self._store, blobs, document_id)
            if problem is not None:
                bad.setdefault(kb_id, []).append((document_id, problem))
        findings = []
        for kb_id, documents in bad.items():
            for problem in dict.fromkeys(p for _, p in documents):
                ids = [d for d, p in documents if p == problem]
                findings.append(
                    Finding(
                        Area.ORIGINAL,
                        f"{len(ids)} upload(s) whose original {problem}: {listed(ids)}; upload "
                        "the file again, or restore the data directory from a backup",
                        kb_id,
                        ids[0],
                    )
                )
        return findings

    # -- space ----------------------------------------------------------------------------
    def reclaimable(self) -> Reclaimable:
        return self._store.reclaimable()

    def vacuum(self) -> Compaction:
        with self._alone():
            return self._store.vacuum()

    @contextmanager
    def _alone(self) -> Iterator[None]:
        """No server beside (it keeps indexes in memory that a repair or a vacuum rebuilds
        under it) and no pass: over the embedded store the serve lock, then the ingestion
        lock, each refused naming its holder."""
        if self._settings.shared_store:
            with self._lock:
                yield
            return
        with serving_lock(self._settings.data_dir, self._lock.holder), self._lock:
            yield

    # -- backup ---------------------------------------------------------------------------
    def backup(self, folder: Path, *, key: bool = True) -> BackupReport:
        """Copy the lorebase into the empty (or new) ``folder`` (see the module's doc);
        ``key``: the key file of the data directory goes with it. ``Unsupported`` for a store
        kept in a database server (saying what backs it up)."""
        started = time.monotonic()
        folder = folder.expanduser().absolute()
        data_dir = self._settings.data_dir.expanduser().absolute()
        if folder == data_dir or folder.is_relative_to(data_dir):
            raise InvalidInput("a backup goes outside the data directory; choose another folder")
        if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
            raise Conflict(f"{folder} is not an empty folder; back up into a new or empty one")
        made = not folder.exists()
        private_folder(folder)
        try:
            snapshot = self._store.backup(folder)
            files = [folder / name for name in snapshot.files]
            files += self._copy_originals(folder)
            for name in KEPT_FILES:
                if (data_dir / name).is_file():
                    files.append(_copy(data_dir / name, folder / name))
            key_note, key_file = self._key(data_dir, key)
            if key_file is not None:
                files.append(_copy(key_file, folder / KEY_FILE))
            manifest = _manifest(folder, files, snapshot.indexes, key_note)
        except BaseException:
            _empty(folder, remove=made)
            raise
        return BackupReport(
            folder,
            len(manifest["files"]),
            sum(entry["bytes"] for entry in manifest["files"]),
            snapshot.indexes,
            key_note,
            time.monotonic() - started,
        )

    def _copy_originals(self, folder: Path) -> list[Path]:
        source = self._settings.data_dir / BLOBS_FOLDER
        if not source.is_dir():
            return []
        target = private_folder(folder / BLOBS_FOLDER)
        written = []
        for blob_id in sorted(BlobStore.stored_ids(source)):
            with contextlib.suppress(FileNotFoundError):  # deleted since the database's copy
                written.append(_copy(source / blob_id, target / blob_id))
        return written

    def _key(self, data_dir: Path, wanted: bool) -> tuple[str, Path | None]:
        """Where the data key must come from at restore, and the key file to copy (if any)."""
        if self._settings.data_key:
            return (
                "not in the backup: it comes from LOREBASE_DATA_KEY; set the same key where "
                "the backup is restored",
                None,
            )
        key_file = data_dir / KEY_FILE
        if not key_file.is_file():
            return "none: nothing was sealed with a data key yet", None
        if not wanted:
            return (
                f"left out: restore puts back no key file; copy {key_file} (kept apart from "
                "the backup) into the restored data directory, or set LOREBASE_DATA_KEY",
                None,
            )
        return (
            f"in the backup ({KEY_FILE}): keep the backup as private as the data directory",
            key_file,
        )


def _original_problem(store: Store, blobs: BlobStore, document_id: str) -> str | None:
    """Why an upload's original does not open to its recorded bytes (content-free)."""
    record = store.find_document(document_id)
    digest = hashlib.sha256()
    try:
        for chunk in blobs.stream(document_id):
            digest.update(chunk)
    except NotFound:
        return "is missing"
    except LorebaseError as error:
        return f"does not decrypt ({type(error).__name__})"
    except OSError as error:
        return f"cannot be read ({type(error).__name__})"
    if record is not None and record.content_hash and digest.hexdigest() != record.content_hash:
        return "decrypts to other bytes than were uploaded"
    return None


# -- files, hashes and the manifest -------------------------------------------------------


def _copy(source: Path, target: Path) -> Path:
    """``source`` to a new private file ``target`` (its folder made private)."""
    private_folder(target.parent)
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with source.open("rb") as reading, os.fdopen(fd, "wb") as writing:
        shutil.copyfileobj(reading, writing, READ_BYTES)
    return target


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(READ_BYTES):
            digest.update(block)
    return digest.hexdigest()


def _manifest(folder: Path, files: list[Path], indexes: bool, key: str) -> dict[str, Any]:
    entries = [
        {
            "path": path.relative_to(folder).as_posix(),
            "bytes": path.stat().st_size,
            "sha256": _sha256(path),
        }
        for path in sorted(set(files))
    ]
    manifest = {
        "format": MANIFEST_FORMAT,
        "version": MANIFEST_VERSION,
        "lorebase": _version(),
        "created_at": time.time(),
        "indexes": indexes,
        "data_key": key,
        "files": entries,
    }
    target = private_file(folder / MANIFEST)
    target.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return manifest


def _version() -> str:
    """The installed lorebase's version (the package imports the service: not from there)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("lorebase")
    except PackageNotFoundError:
        return "unknown"


def _empty(folder: Path, *, remove: bool) -> None:
    """What a failed backup wrote taken away (the folder too when it made it)."""
    if remove:
        shutil.rmtree(folder, ignore_errors=True)
        return
    for entry in folder.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)


def read_manifest(backup: Path) -> dict[str, Any]:
    """The backup's manifest, every file it lists verified (present, of its size and
    SHA-256, inside the folder); ``InvalidInput`` saying what is wrong otherwise."""
    path = backup / MANIFEST
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InvalidInput(
            f"{backup} holds no {MANIFEST}: it is not a lorebase backup (make one with "
            "`lorebase backup DIR`)"
        ) from None
    except (OSError, ValueError) as error:
        raise InvalidInput(
            f"the manifest of {backup} cannot be read ({type(error).__name__}); the backup is "
            "damaged: use another one"
        ) from None
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
        raise InvalidInput(f"{path} is not the manifest of a lorebase backup")
    if manifest.get("version") != MANIFEST_VERSION:
        raise InvalidInput(
            f"the backup is of format version {manifest.get('version')}; this lorebase "
            f"restores version {MANIFEST_VERSION}: use the lorebase that made it"
        )
    files = manifest.get("files")
    if not isinstance(files, list) or not files:
        raise InvalidInput(f"the manifest of {backup} lists no files; the backup is damaged")
    root = backup.resolve()
    for entry in files:
        name = str(entry.get("path", "")) if isinstance(entry, dict) else ""
        target = (backup / name).resolve()
        if not name or name == MANIFEST or not target.is_relative_to(root) or target == root:
            raise InvalidInput(f"the manifest of {backup} names a file outside the backup")
        if not target.is_file():
            raise InvalidInput(f"{name}, listed in the backup's manifest, is missing")
        if target.stat().st_size != entry.get("bytes") or _sha256(target) != entry.get("sha256"):
            raise InvalidInput(
                f"{name} is not as the backup's manifest records it (size or SHA-256): the "
                "backup is damaged or was altered; use another one"
            )
    return manifest


def restore(backup: Path, settings: Settings, *, replace: bool = False) -> RestoreReport:
    """Put the backup in ``backup`` back as the data directory of ``settings`` (see the
    module's doc): ``InvalidInput`` for a damaged backup (nothing written), ``Conflict`` while
    a process holds the target's ingestion lock or when the target holds data and ``replace``
    is not given; ``Unsupported`` for a PostgreSQL store (``pg_restore`` puts a dump back)."""
    if settings.shared_store:
        raise Unsupported(
            "a PostgreSQL store is restored with `pg_restore --dbname URL lorebase.dump` from "
            "a pg_dump of its database, not with `lorebase restore`; set the LOREBASE_DATA_KEY "
            "the dump's uploads were sealed with"
        )
    backup = backup.expanduser().absolute()
    data_dir = settings.data_dir.expanduser().absolute()
    if not backup.is_dir():
        raise NotFound(f"there is no backup folder {backup}")
    if data_dir == backup or data_dir.is_relative_to(backup) or backup.is_relative_to(data_dir):
        raise InvalidInput("restore into a data directory apart from the backup's folder")
    manifest = read_manifest(backup)
    with contextlib.ExitStack() as held:
        if data_dir.is_dir():  # each refused naming its holder: a server (idle or not), a pass
            held.enter_context(serving_lock(data_dir, "lorebase restore"))
            held.enter_context(IngestLock(data_dir, "lorebase restore"))
        total, present = _restore_into(data_dir, backup, manifest, replace)
    return RestoreReport(
        data_dir, len(manifest["files"]), total, str(manifest.get("data_key", "")), present
    )


def _restore_into(
    data_dir: Path, backup: Path, manifest: dict[str, Any], replace: bool
) -> tuple[int, bool]:
    """Copy the backup into a staging folder beside ``data_dir``, then rename it into place
    (the caller holds the locks); returns the bytes copied and whether data was replaced."""
    locks = (LOCK_FILE, SERVE_LOCK_FILE, WATCH_LOCK_FILE)
    present = data_dir.is_dir() and any(e.name not in locks for e in data_dir.iterdir())
    if present and not replace:
        raise Conflict(
            f"{data_dir} already holds data; restore into a new or empty folder, or add "
            "--replace to put the backup in its place"
        )
    staging = data_dir.with_name(f".{data_dir.name}.restoring-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    moved: list[str] = []  # entries of the replaced directory moved into staging
    try:
        private_folder(staging)
        total = 0
        for entry in manifest["files"]:
            copied = _copy(backup / entry["path"], staging / entry["path"])
            if _sha256(copied) != entry["sha256"]:
                raise InvalidInput(f"{entry['path']} changed while it was restored; retry")
            total += int(entry["bytes"])
        if present:
            for name in KEPT_ON_REPLACE:
                if (data_dir / name).exists() and not (staging / name).exists():
                    os.replace(data_dir / name, staging / name)
                    moved.append(name)
        old = data_dir.with_name(f".{data_dir.name}.replaced-{os.getpid()}")
        if data_dir.exists():
            os.replace(data_dir, old)
        os.replace(staging, data_dir)
        shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        for name in moved:  # back where they were: nothing of the old directory is lost
            if (staging / name).exists() and data_dir.is_dir():
                os.replace(staging / name, data_dir / name)
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return total, present
