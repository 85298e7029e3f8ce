"""Documents: upload, list, get, text, surrounding chunks, reindex, delete."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from fastapi import APIRouter, Query, Response, UploadFile, status

from lorebase.api.convert import document_out
from lorebase.api.deps import CallerDep, DocumentId, KbId, ServerDep
from lorebase.api.schemas import ChunkOut, DocumentOut, TextOut, UploadOut
from lorebase.errors import InvalidInput
from lorebase.store.base import DocumentState

router = APIRouter(tags=["documents"])

READ_CHUNK = 1024 * 1024
MAX_TEXT_CHARS = 100_000
MAX_FILES_PER_UPLOAD = 100


def _chunks(upload: UploadFile) -> Iterator[bytes]:
    while block := upload.file.read(READ_CHUNK):
        yield block


@router.post(
    "/v1/knowledge-bases/{kb_id}/documents",
    response_model=UploadOut,
    status_code=status.HTTP_202_ACCEPTED,
)
def upload_documents(
    kb_id: KbId, files: list[UploadFile], server: ServerDep, caller: CallerDep
) -> UploadOut:
    """Upload files (multipart, field `files`). Each is stored encrypted and queued: the answer
    comes at once with the document ids; `GET /v1/documents/{id}` or the event stream tells
    when they are indexed. Identical bytes already in the base return the existing document."""
    kb = server.kb_for(caller, kb_id, write=True)
    if not files or len(files) > MAX_FILES_PER_UPLOAD:
        raise InvalidInput(f"send 1 to {MAX_FILES_PER_UPLOAD} files in the field `files`")
    documents, created = [], []
    for upload in files:
        record, new = server.upload(caller, kb, upload.filename or "upload", _chunks(upload))
        documents.append(document_out(server, record))
        created.append(new)
    return UploadOut(documents=documents, created=created)


@router.get("/v1/knowledge-bases/{kb_id}/documents", response_model=list[DocumentOut])
def list_documents(
    kb_id: KbId,
    server: ServerDep,
    caller: CallerDep,
    state: Annotated[DocumentState | None, Query()] = None,
) -> list[DocumentOut]:
    kb = server.kb_for(caller, kb_id)
    return [document_out(server, d) for d in server.lb.store.list_documents(kb.id, state)]


@router.post("/v1/knowledge-bases/{kb_id}/reindex", status_code=status.HTTP_202_ACCEPTED)
def reindex_all(kb_id: KbId, server: ServerDep, caller: CallerDep) -> dict[str, int]:
    kb = server.kb_for(caller, kb_id, write=True)
    documents = server.lb.store.list_documents(kb.id)
    for document in documents:
        server.requeue(kb, document)
    return {"queued": len(documents)}


@router.get("/v1/documents/{document_id}", response_model=DocumentOut)
def get_document(document_id: DocumentId, server: ServerDep, caller: CallerDep) -> DocumentOut:
    _, document = server.document_for(caller, document_id)
    return document_out(server, document)


@router.delete("/v1/documents/{document_id}", status_code=status.HTTP_204_NO_CONTENT)
def delete_document(document_id: DocumentId, server: ServerDep, caller: CallerDep) -> Response:
    """Purge every row of the document in one transaction, then its stored original."""
    kb, document = server.document_for(caller, document_id, write=True)
    server.delete_document(kb, document)
    server.audit(caller, "delete_document", f"document:{document.id}")
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.post("/v1/documents/{document_id}/reindex", status_code=status.HTTP_202_ACCEPTED)
def reindex_document(
    document_id: DocumentId, server: ServerDep, caller: CallerDep
) -> dict[str, str]:
    kb, document = server.document_for(caller, document_id, write=True)
    server.requeue(kb, document)
    return {"status": "queued"}


@router.get("/v1/documents/{document_id}/text", response_model=TextOut)
def document_text(
    document_id: DocumentId,
    server: ServerDep,
    caller: CallerDep,
    start: Annotated[int, Query(ge=0)] = 0,
    max_chars: Annotated[int, Query(ge=1, le=MAX_TEXT_CHARS)] = 20_000,
) -> TextOut:
    """A bounded window of the extracted text (chunk offsets index into it)."""
    kb, document = server.document_for(caller, document_id)
    text = server.lb.store.document_text(kb.id, document.id)
    return TextOut(document_id=document.id, start=start, text=text[start : start + max_chars],
                   total_chars=len(text))  # fmt: skip


@router.get("/v1/documents/{document_id}/chunks", response_model=list[ChunkOut])
def surrounding_chunks(
    document_id: DocumentId,
    around: str,
    server: ServerDep,
    caller: CallerDep,
    window: Annotated[int, Query(ge=0, le=5)] = 1,
) -> list[ChunkOut]:
    """The chunk `around` and up to `window` chunks each side of it, in order."""
    kb, document = server.document_for(caller, document_id)
    chunks = server.lb.store.neighbors([kb.id], around, window)
    return [
        ChunkOut(chunk_id=c.id, ordinal=c.ordinal, text=c.text, trail=list(c.provenance.trail),
                 page=c.provenance.page, line=c.provenance.line)
        for c in chunks
        if c.provenance.document_id == document.id
    ]  # fmt: skip
