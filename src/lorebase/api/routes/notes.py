"""Notes: write one into a base, list a base's, read, edit (keeping versions), delete."""

from __future__ import annotations

from fastapi import APIRouter, Response, status

from lorebase.api.deps import CallerDep, DocumentId, KbId, LbDep
from lorebase.api.schemas import NoteIn, NoteOut, NotePatch, NoteVersionOut
from lorebase.errors import InvalidInput
from lorebase.service import DocumentRecord, Lorebase
from lorebase.service.notes import NOT_A_NOTE, is_note

router = APIRouter(tags=["notes"])


def _note_out(
    lb: Lorebase, document: DocumentRecord, *, text: bool = True, created: bool | None = None
) -> NoteOut:
    title, body = lb.note_content(document)
    return NoteOut(
        id=document.id,
        knowledge_base_id=document.kb_id,
        title=title,
        text=body if text else None,
        state=document.state.value,
        chunks=document.chunk_count,
        updated_at=document.updated_at,
        created=created,
    )


@router.post(
    "/v1/knowledge-bases/{kb_id}/notes",
    response_model=NoteOut,
    status_code=status.HTTP_201_CREATED,
    responses={200: {"model": NoteOut, "description": "The same note was there already."}},
)
def add_note(
    kb_id: KbId, body: NoteIn, lb: LbDep, caller: CallerDep, response: Response
) -> NoteOut:
    """Write a note into a base you may change; it is indexed before the answer (one chunk,
    unless longer than the base's token limit), so a search finds it at once. 413 when the
    text is longer than the server's note limit (the answer names it)."""
    kb = lb.kb_by_id(kb_id, caller, write=True)
    record, created = lb.add_note(kb, body.text, body.title, caller=caller)
    if not created:
        response.status_code = status.HTTP_200_OK
    return _note_out(lb, record, created=created)


@router.get("/v1/knowledge-bases/{kb_id}/notes", response_model=list[NoteOut])
def list_notes(kb_id: KbId, lb: LbDep, caller: CallerDep) -> list[NoteOut]:
    """The base's notes (titles, no texts), the last changed last."""
    kb = lb.kb_by_id(kb_id, caller)
    return [_note_out(lb, note, text=False) for note in lb.notes(kb)]


@router.get("/v1/notes/{document_id}", response_model=NoteOut)
def get_note(document_id: DocumentId, lb: LbDep, caller: CallerDep) -> NoteOut:
    """A note with its text (422 for a document that is no note)."""
    _, document = lb.document(document_id, caller)
    return _note_out(lb, document)


@router.patch("/v1/notes/{document_id}", response_model=NoteOut)
def edit_note(document_id: DocumentId, body: NotePatch, lb: LbDep, caller: CallerDep) -> NoteOut:
    """Replace a note's text and/or title and index it again before the answer; what it
    replaces is kept as its next version (`GET /v1/notes/{id}/versions`)."""
    kb, document = lb.document(document_id, caller, write=True)
    return _note_out(lb, lb.edit_note(kb, document, body.text, body.title, caller=caller))


@router.get("/v1/notes/{document_id}/versions", response_model=list[NoteVersionOut])
def note_versions(document_id: DocumentId, lb: LbDep, caller: CallerDep) -> list[NoteVersionOut]:
    """The earlier versions of a note, oldest first."""
    kb, document = lb.document(document_id, caller)
    return [
        NoteVersionOut(
            version=v.version,
            title=v.title,
            text=v.text,
            author=v.author,
            replaced_at=v.created_at,
        )
        for v in lb.note_versions(kb, document)
    ]


@router.delete("/v1/notes/{document_id}", status_code=status.HTTP_204_NO_CONTENT)
def delete_note(document_id: DocumentId, lb: LbDep, caller: CallerDep) -> Response:
    """Delete a note with its versions (422 for a document that is no note: delete those
    with `DELETE /v1/documents/{id}`)."""
    kb, document = lb.document(document_id, caller, write=True)
    if not is_note(document):
        raise InvalidInput(NOT_A_NOTE)
    lb.delete_document(kb, document, caller=caller)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
