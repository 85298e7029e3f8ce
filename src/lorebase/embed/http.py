"""An embedder that calls an OpenAI-compatible ``/v1/embeddings`` endpoint.

One client speaks to Ollama, llama.cpp's server, vLLM, TEI, LM Studio and OpenAI: POST
``{base_url}/embeddings`` with ``{"model": ..., "input": [...]}`` and read
``data[i].embedding`` in ``data[i].index`` order.

Options for models that need them: ``query_prefix`` / ``document_prefix`` (what goes before a
question and a passage, when the table in :mod:`lorebase.embed.base` does not know the model or
knows it wrong) and ``truncate`` (keep the first N dimensions of each vector, re-normalised by
the base class: Matryoshka models such as nomic-embed-text-v1.5 are trained for it). Both are
part of the identity, so vectors made with other options are never compared with these.

The transport (retries with backoff, ``Retry-After``, content-free errors: ``Unavailable``
when the server cannot answer, ``InvalidInput`` when it refuses) is
:class:`~lorebase.http_json.JsonEndpoint`. Error messages name the host and the status, never
the texts or the server's reply body (which may quote them); nothing here logs.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any, Unpack

import numpy as np

from lorebase.embed.base import (
    DEFAULT_BATCH_SIZE,
    Embedder,
    EmbedderIdentity,
    EmbedKind,
    prefix_for,
)
from lorebase.errors import InvalidInput, Unavailable
from lorebase.http_json import JsonEndpoint, Transport

PROBE_TEXT = "dimension probe"
KINDS: tuple[EmbedKind, ...] = ("query", "document")


class HttpEmbedder(Embedder):
    """Embeddings from an OpenAI-compatible server; dimension given or learned on first use."""

    remote = True

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        dim: int | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        query_prefix: str | None = None,
        document_prefix: str | None = None,
        truncate: int | None = None,
        languages: frozenset[str] | None = None,
        **transport: Unpack[Transport],
    ) -> None:
        """``dim``: the width the server returns (checked on every answer; learned from the
        first one when not given). ``query_prefix`` / ``document_prefix``: None uses the
        table of known models. ``truncate``: keep the first N dimensions. ``languages``: the
        languages the model reads (None: every one). ``transport``: timeouts, retries and
        backoff (see :class:`JsonEndpoint`)."""
        self.languages = languages
        self.endpoint = JsonEndpoint(
            base_url,
            "embeddings",
            service="embedding server",
            hint="--embed-url",
            answer="an OpenAI-style embeddings list",
            url_example="http://127.0.0.1:11434/v1",
            api_key=api_key,
            **transport,
        )
        if not model:
            raise InvalidInput("an embedding model name is required for an embedding server")
        if dim is not None and dim < 1:
            raise InvalidInput("the embedding dimension must be at least 1")
        if batch_size < 1:
            raise InvalidInput("the embedding batch size must be at least 1")
        if truncate is not None and truncate < 1:
            raise InvalidInput("truncate must keep at least 1 dimension")
        if truncate is not None and dim is not None and truncate > dim:
            raise InvalidInput(
                f"truncate ({truncate}) must not exceed the model's dimensions ({dim})"
            )
        self.model = model
        self.batch_size = batch_size
        self.reported_model: str | None = None  # the "model" field of the last answer
        self._dim = dim
        self.truncate = truncate
        self._prefixes: dict[EmbedKind, str | None] = {
            "query": query_prefix,
            "document": document_prefix,
        }

    @property
    def base_url(self) -> str:
        return self.endpoint.base_url

    @property
    def host(self) -> str:
        """``host:port`` of the server, as messages name it."""
        return self.endpoint.host

    # -- identity ---------------------------------------------------------------------------

    @property
    def dim(self) -> int | None:
        """The server's vector width: configured, or learned from the first answer (the
        vectors handed out are ``truncate`` wide when that is set)."""
        return self._dim

    @property
    def identity(self) -> EmbedderIdentity:
        """Keyed on the configured model name, so it is the same before and after any call
        (the name a server reports back can differ in spelling, e.g. a ``:latest`` tag).

        With prefixes other than the table's, the digest covers them too; without, it is
        sha256 of the model name alone (as before prefixes could be configured, so stored
        vectors stay valid). With ``truncate`` the dimension is N and the transform
        ``truncate:N`` (no server call is needed to know it)."""
        model = f"http:{self.model}"
        prefixes = {kind: self.prefix(kind) for kind in KINDS}
        if prefixes == {kind: prefix_for(model, kind) for kind in KINDS}:
            named = self.model
        else:
            named = json.dumps({"model": self.model, "prefixes": prefixes}, sort_keys=True)
        digest = hashlib.sha256(named.encode("utf-8")).hexdigest()
        if self.truncate is not None:
            return EmbedderIdentity(model, digest, self.truncate, f"truncate:{self.truncate}")
        if self._dim is None:
            self.embed_batch([PROBE_TEXT], "query")
        assert self._dim is not None
        return EmbedderIdentity(model=model, digest=digest, dim=self._dim)

    def prefix(self, kind: EmbedKind) -> str:
        """The configured prefix for this kind, else the table's for the model."""
        configured = self._prefixes[kind]
        return configured if configured is not None else prefix_for(f"http:{self.model}", kind)

    # -- embedding --------------------------------------------------------------------------

    def embed_batch(self, texts: Sequence[str], kind: EmbedKind) -> np.ndarray:
        """The server's vectors for ``texts`` (cut to ``truncate`` dimensions when set)."""
        if not texts:
            return np.zeros((0, self.truncate or self._dim or 0), dtype=np.float32)
        body = self.endpoint.post({"model": self.model, "input": list(texts)})
        vectors = self._parse(body, len(texts))
        if self._dim is None:
            self._dim = vectors.shape[1]
        elif vectors.shape[1] != self._dim:
            raise Unavailable(
                f"embedding server at {self.host} returned {vectors.shape[1]}-dimensional "
                f"vectors, expected {self._dim}; check the model name and --embed-dim"
            )
        if self.truncate is not None:
            if self.truncate > vectors.shape[1]:
                raise Unavailable(
                    f"embedding server at {self.host} returns {vectors.shape[1]}-dimensional "
                    f"vectors, fewer than truncate ({self.truncate}) keeps; lower truncate to "
                    f"at most {vectors.shape[1]} or remove it"
                )
            vectors = vectors[:, : self.truncate]
        return vectors

    def close(self) -> None:
        """Close the pooled connections (a later call opens new ones)."""
        self.endpoint.close()

    def __enter__(self) -> HttpEmbedder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- parsing ----------------------------------------------------------------------------

    def _parse(self, body: Any, expected: int) -> np.ndarray:
        """``data[*].embedding`` as a float32 matrix in ``index`` order, checked."""
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, list) or len(data) != expected:
            raise self.endpoint.malformed(f"expected a 'data' list of {expected} items")
        if isinstance(body.get("model"), str):
            self.reported_model = body["model"]
        rows: list[Any] = [None] * expected
        for position, item in enumerate(data):
            if not isinstance(item, dict) or not isinstance(item.get("embedding"), list):
                raise self.endpoint.malformed("an item has no 'embedding' list")
            index = item.get("index", position)
            if not isinstance(index, int) or not 0 <= index < expected or rows[index] is not None:
                raise self.endpoint.malformed("the 'index' fields are not 0..n-1")
            rows[index] = item["embedding"]
        try:
            vectors = np.asarray(rows, dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise self.endpoint.malformed(
                "the embeddings are not equal-length number lists"
            ) from exc
        if vectors.ndim != 2 or vectors.shape[1] == 0 or not np.isfinite(vectors).all():
            raise self.endpoint.malformed("the embeddings are not equal-length finite number lists")
        return vectors
