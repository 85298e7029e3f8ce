"""Rows to records and records to rows, for every backend: the column lists a store selects
and writes (the same names in each backend's tables) and the small functions that map them,
kept apart from the code that runs the statements."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Sequence
from pathlib import PurePosixPath
from typing import Any

from lorebase.errors import Conflict, InvalidInput, NotFound
from lorebase.fields import DATE_FIELDS, PAST_PREFIX, Condition, Op
from lorebase.formats import CODE_LANGUAGES
from lorebase.settings import ChunkSettings
from lorebase.store import stored_chunk_id
from lorebase.store.base import (
    MAX_SOURCES,
    DocumentRecord,
    KnowledgeBase,
    NewDocument,
    RunningVersions,
    Source,
    StoredChunk,
)
from lorebase.store.document_text import chunk_text
from lorebase.store.restriction import Restriction
from lorebase.store.states import DocumentState, KbState, Scope, SourceKind, ambiguous
from lorebase.types import Chunk, ContentKind, Provenance

KB_FIELDS = (
    "id",
    "name",
    "description",
    "scope",
    "owner",
    "chunk_size",
    "max_tokens",
    "overlap",
    "identity_key",
    "created_at",
    "state",
    "state_reason",
    "pass_started_at",
    "pass_finished_at",
    "progress_done",
    "progress_total",
    "team_id",
    "embedder",
    "embedder_next",
    "progress_rate",
    "progress_left",
)
KB_COLUMNS = ", ".join(KB_FIELDS)

DOCUMENT_FIELDS = (
    "id",
    "kb_id",
    "path",
    "kind",
    "size",
    "content_hash",
    "state",
    "mtime",
    "title",
    "page_count",
    "reason",
    "chunk_count",
    "identity_key",
    "settings_key",
    "updated_at",
    "source_id",
    "display_name",
    "container",
    "metadata",
    "versions",
)
DOCUMENT_COLUMNS = ", ".join(DOCUMENT_FIELDS)

STORED_CHUNK_FIELDS = {  # name -> the expression that selects it
    "id": "c.id",
    "ordinal": "c.ordinal",
    "text": "c.text",
    "tokens": "c.tokens",
    # the rest is the chunk's Provenance, one entry per field
    "knowledge_base": "k.name",
    "knowledge_base_id": "c.kb_id",
    "document_id": "c.document_id",
    "path": "d.path",
    "title": "d.title",
    "kind": "d.kind",
    "uploaded": "d.display_name IS NOT NULL",
    "trail": "c.trail",
    "start": "c.start_offset",
    "end": "c.end_offset",
    "content_kind": "c.content_kind",
    "page": "c.page",
    "page_end": "c.page_end",
    "line": "c.line",
    "language": "c.language",
    "symbol": "c.symbol",
}
STORED_CHUNK_SELECT = (
    f"SELECT {', '.join(STORED_CHUNK_FIELDS.values())} "
    "FROM chunks AS c JOIN documents AS d ON d.id = c.document_id "
    "JOIN knowledge_bases AS k ON k.id = c.kb_id"
)

CHUNK_INSERT_COLUMNS = (
    "id",
    "document_id",
    "kb_id",
    "section_id",
    "ordinal",
    "text",
    "trail",
    "start_offset",
    "end_offset",
    "line",
    "page",
    "page_end",
    "content_kind",
    "language",
    "symbol",
    "tokens",
    "content_hash",
)


def named(names: Iterable[str], row: Sequence[Any]) -> dict[str, Any]:
    """A row selected with the columns ``names``, keyed by name."""
    return dict(zip(names, row, strict=True))


def kb_from_row(row: Sequence[Any], totals: Sequence[int] | None) -> KnowledgeBase:
    """A knowledge base from a ``KB_COLUMNS`` row and its ``KB_TOTALS_SQL`` totals (after the
    kb_id column); None totals: a base without documents."""
    kb = named(KB_FIELDS, row)
    documents, indexed, failed, chunks, size, pending, searchable, embedded, embedded_chunks = (
        totals or (0,) * 9
    )
    return KnowledgeBase(
        id=kb["id"],
        name=kb["name"],
        description=kb["description"],
        scope=Scope(kb["scope"]),
        owner=kb["owner"],
        chunk_settings=ChunkSettings(
            chunk_size=kb["chunk_size"], max_tokens=kb["max_tokens"], overlap=kb["overlap"]
        ),
        identity_key=kb["identity_key"],
        created_at=kb["created_at"],
        documents=documents,
        indexed=indexed,
        failed=failed,
        chunks=chunks,
        bytes=size,
        pending=pending,
        searchable=searchable,
        embedded=embedded,
        embedded_chunks=embedded_chunks,
        state=KbState(kb["state"]),
        state_reason=kb["state_reason"],
        pass_started_at=kb["pass_started_at"],
        pass_finished_at=kb["pass_finished_at"],
        progress_done=kb["progress_done"],
        progress_total=kb["progress_total"],
        team_id=kb["team_id"],
        embedder=kb["embedder"],
        embedder_next=kb["embedder_next"],
        progress_rate=kb["progress_rate"],
        progress_left=kb["progress_left"],
    )


MOVED = (
    "the knowledge base switched to another embedder while this document was embedded; the "
    "next pass indexes it with the new one"
)
KB_EMBEDDING_COLUMNS = "identity_key, embedder, embedder_next"
OTHER_VECTORS_WHERE = (
    "kb_id = {p} AND state = 'indexed' AND identity_key IS NOT NULL AND identity_key <> {p}"
)


def refuses_vectors(row: Sequence[Any], identity_key: str) -> bool:
    """Whether a base (its ``KB_EMBEDDING_COLUMNS``) refuses vectors of ``identity_key``: a
    named base that is not being re-embedded takes its own identity's only (a pass or an
    upload that read the base before a re-embed switched it would otherwise leave the old
    model's vectors in it, never searched again). A base without a name follows the process
    embedder, as before. Pure."""
    current, embedder, moving = row
    return embedder is not None and moving is None and current not in (None, identity_key)


def document_from_row(row: Sequence[Any]) -> DocumentRecord:
    """A document from a ``DOCUMENT_COLUMNS`` row: its columns are the record's fields."""
    document = named(DOCUMENT_FIELDS, row)
    metadata = document["metadata"]
    if isinstance(metadata, str):  # SQLite's JSON text (PostgreSQL's jsonb comes parsed)
        metadata = json.loads(metadata)
    return DocumentRecord(
        **document
        | {
            "state": DocumentState(document["state"]),
            "metadata": {
                key: value if isinstance(value, str) else tuple(value)
                for key, value in (metadata or {}).items()
            },
        }
    )


def stored_chunk_from_row(row: Sequence[Any]) -> StoredChunk:
    """A chunk from a ``STORED_CHUNK_SELECT`` row: four columns of its own, the rest its
    provenance. Its text as stored, compressed or not (see
    :func:`~lorebase.store.document_text.chunk_text`). Unpacked in the order of
    :data:`STORED_CHUNK_FIELDS` (a search hydrates twenty of these: no dict per row)."""
    (
        chunk_id,
        ordinal,
        stored,
        tokens,
        knowledge_base,
        knowledge_base_id,
        document_id,
        path,
        title,
        kind,
        uploaded,
        trail,
        start,
        end,
        content_kind,
        page,
        page_end,
        line,
        language,
        symbol,
    ) = row
    text = chunk_text(stored, chunk_id)
    provenance = Provenance(
        knowledge_base=knowledge_base,
        knowledge_base_id=knowledge_base_id,
        document_id=document_id,
        path=path,
        title=title,
        kind=kind,
        uploaded=bool(uploaded),
        trail=_trail(trail),
        start=start,
        end=end,
        content_kind=ContentKind(content_kind),
        page=page,
        page_end=page_end,
        line=line,
        language=language,
        symbol=symbol,
        line_end=last_line(text, line, end - start),
    )
    return StoredChunk(chunk_id, ordinal, text, tokens, provenance)


@functools.lru_cache(maxsize=4096)
def _trail(stored: str) -> tuple[str, ...]:
    """A stored heading trail (a JSON list), read once however many chunks share it."""
    return tuple(json.loads(stored))


def last_line(text: str, line: int | None, length: int) -> int | None:
    """The last source line (a spreadsheet's last row) of a stored chunk whose first is
    ``line``: derived, not stored. ``length`` is its span in the document (its ``end`` less
    ``start``); a table's piece stored with its header row before it is longer than that.
    None when it is one line, or when lines are not known. Pure."""
    if line is None:
        return None
    last = line + text[max(0, len(text) - length) :].count("\n")
    return last if last != line else None


DOCUMENT_VALUE_COLUMNS = (  # the columns document_values() fills, in order
    "kind",
    "size",
    "mtime",
    "content_hash",
    "title",
    "page_count",
    "encoding",
    "source_id",
    "display_name",
    "container",
    "metadata",
    "versions",
)


def document_values(document: NewDocument) -> tuple[Any, ...]:
    """The columns every write of a document sets, in ``DOCUMENT_VALUE_COLUMNS`` order."""
    return (
        document.kind,
        document.size,
        document.mtime,
        document.content_hash,
        document.title,
        document.page_count,
        document.encoding,
        document.source_id,
        document.display_name,
        document.container,
        json.dumps(dict(document.metadata), ensure_ascii=False) if document.metadata else None,
        document.versions,
    )


def stale_sql(running: RunningVersions) -> tuple[str, list[Any]]:
    """The condition on ``documents`` that a document is stale (see
    :meth:`~lorebase.store.base.RunningVersions.stale`), and its parameters: settled, and its
    recorded versions (none: ``''``) not those its kind gets now. Pure."""
    kinds = sorted(running.by_kind)
    params: list[Any] = [value for kind in kinds for value in (kind, running.by_kind[kind])]
    cases = " ".join("WHEN ? THEN ?" for _ in kinds)
    expected = f"(CASE kind {cases} ELSE ? END)" if kinds else "?"
    return (
        f"state IN ('indexed', 'failed') AND coalesce(versions, '') <> {expected}",
        [*params, running.other],
    )


def chunk_row(
    chunk: Chunk, *, stored_id: str, document_id: str, kb_id: int, section_id: int
) -> dict[str, Any]:
    """The values of ``CHUNK_INSERT_SQL`` for one chunk, by column."""
    position = chunk.position
    return {
        "id": stored_id,
        "document_id": document_id,
        "kb_id": kb_id,
        "section_id": section_id,
        "ordinal": chunk.ordinal,
        "text": chunk.text,
        "trail": trail_json(position.trail),
        "start_offset": position.start,
        "end_offset": position.end,
        "line": position.line,
        "page": position.page,
        "page_end": position.page_end,
        "content_kind": str(position.content_kind),
        "language": position.language,
        "symbol": position.symbol,
        "tokens": chunk.tokens,
        "content_hash": chunk.content_hash,
    }


def trail_json(trail: Sequence[str]) -> str:
    return json.dumps(list(trail), ensure_ascii=False)


def sections_of(chunks: Sequence[Chunk]) -> list[tuple[tuple[str, ...], list[int]]]:
    """Runs of consecutive chunks that share a heading trail: ``(trail, chunk positions)``."""
    runs: list[tuple[tuple[str, ...], list[int]]] = []
    for position, chunk in enumerate(chunks):
        trail = tuple(chunk.position.trail)
        if runs and runs[-1][0] == trail:
            runs[-1][1].append(position)
        else:
            runs.append((trail, [position]))
    return runs


def check_chunks(chunks: Sequence[Chunk]) -> None:
    """Chunks of one document need distinct ordinals and ids (checked before writing)."""
    if len({chunk.ordinal for chunk in chunks}) != len(chunks):
        raise InvalidInput("two chunks of one document share an ordinal")
    if len({chunk.id for chunk in chunks}) != len(chunks):
        raise InvalidInput("two chunks of one document share an id")


KEYWORD_ONLY_WHERE = "chunk_count > 0 AND identity_key IS NULL"
"""The documents searchable by keyword without vectors (each backend's partial index on
``kb_id`` has exactly this predicate, so the count reads only them)."""


def check_awaiting(matrix: object | None, awaiting_vectors: bool) -> None:
    """A document written to await its vectors is written without them."""
    if awaiting_vectors and matrix is not None:
        raise InvalidInput("a document awaiting its vectors is written without vectors")


# -- the rules of a base's names and sources, for every backend ------------------------------
def source_from_row(row: Sequence[Any]) -> Source:
    return Source(
        int(row[0]), int(row[1]), str(row[2]), str(row[3]), float(row[4]), SourceKind(row[5])
    )


def new_source(path: str, kind: SourceKind, existing: Sequence[Source]) -> tuple[str, str]:
    """The path to follow (absolute, normalised) and its label, checked against the sources a
    base already follows: ``Conflict`` when it is, contains or lies inside one of them,
    ``InvalidInput`` when relative or past ``MAX_SOURCES`` folders."""
    followed = PurePosixPath(path)
    if not followed.is_absolute():
        raise InvalidInput(f"a source {kind} must be given as an absolute path")
    for source in existing:
        other = PurePosixPath(source.path)
        if followed == other:
            raise Conflict(f"this knowledge base already follows {path}")
        if followed.is_relative_to(other) or other.is_relative_to(followed):
            raise Conflict(
                f"{path} overlaps {source.path}, which this knowledge base already "
                "follows; sources may not lie inside one another"
            )
    folders = [s for s in existing if s.kind is SourceKind.FOLDER]
    if kind is SourceKind.FOLDER and len(folders) >= MAX_SOURCES:
        raise InvalidInput(f"a knowledge base follows at most {MAX_SOURCES} folders")
    taken = {s.label for s in existing}
    if kind is SourceKind.FILE:
        return str(followed), free_label(followed.stem, taken, followed.suffix)
    return str(followed), free_label(followed.name or "root", taken)


def free_label(name: str, taken: set[str], suffix: str = "") -> str:
    """The name, or ``name-2``, ``name-3``… when another source has it (a file's extension
    stays last: ``notes-2.md``)."""
    label, n = name + suffix, 1
    while label in taken:
        n += 1
        label = f"{name}-{n}{suffix}"
    return label


def name_taken(name: str, scope: Scope, owner: str | None, held_by: int | None) -> str:
    """The message for a name already used in the scope of the base being created (naming only
    that scope's base: one its creator may see)."""
    if scope is Scope.GLOBAL:
        whose = "a global knowledge base"
    elif scope is Scope.TEAM:
        whose = "a knowledge base of this team"
    else:
        whose = (
            "a personal knowledge base of yours" if owner else "an administrators' personal base"
        )
    held = f" (id {held_by})" if held_by is not None else ""
    return f"{whose}{held} is already named {name!r}; choose another name"


def kb_list(kb_ids: Sequence[int]) -> list[int]:
    """Knowledge base ids as a statement's parameter."""
    return [int(kb_id) for kb_id in kb_ids]


def document_list(document_ids: Sequence[str] | None) -> Restriction | None:
    """Document ids as a statement's parameter (None: no filter); a restriction as it is (it
    remembers what searches derive from it)."""
    return None if document_ids is None else Restriction.of(document_ids)


# A chunk's language when it is all code, else '' (a passage of a page around a code example).
_CODE_LANGUAGE = "coalesce(CASE WHEN c.content_kind = 'code' THEN lower(c.language) END, '')"


# A passage's natural language; passages written before languages were told are English.
_TEXT_LANGUAGE = "coalesce(lower(c.language), 'en')"


def is_programming_language(language: str) -> bool:
    """Whether a language filter names a programming language (``python``) rather than a
    natural one (``de``: an ISO 639 code). Pure."""
    return language.lower() in _PROGRAMMING_LANGUAGES


_PROGRAMMING_LANGUAGES = frozenset(CODE_LANGUAGES.values())


def matching_documents_query(
    kb_clause: str,
    mark: str,
    kb_ids: Any,
    *,
    path_prefix: str | None,
    language: str | None,
    conditions: Sequence[Condition] = (),
) -> tuple[str, list[Any]]:
    """The query, and its parameters, of the ids (in order) of the documents whose ``kb_id``
    passes ``kb_clause`` (``= ANY(%s)``, ``IN (SELECT value FROM json_each(?))``; ``kb_ids``
    as the backend binds them) and whose stored path starts with ``path_prefix``; with a
    programming ``language``, whose indexed chunks are all code (content kind) in it: a source
    file in it, not a page with a fenced example; with a natural language, that have passages
    in it (a German page quoting English is found by ``de`` and by ``en``); and whose fields
    meet every one of ``conditions`` (:func:`fields_query`).

    The field conditions are sets of ids read from the fields' index, intersected (and those a
    ``!=`` names taken away), so a filter matching thousands of documents never walks the
    documents' table; the documents' own conditions come first only when there are any (or
    when every field condition is a ``!=``). Pure."""
    positive = [c for c in conditions if c.op is not Op.NE]
    negative = [c for c in conditions if c.op is Op.NE]
    parts: list[tuple[str, list[Any]]] = []
    if path_prefix is not None or language is not None or not positive:
        parts.append(_documents_part(kb_clause, mark, kb_ids, path_prefix, language))
    parts += [fields_query(c, kb_clause, mark, kb_ids) for c in positive]
    sql = " INTERSECT ".join(part for part, _ in parts)
    params = [param for _, given in parts for param in given]
    for wanted in negative:
        part, given = fields_query(wanted, kb_clause, mark, kb_ids)
        sql += f" EXCEPT {part}"
        params += given
    return sql + " ORDER BY 1", params


def _documents_part(
    kb_clause: str, mark: str, kb_ids: Any, path_prefix: str | None, language: str | None
) -> tuple[str, list[Any]]:
    sql = f"SELECT d.id FROM documents AS d WHERE d.kb_id {kb_clause}"
    params: list[Any] = [kb_ids]
    if path_prefix is not None:
        sql += f" AND substr(d.path, 1, {len(path_prefix)}) = {mark}"
        params.append(path_prefix)
    if language is not None and is_programming_language(language):
        sql += (
            f" AND d.id IN (SELECT c.document_id FROM chunks AS c WHERE c.kb_id {kb_clause} "
            "GROUP BY c.document_id "
            f"HAVING min({_CODE_LANGUAGE}) = {mark} AND max({_CODE_LANGUAGE}) = {mark})"
        )
        params += [kb_ids, language.lower(), language.lower()]
    elif language is not None:
        sql += (
            f" AND d.id IN (SELECT c.document_id FROM chunks AS c WHERE c.kb_id {kb_clause} "
            f"AND c.content_kind <> 'code' AND {_TEXT_LANGUAGE} = {mark})"
        )
        params += [kb_ids, language.lower()]
    return sql, params


def fields_query(
    wanted: Condition, kb_clause: str, mark: str, kb_ids: Any
) -> tuple[str, list[Any]]:
    """The query, and its parameters, of the ids of the documents with a value of ``wanted``'s
    field that it names — among its values (a date field: a date within one of the given
    ones, so ``date=2025-03`` holds for every day of March), or, for a range, a date in it; a
    ``!=`` names the same set, which :func:`matching_documents_query` takes away. The fields'
    index ``(kb_id, field, folded, document_id)`` answers it alone. Pure."""
    sql = (
        f"SELECT f.document_id FROM document_fields AS f WHERE f.kb_id {kb_clause} "
        f"AND f.field = {mark}"
    )
    params: list[Any] = [kb_ids, wanted.field]
    if wanted.op.is_range:
        # Dates only: a value that is not one (it starts with a digit) is never in range.
        sql += f" AND f.folded >= {mark} AND f.folded < {mark}"
        params += ["0", ":"]
        for bound, op in zip(wanted.bounds(), (">=", "<"), strict=True):
            if bound is not None:
                sql += f" AND f.folded {op} {mark}"
                params.append(bound)
    elif wanted.field in DATE_FIELDS:
        sql += (
            " AND ("
            + " OR ".join(f"(f.folded >= {mark} AND f.folded < {mark})" for _ in wanted.values)
            + ")"
        )
        params += [bound for value in wanted.values for bound in (value, value + PAST_PREFIX)]
    else:
        sql += f" AND f.folded IN ({', '.join([mark] * len(wanted.values))})"
        params += list(wanted.values)
    return sql, params


def one_named(name: str, named: Sequence[KnowledgeBase]) -> KnowledgeBase:
    """The one base of ``named`` (every base called ``name``): ``NotFound`` when there is
    none, ``InvalidInput`` listing their ids and scopes when several share the name."""
    if len(named) > 1:
        raise InvalidInput(ambiguous(name, named))
    if not named:
        raise NotFound(f"no knowledge base named {name!r}; list them to see the names")
    return named[0]


def stored_ids_of(document_id: str, chunks: Sequence[Chunk], present: Iterable[str]) -> list[str]:
    """The stored ids of ``chunks`` (see :func:`lorebase.store.stored_chunk_id`), checked
    against the ids the document holds now (``present``): a vector write names exactly the
    chunks stored, else the document changed since and ``Conflict`` is raised. Pure."""
    stored = [stored_chunk_id(document_id, chunk.id) for chunk in chunks]
    if set(stored) != set(present):
        raise Conflict("the document's chunks changed; index it again instead")
    return stored


SOURCE_REMOVED = (
    "the folder or file this document came from is no longer followed by its base (it was "
    "removed during the pass): the document is not written"
)
