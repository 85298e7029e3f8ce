"""An embedder that calls an OpenAI-compatible ``/v1/embeddings`` endpoint.

One client speaks to Ollama, llama.cpp's server, vLLM, TEI, LM Studio and OpenAI: POST
``{base_url}/embeddings`` with ``{"model": ..., "input": [...]}`` and read
``data[i].embedding`` in ``data[i].index`` order.

Local servers restart, load models slowly and shed load, so connection errors, timeouts, 429
and 5xx answers are retried with exponential backoff and jitter (``Retry-After`` is honoured,
capped). What is left after the retries becomes :class:`~lorebase.errors.Unavailable`; a
request the server refuses (other 4xx) becomes :class:`~lorebase.errors.InvalidInput`. Error
messages name the host and the status, never the texts or the server's reply body (which may
quote them); nothing here logs.
"""

from __future__ import annotations

import hashlib
import math
import random
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from lorebase.embed.base import DEFAULT_BATCH_SIZE, Embedder, EmbedderIdentity, EmbedKind
from lorebase.errors import InvalidInput, Unavailable

CONNECT_TIMEOUT = 5.0
DEFAULT_READ_TIMEOUT = 60.0
DEFAULT_MAX_RETRIES = 3
DEFAULT_BACKOFF = 0.5
MAX_BACKOFF = 8.0
MAX_RETRY_AFTER = 30.0
PROBE_TEXT = "dimension probe"
RETRY_STATUSES = frozenset({429})
SERVER_ERROR_MIN = 500
CLIENT_ERROR_MIN = 400
SAFE_CODE = re.compile(r"[A-Za-z0-9_.:-]{1,64}")  # an error code we may quote (no free text)
HINTS = {
    401: "the server wants an API key; set one or check it",
    403: "the API key is not allowed to use this model",
    404: "no such endpoint or model; the base URL should end in /v1 and the model must exist",
    413: "the request is too large; lower the batch size",
    422: "the server refused the request; check the model name and the input length limit",
}
DEFAULT_HINT = "the server refused the request; check the model name and the input length limit"


@dataclass(frozen=True, slots=True)
class _Retry:
    """A passing failure: why (content-free) and how long the server asked us to wait."""

    reason: str
    wait: float | None


class HttpEmbedder(Embedder):
    """Embeddings from an OpenAI-compatible server; dimension given or learned on first use."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        dim: int | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        read_timeout: float = DEFAULT_READ_TIMEOUT,
        connect_timeout: float = CONNECT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        backoff: float = DEFAULT_BACKOFF,
        max_backoff: float = MAX_BACKOFF,
        max_retry_after: float = MAX_RETRY_AFTER,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise InvalidInput("the embedding URL must look like http://127.0.0.1:11434/v1")
        if not model:
            raise InvalidInput("an embedding model name is required for an embedding server")
        _check_settings(dim, batch_size, read_timeout, connect_timeout, max_retries, backoff)
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.host = _host_label(parts.hostname, parts.port, parts.scheme)
        self.batch_size = batch_size
        self.read_timeout = read_timeout
        self.connect_timeout = connect_timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.max_retry_after = max_retry_after
        self.reported_model: str | None = None  # the "model" field of the last answer
        self._api_key = api_key
        self._dim = dim
        self._sleep = sleep
        self._random = random.Random()
        self._lock = threading.Lock()
        self._client: Any = None

    # -- identity ---------------------------------------------------------------------------

    @property
    def dim(self) -> int | None:
        """The vector dimension: configured, or learned from the first answer."""
        return self._dim

    @property
    def identity(self) -> EmbedderIdentity:
        """Keyed on the configured model name, so it is the same before and after any call
        (the name a server reports back can differ in spelling, e.g. a ``:latest`` tag)."""
        if self._dim is None:
            self.embed_batch([PROBE_TEXT], "query")
        assert self._dim is not None
        digest = hashlib.sha256(self.model.encode("utf-8")).hexdigest()
        return EmbedderIdentity(model=f"http:{self.model}", digest=digest, dim=self._dim)

    # -- embedding --------------------------------------------------------------------------

    def embed_batch(self, texts: Sequence[str], kind: EmbedKind) -> np.ndarray:
        if not texts:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        payload = {"model": self.model, "input": list(texts)}
        body = self._post_with_retries(payload)
        vectors = self._parse(body, len(texts))
        if self._dim is None:
            self._dim = vectors.shape[1]
        elif vectors.shape[1] != self._dim:
            raise Unavailable(
                f"embedding server at {self.host} returned {vectors.shape[1]}-dimensional "
                f"vectors, expected {self._dim}; check the model name and --embed-dim"
            )
        return vectors

    def close(self) -> None:
        """Close the pooled connections (a later call opens new ones)."""
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    def __enter__(self) -> HttpEmbedder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- transport --------------------------------------------------------------------------

    def _http(self) -> Any:
        """The shared ``httpx.Client``, created on first use (importing httpx is not free)."""
        with self._lock:
            if self._client is None:
                try:
                    import httpx
                except ImportError as exc:
                    raise Unavailable(
                        "the embedding-server client needs httpx; install it with: "
                        "pip install httpx"
                    ) from exc
                headers = {"Accept": "application/json"}
                if self._api_key:
                    headers["Authorization"] = f"Bearer {self._api_key}"
                self._client = httpx.Client(
                    timeout=httpx.Timeout(self.read_timeout, connect=self.connect_timeout),
                    headers=headers,
                )
            return self._client

    def _post_with_retries(self, payload: dict[str, Any]) -> Any:
        """The decoded JSON answer, after up to ``max_retries`` retries of passing failures."""
        client = self._http()
        url = f"{self.base_url}/embeddings"
        retry = _Retry("no attempt made", None)
        for attempt in range(self.max_retries + 1):
            if attempt:
                self._sleep(self._delay(attempt, retry.wait))
            outcome = self._attempt(client, url, payload)
            if not isinstance(outcome, _Retry):
                return outcome
            retry = outcome
        raise Unavailable(
            f"embedding server at {self.host} did not answer: {retry.reason} after "
            f"{self.max_retries + 1} attempts; start it or check --embed-url"
        )

    def _attempt(self, client: Any, url: str, payload: dict[str, Any]) -> Any:
        """One POST: the decoded answer, a :class:`_Retry`, or an error for a refusal."""
        import httpx

        try:
            response = client.post(url, json=payload)
        except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
            raise InvalidInput(
                f"the embedding URL for {self.host} is not usable ({type(exc).__name__}); "
                "check --embed-url"
            ) from exc
        except httpx.TimeoutException as exc:
            return _Retry(f"timed out ({type(exc).__name__})", None)
        except httpx.TransportError as exc:
            return _Retry(f"connection failed ({type(exc).__name__})", None)
        status = response.status_code
        if status in RETRY_STATUSES or status >= SERVER_ERROR_MIN:
            return _Retry(f"HTTP {status}", self._retry_after(response.headers.get("Retry-After")))
        if status >= CLIENT_ERROR_MIN:
            raise InvalidInput(self._rejection(response))
        return self._json(response)

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        """Exponential backoff with jitter (half to full step), or the server's Retry-After."""
        if retry_after is not None:
            return retry_after
        step = min(self.max_backoff, self.backoff * 2 ** (attempt - 1))
        return step * (0.5 + 0.5 * self._random.random())

    def _retry_after(self, value: str | None) -> float | None:
        """Seconds to wait from a Retry-After header (seconds or HTTP date), capped."""
        if not value:
            return None
        try:
            seconds = float(value)
        except ValueError:
            try:
                seconds = parsedate_to_datetime(value).timestamp() - time.time()
            except (TypeError, ValueError, IndexError, OverflowError):
                return None
        if not math.isfinite(seconds):
            return None
        return min(max(seconds, 0.0), self.max_retry_after)

    def _rejection(self, response: Any) -> str:
        """A content-free message for a refused request: status, hint, error code if any."""
        status = response.status_code
        message = f"embedding server at {self.host} rejected the request: HTTP {status}"
        code = _error_code(response)
        if code:
            message += f" ({code})"
        return f"{message}; {HINTS.get(status, DEFAULT_HINT)}"

    def _json(self, response: Any) -> Any:
        try:
            return response.json()
        except ValueError as exc:
            raise self._malformed("the body is not JSON") from exc

    # -- parsing ----------------------------------------------------------------------------

    def _parse(self, body: Any, expected: int) -> np.ndarray:
        """``data[*].embedding`` as a float32 matrix in ``index`` order, checked."""
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, list) or len(data) != expected:
            raise self._malformed(f"expected a 'data' list of {expected} items")
        if isinstance(body.get("model"), str):
            self.reported_model = body["model"]
        rows: list[Any] = [None] * expected
        for position, item in enumerate(data):
            if not isinstance(item, dict) or not isinstance(item.get("embedding"), list):
                raise self._malformed("an item has no 'embedding' list")
            index = item.get("index", position)
            if not isinstance(index, int) or not 0 <= index < expected or rows[index] is not None:
                raise self._malformed("the 'index' fields are not 0..n-1")
            rows[index] = item["embedding"]
        try:
            vectors = np.asarray(rows, dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise self._malformed("the embeddings are not equal-length number lists") from exc
        if vectors.ndim != 2 or vectors.shape[1] == 0 or not np.isfinite(vectors).all():
            raise self._malformed("the embeddings are not equal-length finite number lists")
        return vectors

    def _malformed(self, what: str) -> Unavailable:
        return Unavailable(
            f"embedding server at {self.host} sent an answer that is not an OpenAI-style "
            f"embeddings list ({what}); check that --embed-url points at /v1 of an "
            "embeddings server"
        )


def _check_settings(
    dim: int | None,
    batch_size: int,
    read_timeout: float,
    connect_timeout: float,
    max_retries: int,
    backoff: float,
) -> None:
    """Reject settings that would make every call fail or hang."""
    if dim is not None and dim < 1:
        raise InvalidInput("the embedding dimension must be at least 1")
    if batch_size < 1:
        raise InvalidInput("the embedding batch size must be at least 1")
    if read_timeout <= 0 or connect_timeout <= 0:
        raise InvalidInput("embedding timeouts must be positive")
    if max_retries < 0 or backoff < 0:
        raise InvalidInput("retries and backoff cannot be negative")


def _host_label(hostname: str, port: int | None, scheme: str) -> str:
    """``host:port`` for messages (no path, query or credentials)."""
    if port is None:
        port = 443 if scheme == "https" else 80
    host = f"[{hostname}]" if ":" in hostname else hostname
    return f"{host}:{port}"


def _error_code(response: Any) -> str | None:
    """The server's machine-readable error code (``error.code`` / ``error.type``) when it is
    a short identifier; free-text messages are never quoted since they may echo input."""
    try:
        body = response.json()
    except ValueError:
        return None
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return None
    for key in ("code", "type"):
        value = error.get(key)
        if isinstance(value, str) and SAFE_CODE.fullmatch(value):
            return value
    return None
