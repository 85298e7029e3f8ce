"""Export and import of one knowledge base (``lorebase export`` / ``lorebase import``, and
the administrators' routes): :class:`Portability` writes a base to one portable file (see
:mod:`~lorebase.service.export_format` for its layout) from one read snapshot of the store, and
reads such a file into any store — SQLite or PostgreSQL — all or nothing.

Export streams: documents come from the store in batches and go to temporary files beside the
target (a zip takes one member at a time), uploads' originals are decrypted with the data key
and sealed again under the export's passphrase, member by member; the file appears under its
name only once whole (a rename). Import checks every member against the manifest before it
writes anything, then writes the originals (sealed under this data directory's key), then the
base and its documents in one transaction; if that fails, the originals written go again.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.metadata
import json
import os
import re
import secrets
import tempfile
import time
import zipfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np

from lorebase.accounts.access import Caller
from lorebase.embed.registry import Embedders, shown_name
from lorebase.errors import Conflict, Forbidden, InvalidInput, LorebaseError, NotFound
from lorebase.events import EventBus
from lorebase.names import checked_name
from lorebase.service.access import Access
from lorebase.service.export_format import (
    DOCUMENTS,
    FORMAT,
    FORMAT_VERSION,
    READ_BLOCK,
    VECTORS,
    ExportKey,
    MemberWriter,
    check_member,
    damaged,
    open_archive,
    original_member,
    read_manifest,
    read_member_lines,
    write_manifest,
)
from lorebase.service.originals import Originals
from lorebase.settings import EXPORT_KEY_ENV, ChunkSettings, Settings
from lorebase.store.base import (
    DocumentRecord,
    ExportedDocument,
    ImportedBase,
    ImportedDocument,
    ImportedSource,
    KnowledgeBase,
    Region,
    Store,
    new_document_id,
)
from lorebase.store.states import Scope, SourceKind
from lorebase.types import Chunk, ContentKind, EmbedderIdentity, Position

KEY_ENV = EXPORT_KEY_ENV
"""The environment variable the command line reads an export's passphrase from."""

DOCUMENT_ID = re.compile(r"^[0-9a-f]{1,64}$")
_RECORD_LEFT_OUT = frozenset({"kb_id", "display_name", "identity_key"})
"""A record's fields an export does not carry: the base is the file's, an upload's sealed name
is carried opened (or sealed under the export key), the identity is the manifest's."""


@dataclass(frozen=True, slots=True)
class ExportSummary:
    """What an export wrote."""

    kb_id: int
    kb_name: str
    bytes: int
    documents: int
    chunks: int
    vectors: int
    uploads: int
    originals: int
    seconds: float


@dataclass(frozen=True, slots=True)
class ImportSummary:
    """What an import made: the base, what it holds, how many documents were given new ids
    (their ids were taken in this store), whether it replaced a base of that name, and
    whether its vectors were left for the next sync to make (``reembed``)."""

    kb: KnowledgeBase
    documents: int
    chunks: int
    vectors: int
    originals: int
    renumbered: int
    replaced: bool
    reembed: bool
    seconds: float


@dataclass
class _Checked:
    """What the check of ``documents.jsonl`` learned on its way: every document id, and the
    originals member of each upload that has one, by exported id."""

    ids: list[str] = dataclasses.field(default_factory=list)
    originals: dict[str, str] = dataclasses.field(default_factory=dict)
    uploads: int = 0
    chunks: int = 0


class Portability:
    """One base written to a portable file, and such a file read into a base."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        embedders: Embedders,
        access: Access,
        originals: Originals,
        events: EventBus | None = None,
    ) -> None:
        self._settings = settings
        self._events = events
        self._store = store
        self._embedders = embedders
        self._access = access
        self._originals = originals

    # -- export --------------------------------------------------------------------------------
    def export_kb(
        self,
        kb: KnowledgeBase | str,
        target: Path,
        *,
        key: str | None = None,
        originals: bool = True,
        caller: Caller | None = None,
    ) -> ExportSummary:
        """Write base ``kb`` to ``target`` (replaced whole, once written whole). ``key``: the
        passphrase its uploads' originals (and names) are sealed under; ``originals`` False
        leaves the originals out. A base with uploads needs one of the two."""
        _admin_only(caller)
        base = self._access.kb(kb, caller) if isinstance(kb, str) else kb
        target = Path(target)
        if target.is_dir():
            raise InvalidInput(f"{target} is a folder; give the name of the file to write")
        folder = target.parent if str(target.parent) else Path(".")
        if not folder.is_dir():
            raise InvalidInput(f"{folder} is not a folder; make it first, or write elsewhere")
        partial = folder / f".{target.name}.{secrets.token_hex(4)}.part"
        try:
            with open(partial, "wb") as handle:
                summary = self._write(base, handle, folder, key, originals)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(partial, target)
        except BaseException:
            with contextlib.suppress(OSError):
                partial.unlink()
            raise
        self._access.audit(caller, "export_knowledge_base", f"kb:{base.id}")
        return dataclasses.replace(summary, bytes=target.stat().st_size)

    def _write(
        self,
        base: KnowledgeBase,
        handle: IO[bytes],
        folder: Path,
        passphrase: str | None,
        with_originals: bool,
    ) -> ExportSummary:
        started = time.perf_counter()
        uploads = sum(1 for d in self._store.list_documents(base.id) if d.uploaded)
        if uploads and with_originals and passphrase is None:
            raise InvalidInput(
                f"the base holds {uploads} uploaded files whose originals are sealed: give a "
                f"passphrase to seal them in the export (--key-file, or {KEY_ENV}), or leave "
                "them out with --no-originals"
            )
        key = ExportKey.new(passphrase) if passphrase is not None else None
        counts = {"documents": 0, "chunks": 0, "vectors": 0, "uploads": 0, "originals": 0}
        members: dict[str, Any] = {}
        with (
            self._store.read_kb(base.id) as snapshot,
            tempfile.TemporaryFile(dir=folder) as lines,
            tempfile.TemporaryFile(dir=folder) as vectors,
            zipfile.ZipFile(handle, "w", allowZip64=True) as archive,
        ):
            kb, identity = snapshot.kb, snapshot.identity
            sources = snapshot.sources()
            for exported in snapshot.documents():
                line = self._line(exported, counts, key)
                if exported.vectors is not None and identity is not None and exported.chunks:
                    matrix = np.ascontiguousarray(exported.vectors, dtype="<f4")
                    line["vectors"] = {"row": counts["vectors"], "rows": int(matrix.shape[0])}
                    vectors.write(matrix.tobytes())
                    counts["vectors"] += int(matrix.shape[0])
                record = exported.record
                if (
                    record.uploaded
                    and with_originals
                    and key is not None
                    and self._originals.blobs.exists(record.id)
                ):
                    name = original_member(counts["originals"] + 1)
                    writer = MemberWriter(archive, name, compress=False)
                    for frame in key.seal_stream(
                        record.id, self._originals.blobs.stream(record.id)
                    ):
                        writer.write(frame)
                    members[name] = writer.close()
                    counts["originals"] += 1
                    line["original"] = name
                lines.write(json.dumps(line, ensure_ascii=False).encode("utf-8") + b"\n")
            members[DOCUMENTS] = _copy_in(archive, DOCUMENTS, lines, compress=True)
            if counts["vectors"]:
                members[VECTORS] = _copy_in(archive, VECTORS, vectors, compress=False)
            manifest = {
                "format": FORMAT,
                "format_version": FORMAT_VERSION,
                "lorebase_version": _version(),
                "created_at": time.time(),
                "base": self._settings_of(kb),
                "identity": _identity_out(identity),
                "sources": [
                    {
                        "id": s.id,
                        "path": s.path,
                        "label": s.label,
                        "kind": s.kind.value,
                        "created_at": s.created_at,
                    }
                    for s in sources
                ],
                "counts": counts,
                "originals": with_originals and key is not None,
                "sealing": key.sealing() if key is not None else None,
                "members": members,
            }
            write_manifest(archive, manifest)
        return ExportSummary(
            kb_id=base.id,
            kb_name=base.name,
            bytes=0,
            documents=counts["documents"],
            chunks=counts["chunks"],
            vectors=counts["vectors"],
            uploads=counts["uploads"],
            originals=counts["originals"],
            seconds=time.perf_counter() - started,
        )

    def _settings_of(self, kb: KnowledgeBase) -> dict[str, Any]:
        team = self._access.team_names().get(kb.team_id) if kb.team_id is not None else None
        return {
            "name": kb.name,
            "description": kb.description,
            "scope": kb.scope.value,
            "team": team,
            "chunk_settings": {
                "chunk_size": kb.chunk_settings.chunk_size,
                "max_tokens": kb.chunk_settings.max_tokens,
                "overlap": kb.chunk_settings.overlap,
            },
            "embedder": kb.embedder,
            "created_at": kb.created_at,
            "pass_finished_at": kb.pass_finished_at,
        }

    def _line(
        self, exported: ExportedDocument, counts: dict[str, int], key: ExportKey | None
    ) -> dict[str, Any]:
        """One document's line (without its vectors and original, added by the caller)."""
        record = exported.record
        fields = {
            f.name: _plain(getattr(record, f.name))
            for f in dataclasses.fields(DocumentRecord)
            if f.name not in _RECORD_LEFT_OUT
        }
        line: dict[str, Any] = {
            "record": fields,
            "text": exported.text,
            "chunks": [
                _chunk_out(chunk, section)
                for chunk, section in zip(exported.chunks, exported.sections, strict=True)
            ],
            "vectors": None,
            "upload": record.uploaded,
            "original": None,
            "tags": list(exported.tags),
            "regions": [
                [region.page, region.start, region.end, [list(box) for box in region.boxes]]
                for region in exported.regions
            ],
        }
        if record.uploaded:
            name = self._originals.display_name(record)
            if key is not None:
                line["sealed_name"] = key.seal_name(name, record.id)
            else:
                line["name"] = name
            counts["uploads"] += 1
        counts["documents"] += 1
        counts["chunks"] += len(exported.chunks)
        return line

    # -- import --------------------------------------------------------------------------------
    def import_kb(
        self,
        source: Path | IO[bytes],
        *,
        name: str | None = None,
        replace: bool = False,
        reembed: bool = False,
        key: str | None = None,
        caller: Caller | None = None,
    ) -> ImportSummary:
        """Read an export into this store as a new base (``name``: under another name than
        the exported one; ``replace``: in place of a base of that name; ``reembed``: without
        its vectors, when they are not of the embedder the base is embedded with here — the
        next sync makes them; ``key``: the passphrase its originals are sealed under)."""
        _admin_only(caller)
        started = time.perf_counter()
        with open_archive(str(source) if isinstance(source, Path) else source) as archive:
            manifest = read_manifest(archive)
            checked = _check_members(archive, manifest)
            export_key = self._export_key(manifest, checked, key)
            settings = _mapping(manifest.get("base"), "base")
            scope, owner, team_id, kb_name = self._place(settings, name, caller)
            embedder, identity = self._identity(settings, manifest, reembed)
            replacing = self._replacing(kb_name, scope, owner, team_id, replace)
            replaced_uploads = (
                [d.id for d in self._store.list_documents(replacing) if d.uploaded]
                if replacing is not None
                else []
            )
            taken = self._store.taken_document_ids(checked.ids)
            remap = {old: _fresh_id(checked.ids) for old in taken}
            base = ImportedBase(
                name=kb_name,
                description=str(settings.get("description") or ""),
                scope=scope,
                owner=owner,
                team_id=team_id,
                chunk_settings=_chunk_settings(settings.get("chunk_settings")),
                embedder=embedder,
                identity=identity,
                sources=_sources(manifest.get("sources")),
                created_at=_number(settings.get("created_at")),
                pass_finished_at=_number(settings.get("pass_finished_at")),
            )
            written: list[str] = []
            counted = {"vectors": 0}
            try:
                if export_key is not None:
                    for exported_id, member in checked.originals.items():
                        new_id = remap.get(exported_id, exported_id)
                        with archive.open(member) as handle:
                            written.append(new_id)
                            self._originals.blobs.put(
                                new_id, export_key.open_stream(exported_id, handle)
                            )
                documents = self._documents(
                    archive, manifest, remap, export_key, identity, reembed, counted
                )
                kb = self._store.import_kb(base, documents, replacing=replacing)
            except BaseException:
                for document_id in written:
                    with contextlib.suppress(OSError, LorebaseError):
                        self._originals.blobs.delete(document_id)
                raise
        for document_id in replaced_uploads:
            with contextlib.suppress(OSError, LorebaseError):
                self._originals.blobs.delete(document_id)
        self._access.audit(caller, "import_knowledge_base", f"kb:{kb.id}")
        made = self._store.get_kb_by_id(kb.id)
        if self._events is not None:
            if replacing is not None:
                self._events.publish("knowledge_base", replacing, state="deleted")
            self._events.publish(
                "knowledge_base",
                made.id,
                state=made.state.value,
                documents=made.documents,
                chunks=made.chunks,
            )
        return ImportSummary(
            kb=made,
            documents=len(checked.ids),
            chunks=checked.chunks,
            vectors=counted["vectors"],
            originals=len(written),
            renumbered=len(remap),
            replaced=replacing is not None,
            reembed=identity is None and _identity_in(manifest.get("identity")) is not None,
            seconds=time.perf_counter() - started,
        )

    def _export_key(
        self, manifest: Mapping[str, Any], checked: _Checked, passphrase: str | None
    ) -> ExportKey | None:
        """The export's key when it has sealed parts (``InvalidInput`` without a passphrase,
        or with another one than it was sealed with)."""
        if manifest.get("sealing") is None:
            return None
        if passphrase is None:
            raise InvalidInput(
                f"this export seals the originals and names of its {checked.uploads} uploaded "
                f"files: give the passphrase it was exported with (--key-file, or {KEY_ENV})"
            )
        return ExportKey.of(passphrase, dict(manifest))

    def _place(
        self, settings: Mapping[str, Any], name: str | None, caller: Caller | None
    ) -> tuple[Scope, str | None, int | None, str]:
        """The scope, owner, team and name of the base to make."""
        kb_name = checked_name(
            name if name is not None else str(settings.get("name") or ""), "knowledge base name"
        )
        if not kb_name:
            raise InvalidInput("give the base a name with --kb NAME")
        try:
            scope = Scope(str(settings.get("scope")))
        except ValueError:
            raise damaged("its manifest names an unknown scope") from None
        team_id = None
        if scope is Scope.TEAM:
            team = settings.get("team")
            try:
                team_id = self._access.team_id(str(team), caller) if team else None
            except NotFound:
                team_id = None
            if team_id is None:
                raise InvalidInput(
                    f"this export is of a base of the team {team or '(unnamed)'}, which this "
                    "lorebase has not: create that team (`lorebase teams create NAME`), then "
                    "import again"
                )
        self._access.check_create(caller, scope, team_id)
        owner = caller.user.name if caller is not None else None
        return scope, owner, team_id, kb_name

    def _identity(
        self, settings: Mapping[str, Any], manifest: Mapping[str, Any], reembed: bool
    ) -> tuple[str | None, EmbedderIdentity | None]:
        """The named embedder the base gets here (the export's name when it is configured
        here, else the process's own: None) and the identity of the vectors it keeps (None:
        none kept). Vectors of another identity than that embedder's are refused, with what
        to do, unless ``reembed``."""
        exported = _identity_in(manifest.get("identity"))
        named = settings.get("embedder")
        name = named if isinstance(named, str) and named in self._embedders.names() else None
        if exported is None:
            return name, None
        if reembed:
            return name, None
        embedder = self._embedders.get(name)
        here = embedder.identity if embedder is not None else None
        if here == exported:
            return name, exported
        what = (
            f"{here.model} ({here.dim} dimensions)"
            if here is not None
            else "no embedder (keyword search only)"
        )
        configure = (
            f"configure the embedder {named} here as it was there (the embedders file) and "
            "import again"
            if isinstance(named, str)
            else f"run this import with the embedder it was made with ({exported.model}: "
            "LOREBASE_EMBEDDER and its model)"
        )
        raise InvalidInput(
            f"this export's vectors were made by {exported.model} ({exported.dim} dimensions), "
            f"but the base would be embedded here by {shown_name(name)}: {what}; {configure}, "
            "or import with --reembed to leave the vectors out (the documents are found by "
            "keyword at once; the next `lorebase sync` embeds them)"
        )

    def _replacing(
        self,
        kb_name: str,
        scope: Scope,
        owner: str | None,
        team_id: int | None,
        replace: bool,
    ) -> int | None:
        """The base of that name in that scope an import replaces (``Conflict`` when there
        is one and ``replace`` is not asked)."""
        same = [
            kb
            for kb in self._store.list_kbs(totals=False)
            if kb.name == kb_name
            and kb.scope is scope
            and (scope is not Scope.PERSONAL or kb.owner == owner)
            and (scope is not Scope.TEAM or kb.team_id == team_id)
        ]
        if not same:
            return None
        if not replace:
            raise Conflict(
                f"a knowledge base named {kb_name!r} already exists here; import with "
                "--replace to replace it (everything in it goes), or with --kb NAME to import "
                "under another name"
            )
        return same[0].id

    def _documents(
        self,
        archive: zipfile.ZipFile,
        manifest: Mapping[str, Any],
        remap: Mapping[str, str],
        key: ExportKey | None,
        identity: EmbedderIdentity | None,
        reembed: bool,
        counted: dict[str, int],
    ) -> Iterator[ImportedDocument]:
        """The documents to write, read as the store consumes them: ids taken here given
        anew, upload names sealed under this data key, vectors read in order (or left out)."""
        members = manifest["members"]
        vectors = archive.open(VECTORS) if identity is not None and VECTORS in members else None
        dim = identity.dim if identity is not None else 0
        row = 0
        try:
            for raw in read_member_lines(archive, DOCUMENTS):
                item = json.loads(raw)
                fields = dict(item["record"])
                exported_id = str(fields["id"])
                fields["id"] = remap.get(exported_id, exported_id)
                fields["metadata"] = {
                    str(k): tuple(v) if isinstance(v, list) else v
                    for k, v in (fields.get("metadata") or {}).items()
                }
                if reembed:
                    fields["versions"] = None  # read again (and embedded) by the next sync
                if item.get("upload"):
                    plain = (
                        key.open_name(item["sealed_name"], exported_id)
                        if key is not None and "sealed_name" in item
                        else str(item.get("name") or "")
                    )
                    fields["display_name"] = self._originals.seal_name(plain)
                chunks = [_chunk_in(c) for c in item.get("chunks") or []]
                matrix = None
                placed = item.get("vectors")
                if vectors is not None and placed is not None and chunks:
                    rows = int(placed["rows"])
                    if int(placed["row"]) != row or rows != len(chunks):
                        raise damaged("a document's vectors are not where its line says")
                    data = vectors.read(rows * dim * 4)
                    if len(data) != rows * dim * 4:
                        raise damaged("the vectors end before the last document's")
                    matrix = np.frombuffer(data, dtype="<f4").reshape(rows, dim).astype(np.float32)
                    row += rows
                    counted["vectors"] += rows
                yield ImportedDocument(
                    fields=fields,
                    text=item.get("text"),
                    chunks=chunks,
                    vectors=matrix,
                    tags=[str(tag) for tag in item.get("tags") or []],
                    regions=[
                        Region(int(page), int(start), int(end), tuple(_box(b) for b in boxes))
                        for page, start, end, boxes in item.get("regions") or []
                    ],
                )
        except (KeyError, TypeError, ValueError):
            raise damaged("a document's line is not what an export writes") from None
        finally:
            if vectors is not None:
                vectors.close()


# -- helpers ---------------------------------------------------------------------------------
def _version() -> str:
    """This lorebase's version, as installed (the package root is not imported from here)."""
    try:
        return importlib.metadata.version("lorebase")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - run from a checkout
        return "unknown"


def _admin_only(caller: Caller | None) -> None:
    if caller is not None and not caller.is_admin:
        raise Forbidden(
            "exporting and importing a knowledge base is for administrators; ask one to do it"
        )


def _copy_in(
    archive: zipfile.ZipFile, name: str, handle: IO[bytes], *, compress: bool
) -> dict[str, Any]:
    """Copy a temporary file into the zip as member ``name``; its manifest entry."""
    handle.seek(0)
    writer = MemberWriter(archive, name, compress=compress)
    while block := handle.read(READ_BLOCK):
        writer.write(block)
    return writer.close()


def _check_members(archive: zipfile.ZipFile, manifest: Mapping[str, Any]) -> _Checked:
    """Every member checked against its size and checksum before anything is written; the
    documents' ids, uploads and originals learned on the way."""
    members: Mapping[str, Any] = manifest["members"]
    checked = _Checked()
    seen: set[str] = set()
    try:
        for raw in check_member(archive, DOCUMENTS, members[DOCUMENTS], lines=True):
            item = json.loads(raw)
            document_id = item["record"]["id"]
            if not isinstance(document_id, str) or not DOCUMENT_ID.match(document_id):
                raise damaged("a document has an id an export does not write")
            if document_id in seen:
                raise damaged("two documents share an id")
            seen.add(document_id)
            checked.ids.append(document_id)
            checked.chunks += len(item.get("chunks") or [])
            if item.get("upload"):
                checked.uploads += 1
            original = item.get("original")
            if original is not None:
                if original not in members or not str(original).startswith("originals/"):
                    raise damaged("a document names an original the file does not hold")
                checked.originals[document_id] = str(original)
    except (KeyError, TypeError, ValueError):
        raise damaged("a document's line is not what an export writes") from None
    for name, entry in members.items():
        if name != DOCUMENTS:
            for _ in check_member(archive, name, entry):
                pass
    identity = _identity_in(manifest.get("identity"))
    if VECTORS in members:
        if identity is None:
            raise damaged("it holds vectors without their identity")
        if members[VECTORS]["size"] % (identity.dim * 4):
            raise damaged("its vectors are not whole rows")
    return checked


def _fresh_id(avoid: list[str]) -> str:
    while (candidate := new_document_id()) in avoid:  # pragma: no cover - 2**-64 odds
        pass
    return candidate


def _plain(value: Any) -> Any:
    """A record's value as JSON holds it."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if hasattr(value, "value") and not isinstance(value, int | float | str):
        return value.value  # an enum
    return value


def _chunk_out(chunk: Chunk, section: int) -> dict[str, Any]:
    position = chunk.position
    return {
        "id": chunk.id,
        "ordinal": chunk.ordinal,
        "text": chunk.text,
        "tokens": chunk.tokens,
        "content_hash": chunk.content_hash,
        "section": section,
        "trail": list(position.trail),
        "start": position.start,
        "end": position.end,
        "content_kind": position.content_kind.value,
        "page": position.page,
        "page_end": position.page_end,
        "line": position.line,
        "line_end": position.line_end,
        "language": position.language,
        "symbol": position.symbol,
    }


def _chunk_in(item: Mapping[str, Any]) -> Chunk:
    position = Position(
        trail=tuple(str(t) for t in item["trail"]),
        start=int(item["start"]),
        end=int(item["end"]),
        content_kind=ContentKind(item["content_kind"]),
        page=item.get("page"),
        page_end=item.get("page_end"),
        line=item.get("line"),
        line_end=item.get("line_end"),
        language=item.get("language"),
        symbol=item.get("symbol"),
    )
    return Chunk(
        id=str(item["id"]),
        ordinal=int(item["ordinal"]),
        text=str(item["text"]),
        embed_text="",
        tokens=int(item["tokens"]),
        content_hash=str(item["content_hash"]),
        position=position,
    )


def _identity_out(identity: EmbedderIdentity | None) -> dict[str, Any] | None:
    if identity is None:
        return None
    return {
        "model": identity.model,
        "digest": identity.digest,
        "transform": identity.transform,
        "dim": identity.dim,
    }


def _identity_in(value: object) -> EmbedderIdentity | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise damaged("its manifest records an unreadable embedding identity")
    try:
        dim = int(value["dim"])
        identity = EmbedderIdentity(
            model=str(value["model"]),
            digest=str(value["digest"]),
            dim=dim,
            transform=str(value.get("transform", "none")),
        )
    except (KeyError, TypeError, ValueError):
        raise damaged("its manifest records an unreadable embedding identity") from None
    if not 1 <= dim <= 65536:
        raise damaged("its manifest records an impossible vector dimension")
    return identity


def _mapping(value: object, what: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise damaged(f"its manifest records no {what}")
    return value


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def _chunk_settings(value: object) -> ChunkSettings:
    settings = _mapping(value, "chunk settings")
    try:
        return ChunkSettings(
            chunk_size=int(settings["chunk_size"]),
            max_tokens=int(settings["max_tokens"]),
            overlap=int(settings["overlap"]),
        )
    except (KeyError, TypeError, ValueError):
        raise damaged("its manifest records unreadable chunk settings") from None


def _sources(value: object) -> list[ImportedSource]:
    if not isinstance(value, list):
        raise damaged("its manifest records no sources")
    try:
        return [
            ImportedSource(
                path=str(item["path"]),
                label=str(item["label"]),
                kind=SourceKind(item["kind"]),
                created_at=float(item["created_at"]),
                exported_id=int(item["id"]),
            )
            for item in value
        ]
    except (KeyError, TypeError, ValueError):
        raise damaged("its manifest records unreadable sources") from None


__all__ = ["KEY_ENV", "ExportSummary", "ImportSummary", "Portability"]


def _box(value: Any) -> tuple[float, float, float, float]:
    """One OCR box of an export's line (four numbers; ``ValueError`` otherwise)."""
    x0, y0, x1, y1 = (float(v) for v in value)
    return (x0, y0, x1, y1)
