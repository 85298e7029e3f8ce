"""A reranker that calls a reranking server's ``/rerank`` endpoint.

POST ``{base_url}/rerank`` with ``{"model", "query", "documents", "top_n"}`` and read one
score per document from either answer shape servers use:

- Cohere, Jina, llama.cpp's server, vLLM: ``{"results": [{"index": i, "relevance_score": s}]}``
- Hugging Face TEI: ``[{"index": i, "score": s}]`` (its request names the passages
  ``texts``, not ``documents``: put a Cohere-compatible proxy in front of TEI)

Results may come in any order (usually best first); scores go back in passage order. An
answer with a missing or repeated index, a score that is not a finite number, or the wrong
number of results is :class:`~lorebase.errors.Unavailable`, so search keeps the fused order.

The transport (retries with backoff, ``Retry-After``, content-free errors) is
:class:`~lorebase.http_json.JsonEndpoint`. Messages never quote the query, the passages or the
server's reply body; nothing here logs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Unpack

from lorebase.errors import InvalidInput
from lorebase.http_json import JsonEndpoint, Transport
from lorebase.rerank.base import Reranker

DEFAULT_BATCH_SIZE = 32
DEFAULT_READ_TIMEOUT = 30.0  # search waits on the reranker, so less than an embedder's
SCORE_KEYS = ("relevance_score", "score")  # Cohere/Jina/llama.cpp/vLLM, then TEI
URL_HINT = "LOREBASE_RERANK_URL"


class HttpReranker(Reranker):
    """Scores from a reranking server (a cross-encoder behind ``/rerank``)."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        **transport: Unpack[Transport],
    ) -> None:
        """``transport``: timeouts, retries and backoff (see :class:`JsonEndpoint`); the read
        timeout is shorter than an embedder's by default, since a search waits on it."""
        transport.setdefault("read_timeout", DEFAULT_READ_TIMEOUT)
        self.endpoint = JsonEndpoint(
            base_url,
            "rerank",
            service="reranking server",
            hint=URL_HINT,
            answer="a list of rerank results",
            url_example="http://127.0.0.1:8080/v1",
            api_key=api_key,
            **transport,
        )
        if not model:
            raise InvalidInput(
                "a reranking model name is required for a reranking server; "
                "set LOREBASE_RERANK_MODEL"
            )
        if batch_size < 1:
            raise InvalidInput("the reranking batch size must be at least 1")
        self.model = model
        self.batch_size = batch_size

    @property
    def host(self) -> str:
        """``host:port`` of the server, as messages name it."""
        return self.endpoint.host

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        scores: list[float] = []
        for start in range(0, len(passages), self.batch_size):
            batch = list(passages[start : start + self.batch_size])
            payload = {
                "model": self.model,
                "query": query,
                "documents": batch,
                "top_n": len(batch),
            }
            scores.extend(self._parse(self.endpoint.post(payload), len(batch)))
        return scores

    def close(self) -> None:
        """Close the pooled connections (a later call opens new ones)."""
        self.endpoint.close()

    def __enter__(self) -> HttpReranker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _parse(self, body: Any, expected: int) -> list[float]:
        """One score per document, in document order, checked."""
        results = body.get("results") if isinstance(body, dict) else body
        if not isinstance(results, list) or len(results) != expected:
            raise self.endpoint.malformed(f"expected {expected} results")
        scores: dict[int, float] = {}
        for item in results:
            if not isinstance(item, dict):
                raise self.endpoint.malformed("a result is not an object")
            index = item.get("index")
            if type(index) is not int or not 0 <= index < expected or index in scores:
                raise self.endpoint.malformed("the 'index' fields are not 0..n-1")
            value = _score(item)
            if value is None:
                raise self.endpoint.malformed("a result has no finite 'relevance_score'/'score'")
            scores[index] = value
        return [scores[i] for i in range(expected)]


def _score(item: dict[str, Any]) -> float | None:
    """The first score field present, if it is a finite number (not a bool)."""
    for key in SCORE_KEYS:
        if key in item:
            value = item[key]
            if type(value) in (int, float) and math.isfinite(value):
                return float(value)
            return None
    return None
