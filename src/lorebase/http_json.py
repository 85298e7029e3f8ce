"""POST JSON to one endpoint of a local model server, with retries and content-free errors.

The transport shared by the HTTP embedder and the HTTP reranker. Local servers (Ollama,
llama.cpp's server, vLLM, TEI, LM Studio) restart, load models slowly and shed load, so
connection errors, timeouts, 429 and 5xx answers are retried with exponential backoff and
jitter (``Retry-After`` is honoured, capped). What is left after the retries becomes
:class:`~lorebase.errors.Unavailable`; a request the server refuses (other 4xx) becomes
:class:`~lorebase.errors.InvalidInput`; a body that is not JSON becomes ``Unavailable``.

Messages name the service, the host and the status, and end with a hint (the setting to
check); never the request, the server's reply body (which may quote it) or the URL's path,
query or credentials. Nothing here logs.
"""

from __future__ import annotations

import math
import random
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any, TypedDict
from urllib.parse import urlsplit

from lorebase.errors import InvalidInput, Unavailable

CONNECT_TIMEOUT = 5.0
DEFAULT_READ_TIMEOUT = 60.0
DEFAULT_MAX_RETRIES = 3
DEFAULT_BACKOFF = 0.5
MAX_BACKOFF = 8.0
MAX_RETRY_AFTER = 30.0
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


class Transport(TypedDict, total=False):
    """How a client of :class:`JsonEndpoint` may tune it (each has a default there)."""

    read_timeout: float
    connect_timeout: float
    max_retries: int
    backoff: float
    max_backoff: float
    max_retry_after: float
    sleep: Callable[[float], None]


@dataclass(frozen=True, slots=True)
class _Retry:
    """A passing failure: why (content-free) and how long the server asked us to wait."""

    reason: str
    wait: float | None


class JsonEndpoint:
    """``POST {base_url}/{path}`` with a JSON body; the decoded JSON answer back.

    ``service`` names the server in messages ("embedding server"), ``hint`` is the setting a
    user should check ("--embed-url"), ``answer`` describes the answer expected ("an
    OpenAI-style embeddings list") for :meth:`malformed`. The ``httpx`` client is created on
    first use and reused (thread-safe); :meth:`close` drops it.
    """

    def __init__(
        self,
        base_url: str,
        path: str,
        *,
        service: str,
        hint: str,
        answer: str,
        url_example: str = "http://127.0.0.1:8080/v1",
        api_key: str | None = None,
        read_timeout: float = DEFAULT_READ_TIMEOUT,
        connect_timeout: float = CONNECT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        backoff: float = DEFAULT_BACKOFF,
        max_backoff: float = MAX_BACKOFF,
        max_retry_after: float = MAX_RETRY_AFTER,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.service = service
        self.hint = hint
        self.answer = answer
        try:
            parts = urlsplit(base_url)
            port = parts.port  # raises for a port that is not a number
        except ValueError:
            parts, port = None, None
        if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
            raise InvalidInput(f"the {service} URL must look like {url_example}; check {hint}")
        if read_timeout <= 0 or connect_timeout <= 0:
            raise InvalidInput(f"{service} timeouts must be positive")
        if max_retries < 0 or backoff < 0 or max_backoff < 0 or max_retry_after < 0:
            raise InvalidInput("retries and backoff cannot be negative")
        self.base_url = base_url.rstrip("/")
        self.url = f"{self.base_url}/{path.lstrip('/')}"
        self.host = host_label(parts.hostname, port, parts.scheme)
        self.read_timeout = read_timeout
        self.connect_timeout = connect_timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.max_retry_after = max_retry_after
        self._api_key = api_key
        self._sleep = sleep
        self._random = random.Random()
        self._lock = threading.Lock()
        self._client: Any = None

    def post(self, payload: dict[str, Any]) -> Any:
        """The decoded JSON answer, after up to ``max_retries`` retries of passing failures."""
        client = self._http()
        retry = _Retry("no attempt made", None)
        for attempt in range(self.max_retries + 1):
            if attempt:
                self._sleep(self._delay(attempt, retry.wait))
            outcome = self._attempt(client, payload)
            if not isinstance(outcome, _Retry):
                return outcome
            retry = outcome
        raise Unavailable(
            f"{self.service} at {self.host} did not answer: {retry.reason} after "
            f"{self.max_retries + 1} attempts; start it or check {self.hint}"
        )

    def malformed(self, what: str) -> Unavailable:
        """The error for an answer of the wrong shape; ``what`` must be content-free."""
        return Unavailable(
            f"{self.service} at {self.host} sent an answer that is not {self.answer} "
            f"({what}); check that {self.hint} points at /v1 of the {self.service}"
        )

    def close(self) -> None:
        """Close the pooled connections (a later call opens new ones)."""
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    # -- one request ------------------------------------------------------------------------

    def _http(self) -> Any:
        """The shared ``httpx.Client``, created on first use (importing httpx is not free)."""
        with self._lock:
            if self._client is None:
                try:
                    import httpx
                except ImportError as exc:
                    raise Unavailable(
                        f"the {self.service} client needs httpx; install it with: pip install httpx"
                    ) from exc
                headers = {"Accept": "application/json"}
                if self._api_key:
                    headers["Authorization"] = f"Bearer {self._api_key}"
                self._client = httpx.Client(
                    timeout=httpx.Timeout(self.read_timeout, connect=self.connect_timeout),
                    headers=headers,
                )
            return self._client

    def _attempt(self, client: Any, payload: dict[str, Any]) -> Any:
        """One POST: the decoded answer, a :class:`_Retry`, or an error for a refusal."""
        import httpx

        try:
            response = client.post(self.url, json=payload)
        except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
            raise InvalidInput(
                f"the {self.service} URL for {self.host} is not usable "
                f"({type(exc).__name__}); check {self.hint}"
            ) from exc
        except httpx.TimeoutException as exc:
            return _Retry(f"timed out ({type(exc).__name__})", None)
        except httpx.TransportError as exc:
            return _Retry(f"connection failed ({type(exc).__name__})", None)
        except httpx.HTTPError as exc:  # e.g. a body that does not decode (DecodingError)
            return _Retry(f"the answer could not be read ({type(exc).__name__})", None)
        status = response.status_code
        if status in RETRY_STATUSES or status >= SERVER_ERROR_MIN:
            return _Retry(f"HTTP {status}", self._retry_after(response.headers.get("Retry-After")))
        if status >= CLIENT_ERROR_MIN:
            raise InvalidInput(self._rejection(response))
        try:
            return response.json()
        except ValueError as exc:
            raise self.malformed("the body is not JSON") from exc

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        """Exponential backoff with jitter (half to full step), or the server's Retry-After."""
        if retry_after is not None:
            return retry_after
        step = min(self.max_backoff, self.backoff * 2.0 ** (attempt - 1))
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
        message = f"{self.service} at {self.host} rejected the request: HTTP {status}"
        code = _error_code(response)
        if code:
            message += f" ({code})"
        return f"{message}; {HINTS.get(status, DEFAULT_HINT)}"


def host_label(hostname: str, port: int | None, scheme: str) -> str:
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
