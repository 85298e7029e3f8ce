"""What `lorebase embedders` and ``GET /v1/embedders`` show of the named embedders: one row
each, never an API key, a URL without user name or password, and whether it answers now."""

from __future__ import annotations

from dataclasses import dataclass

from lorebase.embed.registry import Embedders, public_url
from lorebase.settings.embedders import EmbedderConfig

BUNDLED_MODEL = "all-MiniLM-L6-v2"
BUNDLED_DIMENSIONS = 384


@dataclass(frozen=True, slots=True)
class EmbedderRow:
    """One named embedder as listed. ``no_answer_threshold`` is the one its bases' searches
    use (its own, else the search settings'); ``reachable`` None: not checked."""

    name: str
    kind: str
    model: str | None
    url: str | None
    dimensions: int | None
    truncate: int | None
    query_prefix: str | None
    document_prefix: str | None
    no_answer_threshold: float
    default: bool
    reachable: bool | None
    detail: str | None


def model_of(config: EmbedderConfig) -> str | None:
    """The model a configuration names, as people know it."""
    if config.kind == "bundled":
        return BUNDLED_MODEL
    if config.kind == "fake":
        return config.model or f"fake-{config.name}"
    return config.model


def list_embedders(
    embedders: Embedders, default_threshold: float, *, check: bool = True
) -> list[EmbedderRow]:
    """Every named embedder, by name; ``check`` probes each (see
    :meth:`Embedders.reachability`: a short timeout, answers remembered a little while)."""
    rows = []
    for config in embedders.configs():
        found = embedders.reachability(config.name) if check else None
        dimensions = config.dimensions
        if config.kind == "bundled" and dimensions is None:
            dimensions = BUNDLED_DIMENSIONS
        rows.append(
            EmbedderRow(
                name=config.name,
                kind=config.kind,
                model=model_of(config),
                url=public_url(config.url),
                dimensions=dimensions,
                truncate=config.truncate,
                query_prefix=config.query_prefix,
                document_prefix=config.document_prefix,
                no_answer_threshold=embedders.threshold(config.name, default_threshold),
                default=config.name == embedders.default_name,
                reachable=found.reachable if found is not None else None,
                detail=found.detail if found is not None else None,
            )
        )
    return rows
