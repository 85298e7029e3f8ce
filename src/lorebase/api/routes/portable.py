"""/v1/knowledge-bases: export one base to a portable file, and import such a file
(administrators only). The export's passphrase travels in the ``X-Export-Key`` header, never
in a URL, and is never logged."""

from __future__ import annotations

import contextlib
import secrets
import tempfile
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Header, Query, UploadFile, status
from fastapi.responses import FileResponse
from pydantic import BaseModel
from starlette.background import BackgroundTask

from lorebase.api.convert import kb_out
from lorebase.api.deps import CallerDep, KbId, LbDep
from lorebase.api.schemas import KnowledgeBaseOut
from lorebase.errors import Forbidden

router = APIRouter(prefix="/v1/knowledge-bases", tags=["knowledge bases"])

KEY_HEADER = "X-Export-Key"
EXPORT_MEDIA_TYPE = "application/zip"

ExportKeyHeader = Annotated[
    str | None,
    Header(
        alias=KEY_HEADER,
        max_length=1024,
        description="The passphrase the export's uploaded originals are (to be) sealed under.",
    ),
]


class ImportOut(BaseModel):
    """What an import made."""

    knowledge_base: KnowledgeBaseOut
    documents: int
    chunks: int
    vectors: int
    originals: int
    renumbered: int
    replaced: bool
    reembed: bool


@router.get(
    "/{kb_id}/export",
    response_class=FileResponse,
    responses={200: {"content": {EXPORT_MEDIA_TYPE: {}}, "description": "The export."}},
)
def export_knowledge_base(
    kb_id: KbId,
    lb: LbDep,
    caller: CallerDep,
    key: ExportKeyHeader = None,
    no_originals: Annotated[
        bool, Query(description="Leave the uploads' originals out (no key needed).")
    ] = False,
) -> FileResponse:
    """The base as one portable file (administrators only): documents, chunks, vectors with
    their identity, metadata and settings; the uploads' originals sealed under the
    `X-Export-Key` passphrase, or left out with `no_originals`. See docs/export.md."""
    if not caller.is_admin:
        raise Forbidden("exporting a knowledge base is for administrators; ask one to do it")
    kb = lb.kb_by_id(kb_id, caller)
    folder = Path(tempfile.mkdtemp(prefix="export-", dir=_scratch(lb.settings.data_dir)))
    target = folder / f"{kb.id}-{secrets.token_hex(4)}.lorebase.zip"
    try:
        lb.export_kb(kb, target, key=key, originals=not no_originals, caller=caller)
    except BaseException:
        _remove(folder)
        raise
    return FileResponse(
        target,
        media_type=EXPORT_MEDIA_TYPE,
        filename=f"knowledge-base-{kb.id}.lorebase.zip",
        background=BackgroundTask(_remove, folder),
    )


@router.post("/import", response_model=ImportOut, status_code=status.HTTP_201_CREATED)
def import_knowledge_base(
    file: UploadFile,
    lb: LbDep,
    caller: CallerDep,
    key: ExportKeyHeader = None,
    kb: Annotated[
        str | None,
        Query(min_length=1, max_length=200, description="Import under this name."),
    ] = None,
    replace: Annotated[bool, Query(description="Replace a base of that name.")] = False,
    reembed: Annotated[
        bool, Query(description="Leave out vectors of another embedder; the next pass embeds.")
    ] = False,
) -> ImportOut:
    """Read an export (multipart, field `file`) into a new base (administrators only): every
    member is checked against the manifest first, then it is written all or nothing. 409
    when the name is taken (`replace`), 422 for a damaged file, a wrong key or vectors of an
    embedder not configured here (`reembed`)."""
    if not caller.is_admin:
        raise Forbidden("importing a knowledge base is for administrators; ask one to do it")
    summary = lb.import_kb(
        file.file, name=kb, replace=replace, reembed=reembed, key=key, caller=caller
    )
    return ImportOut(
        knowledge_base=kb_out(summary.kb),
        documents=summary.documents,
        chunks=summary.chunks,
        vectors=summary.vectors,
        originals=summary.originals,
        renumbered=summary.renumbered,
        replaced=summary.replaced,
        reembed=summary.reembed,
    )


def _scratch(data_dir: Path) -> Path:
    folder = data_dir / "tmp"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _remove(folder: Path) -> None:
    with contextlib.suppress(OSError):
        for path in folder.iterdir():
            path.unlink()
        folder.rmdir()
