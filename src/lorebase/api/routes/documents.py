"""Documents: upload, list, get, tag, a page as a picture, text, surrounding chunks, reindex,
delete."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Literal

from fastapi import APIRouter, Path, Query, Response, UploadFile, status

from lorebase.api.convert import document_out
from lorebase.api.deps import CallerDep, DocumentId, KbId, LbDep
from lorebase.api.limits import UPLOAD_PATH
from lorebase.api.schemas import (
    ChunkingIn,
    ChunkOut,
    DocumentOut,
    DocumentPatch,
    TextOut,
    UploadOut,
)
from lorebase.errors import InvalidInput
from lorebase.service import DocumentState
from lorebase.service.listing import MAX_NAME_FILTER, MAX_PAGE, DocumentListing, SortKey
from lorebase.service.pages import DEFAULT_PAGE_WIDTH, MAX_PAGE_WIDTH, MIN_PAGE_WIDTH
from lorebase.settings import ChunkSettings
from lorebase.types import Position

router = APIRouter(tags=["documents"])

READ_CHUNK = 1024 * 1024
MAX_TEXT_CHARS = 100_000
MAX_FILES_PER_UPLOAD = 100
MAX_CHUNKS = 100  # one page of a document's chunks
MAX_PREVIEW_CHUNKS = 1000


def _chunks(upload: UploadFile) -> Iterator[bytes]:
    while block := upload.file.read(READ_CHUNK):
        yield block


@router.post(UPLOAD_PATH, response_model=UploadOut, status_code=status.HTTP_202_ACCEPTED)
def upload_documents(
    kb_id: KbId, files: list[UploadFile], lb: LbDep, caller: CallerDep
) -> UploadOut:
    """Upload files (multipart, field `files`; together at most the server's upload limit,
    `--max-upload-mb`). Each is stored encrypted and queued: the answer comes at once with the
    document ids; `GET /v1/documents/{id}` or the event stream tells when they are indexed.
    Identical bytes already in the base return the existing document."""
    kb = lb.kb_by_id(kb_id, caller, write=True)
    if not files or len(files) > MAX_FILES_PER_UPLOAD:
        raise InvalidInput(f"send 1 to {MAX_FILES_PER_UPLOAD} files in the field `files`")
    for upload in files:  # every name first: one refused, none is stored
        lb.upload_kind(upload.filename or "upload")
    documents, created = [], []
    for upload in files:
        record, new = lb.upload(kb, upload.filename or "upload", _chunks(upload), caller=caller)
        documents.append(document_out(lb, record))
        created.append(new)
    return UploadOut(documents=documents, created=created)


TOTAL_HEADER = "X-Total-Count"


@router.get("/v1/knowledge-bases/{kb_id}/documents", response_model=list[DocumentOut])
def list_documents(
    kb_id: KbId,
    lb: LbDep,
    caller: CallerDep,
    response: Response,
    state: Annotated[DocumentState | None, Query()] = None,
    q: Annotated[
        str | None, Query(max_length=MAX_NAME_FILTER, description="Name contains (any case).")
    ] = None,
    sort: Annotated[SortKey | None, Query(description="Order by this field.")] = None,
    order: Annotated[Literal["asc", "desc"], Query()] = "asc",
    limit: Annotated[int | None, Query(ge=1, le=MAX_PAGE, description="At most this many.")] = None,
    offset: Annotated[int, Query(ge=0)] = 0,
) -> list[DocumentOut]:
    """The base's documents with state, chunks and failure reason; filtered by `state` and
    name (`q`), ordered by `sort`, one page of `limit` from `offset`. `X-Total-Count` tells
    how many match in all."""
    listing = DocumentListing(
        state=state,
        name_contains=q,
        sort=sort,
        descending=order == "desc",
        limit=limit,
        offset=offset,
    )
    page = lb.document_page(lb.kb_by_id(kb_id, caller), listing)
    response.headers[TOTAL_HEADER] = str(page.total)
    return [document_out(lb, d) for d in page.documents]


@router.post("/v1/knowledge-bases/{kb_id}/reindex", status_code=status.HTTP_202_ACCEPTED)
def reindex_all(kb_id: KbId, lb: LbDep, caller: CallerDep) -> dict[str, int]:
    """Index every document again in the background: uploads through the ingestion queue,
    folder documents in one pass over the base's folders."""
    return {"queued": lb.reindex(lb.kb_by_id(kb_id, caller, write=True), caller=caller)}


@router.get("/v1/documents/{document_id}", response_model=DocumentOut)
def get_document(document_id: DocumentId, lb: LbDep, caller: CallerDep) -> DocumentOut:
    kb, document = lb.document(document_id, caller)
    return document_out(lb, document, lb.fields_of(kb, document), lb.user_tags(kb, document))


@router.patch("/v1/documents/{document_id}", response_model=DocumentOut)
def patch_document(
    document_id: DocumentId, body: DocumentPatch, lb: LbDep, caller: CallerDep
) -> DocumentOut:
    """Set and remove tags people set on a document (searchable at once with a `tags`
    filter); 422 when a tag to remove comes from the document's own file."""
    kb, document = lb.document(document_id, caller, write=True)
    tags = lb.tag_document(kb, document, add=body.add_tags, remove=body.remove_tags, caller=caller)
    return document_out(lb, document, lb.fields_of(kb, document), tags)


@router.delete("/v1/documents/{document_id}", status_code=status.HTTP_204_NO_CONTENT)
def delete_document(document_id: DocumentId, lb: LbDep, caller: CallerDep) -> Response:
    """Purge every row of the document in one transaction, then its stored original."""
    kb, document = lb.document(document_id, caller, write=True)
    lb.delete_document(kb, document, caller=caller)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.post("/v1/documents/{document_id}/reindex", status_code=status.HTTP_202_ACCEPTED)
def reindex_document(document_id: DocumentId, lb: LbDep, caller: CallerDep) -> dict[str, str]:
    kb, document = lb.document(document_id, caller, write=True)
    lb.reindex(kb, document, caller=caller)
    return {"status": "queued"}


@router.get(
    "/v1/documents/{document_id}/pages/{page}",
    response_class=Response,
    responses={200: {"content": {"image/png": {}}, "description": "The page as PNG."}},
)
def document_page(
    document_id: DocumentId,
    page: Annotated[int, Path(ge=1, le=100_000)],
    lb: LbDep,
    caller: CallerDep,
    chunk: Annotated[str | None, Query(max_length=64, pattern=r"^[A-Za-z0-9_.:-]+$")] = None,
    width: Annotated[int, Query(ge=MIN_PAGE_WIDTH, le=MAX_PAGE_WIDTH)] = DEFAULT_PAGE_WIDTH,
) -> Response:
    """A page of a PDF document as PNG, with the passage `chunk` (a chunk id of this
    document, from a search hit) marked where it stands; `X-Page-Count` tells the pages, and
    `X-Marked-Boxes` how many boxes mark the passage (0: not found on this page — a scanned
    page has no text to find it by). 404 for a page out of range or a document that is no
    PDF file; 409 when the file changed since it was indexed."""
    kb, document = lb.document(document_id, caller)
    image = lb.page_image(kb, document, page, chunk_id=chunk, width=width)
    return Response(
        content=image.png,
        media_type="image/png",
        headers={
            "Cache-Control": "private, max-age=300",
            "X-Page-Count": str(image.pages),
            "X-Marked-Boxes": str(len(image.boxes)),
        },
    )


@router.get("/v1/documents/{document_id}/text", response_model=TextOut)
def document_text(
    document_id: DocumentId,
    lb: LbDep,
    caller: CallerDep,
    start: Annotated[int, Query(ge=0)] = 0,
    max_chars: Annotated[int, Query(ge=1, le=MAX_TEXT_CHARS)] = 20_000,
) -> TextOut:
    """A bounded window of the extracted text (chunk offsets index into it)."""
    kb, document = lb.document(document_id, caller)
    text = lb.text(kb, document.id)
    return TextOut(
        document_id=document.id,
        start=start,
        text=text[start : start + max_chars],
        total_chars=len(text),
    )


@router.get("/v1/documents/{document_id}/chunks", response_model=list[ChunkOut])
def surrounding_chunks(
    document_id: DocumentId,
    lb: LbDep,
    caller: CallerDep,
    around: Annotated[str | None, Query(max_length=64)] = None,
    window: Annotated[int, Query(ge=0, le=5)] = 1,
    start: Annotated[int, Query(ge=0)] = 0,
    limit: Annotated[int, Query(ge=1, le=MAX_CHUNKS)] = 20,
) -> list[ChunkOut]:
    """With `around`: that chunk and up to `window` chunks each side of it, in order. Without:
    the document's chunks in order from ordinal `start`, at most `limit` (what the index holds
    of it)."""
    kb, document = lb.document(document_id, caller)
    if around is None:
        chunks = lb.chunks_of(kb, document.id, start, limit)
    else:
        chunks = lb.neighbors(kb, around, window)
    embedded = document.identity_key is not None and document.identity_key == kb.identity_key
    return [
        _chunk_out(c.id, c.ordinal, c.text, c.tokens, c.provenance, embedded)
        for c in chunks
        if c.provenance.document_id == document.id
    ]


@router.post("/v1/documents/{document_id}/rechunk-preview", response_model=list[ChunkOut])
def rechunk_preview(
    document_id: DocumentId, body: ChunkingIn, lb: LbDep, caller: CallerDep
) -> list[ChunkOut]:
    """The chunks the document would have with these chunk settings (read again from its
    file or original; nothing is stored), for whoever may change the base: look before
    `PATCH /v1/knowledge-bases/{id}` re-chunks every document."""
    kb, document = lb.document(document_id, caller, write=True)
    settings = ChunkSettings(
        chunk_size=body.chunk_size, max_tokens=body.max_tokens, overlap=body.overlap
    )
    return [
        _chunk_out(c.id, c.ordinal, c.text, c.tokens, c.position, None)
        for c in lb.rechunk_preview(kb, document, settings)[:MAX_PREVIEW_CHUNKS]
    ]


def _chunk_out(
    chunk_id: str, ordinal: int, text: str, tokens: int, where: Position, embedded: bool | None
) -> ChunkOut:
    return ChunkOut(
        chunk_id=chunk_id,
        ordinal=ordinal,
        text=text,
        trail=list(where.trail),
        page=where.page,
        line=where.line,
        page_end=where.page_end,
        content_kind=where.content_kind.value,
        language=where.language,
        tokens=tokens,
        embedded=embedded,
    )
