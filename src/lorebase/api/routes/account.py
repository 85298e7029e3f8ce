"""The caller's own API keys (list, create — shown once —, revoke) and the server's status: what
the web page's status view shows, open to every signed-in user."""

from __future__ import annotations

import time
from urllib.parse import urlsplit

from fastapi import APIRouter, Response, status
from pydantic import BaseModel, Field

from lorebase import __version__
from lorebase.accounts.base import ApiKey
from lorebase.accounts.common import NAME_MAX
from lorebase.api.deps import CallerDep, LbDep, RowId
from lorebase.api.schemas import Strict
from lorebase.errors import LorebaseError

router = APIRouter(tags=["account"])
DAY = 86_400


class KeyOut(BaseModel):
    id: int
    prefix: str = Field(description="The key's first characters, to tell keys apart.")
    name: str
    created_at: float
    expires_at: float | None
    revoked_at: float | None
    last_used_at: float | None
    parent_id: int | None = Field(
        None, description="The key it was made with: it expires no later, and is revoked with it."
    )


class KeyIn(Strict):
    name: str = Field("", max_length=NAME_MAX, pattern=r"^[^\x00-\x1f]*$")
    expires_in_days: int | None = Field(
        None,
        ge=1,
        le=3650,
        description="None: never — but a key made with a key expires no later than it.",
    )
    key: str | None = Field(
        None,
        max_length=200,
        description="One of your API keys, given again: needed when the request is signed in "
        "with the page's session cookie (a session alone mints no key). The new key expires "
        "no later than the key it is made with and is revoked with it.",
    )


class NewKeyOut(BaseModel):
    key: str = Field(description="The key itself: shown this once, never again.")
    record: KeyOut


class StatusOut(BaseModel):
    version: str
    auth: bool
    store: str = Field(description="`sqlite` (one file) or `postgresql` (shared by processes).")
    ingest: bool = Field(description="Whether this process indexes (runs queue workers).")
    queue_depth: int = Field(description="Jobs waiting (with PostgreSQL: of every process).")
    queue_size: int
    workers: int
    embedding_model: str | None = Field(description="The model's identity, or None if none.")
    reranker: str | None
    chat_host: str | None = Field(description="The host of the chat endpoint /v1/ask uses.")
    chat_model: str | None


def _key(record: ApiKey) -> KeyOut:
    return KeyOut(
        id=record.id,
        prefix=record.prefix,
        name=record.name,
        created_at=record.created_at,
        expires_at=record.expires_at,
        revoked_at=record.revoked_at,
        last_used_at=record.last_used_at,
        parent_id=record.parent_id,
    )


@router.get("/v1/keys", response_model=list[KeyOut])
def list_keys(lb: LbDep, caller: CallerDep) -> list[KeyOut]:
    """Your API keys (their records; a key itself is shown only when made)."""
    return [_key(k) for k in lb.own_keys(caller)]


@router.post("/v1/keys", response_model=NewKeyOut, status_code=status.HTTP_201_CREATED)
def create_key(body: KeyIn, lb: LbDep, caller: CallerDep) -> NewKeyOut:
    """A new API key for yourself, shown this once: made with the key the request came with
    (or, signed in with the page, the key given as `key`), it expires no later than that key
    and is revoked with it."""
    expires = time.time() + body.expires_in_days * DAY if body.expires_in_days else None
    key, record = lb.create_own_key(caller, body.name, expires, key=body.key)
    return NewKeyOut(key=key, record=_key(record))


@router.delete("/v1/keys/{key_id}", status_code=status.HTTP_204_NO_CONTENT)
def revoke_key(key_id: RowId, lb: LbDep, caller: CallerDep) -> Response:
    """Revoke one of your keys; the sessions signed in with it end too."""
    lb.revoke_own_key(caller, key_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get("/v1/status", response_model=StatusOut)
def server_status(lb: LbDep, caller: CallerDep) -> StatusOut:
    """The server at a glance: queue depth, workers, the models in use, the chat endpoint."""
    try:
        model = lb.embedder.identity.key if lb.embedder is not None else None
    except LorebaseError:
        model = "unavailable"
    chat = lb.settings.chat
    serve = lb.settings.serve
    reranker = getattr(lb.reranker, "model", None) if lb.reranker is not None else None
    return StatusOut(
        version=__version__,
        auth=serve.auth,
        store="postgresql" if lb.settings.shared_store else "sqlite",
        ingest=serve.ingest,
        queue_depth=lb.queue.depth,
        queue_size=serve.queue_size,
        workers=serve.workers,
        embedding_model=model,
        reranker=reranker,
        chat_host=urlsplit(chat.url).hostname,
        chat_model=chat.model,
    )
