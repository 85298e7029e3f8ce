"""The named embedders a knowledge base can be made with, for any signed-in caller: what
`lorebase embedders` lists (never an API key; URLs without user name or password)."""

from __future__ import annotations

import dataclasses
from typing import Annotated

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field

from lorebase.api.deps import CallerDep, LbDep
from lorebase.embed.listing import list_embedders

router = APIRouter(tags=["embedders"])


class EmbedderOut(BaseModel):
    name: str = Field(description="What `kb create --embedder NAME` and the API call it.")
    kind: str = Field(
        description="`bundled` (the local model), `http` (an OpenAI-compatible embeddings "
        "server) or `fake` (the deterministic test embedder)."
    )
    model: str | None = Field(description="The model's name (`all-MiniLM-L6-v2` when bundled).")
    url: str | None = Field(
        description="The server's base URL, without user name or password (None unless http)."
    )
    dimensions: int | None = Field(
        description="The width the model returns; None until the server has said (http "
        "without `dimensions` configured)."
    )
    truncate: int | None = Field(
        description="The dimensions kept of each vector (re-normalised), or None for all."
    )
    query_prefix: str | None = Field(
        description="What goes before a question; None: the model's own (a table of known models)."
    )
    document_prefix: str | None = Field(
        description="What goes before a passage; None: the model's own."
    )
    no_answer_threshold: float = Field(
        description="The relevance floor's cosine for this model's vectors: its own, else the "
        "server's setting."
    )
    default: bool = Field(description="Whether new knowledge bases get this embedder.")
    reachable: bool | None = Field(
        description="Whether it answered a probe just now (remembered for 30 s); None when "
        "`check=false`."
    )
    detail: str | None = Field(
        description="Why it did not answer (a host and a reason, never a text or a key)."
    )


@router.get("/v1/embedders", response_model=list[EmbedderOut])
def list_all(
    lb: LbDep,
    caller: CallerDep,
    check: Annotated[
        bool, Query(description="Probe each embedder (a short timeout each); false: skip.")
    ] = True,
) -> list[EmbedderOut]:
    """The named embedders (from the embedders file; `bundled` always), by name, and whether
    each answers now."""
    rows = list_embedders(lb.embedders, lb.settings.search.no_answer_threshold, check=check)
    return [EmbedderOut(**dataclasses.asdict(row)) for row in rows]
