"""Your own API keys for HTTP embedders, used by your personal bases: set (never shown back),
list (names only), remove."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Response, status
from pydantic import BaseModel, Field

from lorebase.api.deps import CallerDep, LbDep
from lorebase.api.schemas import Strict

router = APIRouter(prefix="/v1/embedder-keys", tags=["account"])
EmbedderName = Annotated[str, Path(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")]


class EmbedderKeyIn(Strict):
    key: str = Field(
        min_length=1,
        max_length=4096,
        description="Your API key for this embedder's server (kept sealed, never shown back).",
    )


class EmbedderKeyOut(BaseModel):
    embedder: str
    created_at: float = Field(description="When the key was set (the key itself is never shown).")


@router.get("", response_model=list[EmbedderKeyOut])
def list_embedder_keys(lb: LbDep, caller: CallerDep) -> list[EmbedderKeyOut]:
    """The HTTP embedders you keep a key of your own for (never the keys)."""
    return [EmbedderKeyOut(embedder=name, created_at=at) for name, at in lb.embedder_keys(caller)]


@router.put("/{embedder}", status_code=status.HTTP_204_NO_CONTENT)
def set_embedder_key(
    embedder: EmbedderName, body: EmbedderKeyIn, lb: LbDep, caller: CallerDep
) -> Response:
    """Keep your own API key for a named HTTP embedder: your personal bases made with it are
    embedded and searched with your key from now on (same model, same vectors). 404 for an
    unknown embedder, 422 for one that is not HTTP, 403 when an administrator turned own
    keys off."""
    lb.set_embedder_key(caller, embedder, body.key)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.delete("/{embedder}", status_code=status.HTTP_204_NO_CONTENT)
def remove_embedder_key(embedder: EmbedderName, lb: LbDep, caller: CallerDep) -> Response:
    """Forget your key for an embedder: your bases use the server's key again."""
    lb.remove_embedder_key(caller, embedder)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
