"""What a named embedder is (:class:`EmbedderConfig`): plain values, checked when made, that
the embedders file (:mod:`.embedders_file`) and the settings build and the embed package's
registry (:mod:`lorebase.embed.registry`) turns into embedders. Values, like the rest of the
settings: the embedders import them, never the other way."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from lorebase.errors import InvalidInput

BUNDLED = "bundled"
"""The name of the bundled local model among the named embedders (always there)."""
EMBEDDER_KINDS = ("bundled", "http", "fake")
DEFAULT_LABEL = "default"
"""How a base without a named embedder shows it: it uses the process's own."""
EMBEDDER_NAME = r"[a-z0-9][a-z0-9_.-]{0,63}"


@dataclass(frozen=True, slots=True)
class EmbedderConfig:
    """One named embedder a knowledge base can be made with (``kb create --embedder NAME``).

    ``kind``: ``bundled`` (the local MiniLM; ``quantize`` as ``LOREBASE_EMBED_QUANTIZE``),
    ``http`` (an OpenAI-compatible ``/v1/embeddings`` server at ``url`` serving ``model``) or
    ``fake`` (the deterministic test embedder, ``dimensions`` wide). ``dimensions``: the
    width the server returns (learned from its first answer when not given). ``truncate``:
    keep only the first N dimensions (re-normalised), for models trained for it
    (Matryoshka: nomic-embed-text-v1.5 at 512 or 256). ``query_prefix`` and
    ``document_prefix``: what the model expects before a question and a passage (None: the
    table of known models in :mod:`lorebase.embed.base`). ``api_key``: never listed,
    never logged (``missing_key``: the variable that should hold it, unset here).
    ``no_answer_threshold``: the relevance floor's cosine for this model
    (None: the search settings' one, calibrated for the bundled model). ``batch_size``:
    texts per request. ``languages``: the languages the model reads, as ISO 639 codes
    (``("en",)``; None: every language): a question in another one weighs little in the
    search of its bases (the bundled model reads English).
    """

    name: str
    kind: str = "http"
    url: str | None = None
    model: str | None = None
    dimensions: int | None = None
    truncate: int | None = None
    query_prefix: str | None = None
    document_prefix: str | None = None
    api_key: str | None = field(default=None, repr=False)
    timeout: float = 60.0
    batch_size: int | None = None
    no_answer_threshold: float | None = None
    quantize: bool = True
    # The environment variable ``api_key_env`` names when it is not set where this process
    # runs: the embedder does not answer (and says why) instead of every command failing.
    missing_key: str | None = None
    languages: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if not re.fullmatch(EMBEDDER_NAME, self.name):
            raise InvalidInput(
                f"embedder name {self.name!r}: use lower-case letters, digits, '-', '_' or "
                "'.', at most 64"
            )
        if self.name == DEFAULT_LABEL:
            raise InvalidInput(
                f"{DEFAULT_LABEL!r} names the process's own embedder (LOREBASE_EMBEDDER) for "
                "bases made without one; give this embedder another name"
            )
        if self.kind not in EMBEDDER_KINDS:
            raise InvalidInput(
                f"embedder {self.name}: kind must be one of {', '.join(EMBEDDER_KINDS)}"
            )
        if (self.kind == BUNDLED) != (self.name == BUNDLED):
            raise InvalidInput(
                f"embedder {self.name}: the name {BUNDLED!r} is the bundled model's and only its"
            )
        if self.kind == "http" and not (self.url and self.model):
            raise InvalidInput(f"embedder {self.name}: an http embedder needs a url and a model")
        if self.kind == "fake" and self.dimensions is None:
            raise InvalidInput(f"embedder {self.name}: a fake embedder needs its dimensions")
        for what in ("dimensions", "truncate", "batch_size"):
            value = getattr(self, what)
            if value is not None and value < 1:
                raise InvalidInput(f"embedder {self.name}: {what} must be at least 1")
        truncate, dimensions = self.truncate, self.dimensions
        if truncate is not None and dimensions is not None and truncate > dimensions:
            raise InvalidInput(
                f"embedder {self.name}: truncate ({truncate}) must not exceed "
                f"dimensions ({dimensions})"
            )
        if not 0 < self.timeout <= 3600:
            raise InvalidInput(f"embedder {self.name}: timeout must be between 0 and 3600")
        threshold = self.no_answer_threshold
        if threshold is not None and not -1.0 <= threshold <= 1.0:
            raise InvalidInput(f"embedder {self.name}: no_answer_threshold is a cosine")
        if self.languages is not None and (
            not self.languages
            or not all(re.fullmatch(LANGUAGE_CODE, code) for code in self.languages)
        ):
            raise InvalidInput(
                f"embedder {self.name}: languages are ISO 639 codes of two or three lower-case "
                'letters, like languages = ["en", "de"] (leave it out for a model that reads '
                "every language)"
            )


LANGUAGE_CODE = "[a-z]{2,3}"
"""An ISO 639-1 or 639-3 code, as the language detector names languages."""
