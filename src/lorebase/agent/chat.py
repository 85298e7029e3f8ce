"""A client for OpenAI-compatible ``/chat/completions`` endpoints, streaming.

One client speaks to Ollama, llama.cpp's server, vLLM, LM Studio and OpenAI: POST
``{base_url}/chat/completions`` with ``stream: true`` and read server-sent events whose
``choices[0].delta`` carries text and tool-call fragments (assembled by ``index``). A server
that answers with one JSON body instead is read too.

Every request passes the locality gate on its way out (an httpx request hook looking at the
host of that very request): to a host that is not local, without the operator's opt-in, a
request carrying tools, tool results or a fenced passage is refused before it is sent
(:class:`ContentBlocked`). Redirects are never followed, and proxy settings from the
environment are ignored for local endpoints, so the request goes where the gate looked.
Errors name the endpoint and the status, never the messages or the server's reply.
"""

from __future__ import annotations

import json
import re
from collections.abc import Generator, Iterable
from dataclasses import dataclass, field
from typing import Any

from lorebase.agent.fence import MARKER
from lorebase.agent.gate import Decision, LocalityGate
from lorebase.errors import ContentBlocked, InvalidInput, Unavailable
from lorebase.settings import DEFAULT_CHAT_URL, ChatConfig

ENV_MODEL = "LOREBASE_CHAT_MODEL"
CONNECT_TIMEOUT = 5.0
DEFAULT_READ_TIMEOUT = 120.0
SSE_DATA = "data:"
SSE_DONE = "[DONE]"
# A real fence marker: ours carry a 24-hex-digit nonce, which no user types by accident.
FENCED = re.compile(rf"<{MARKER}[^>\n]*nonce=[0-9a-f]{{24}}>")
HINTS = {
    401: "the endpoint wants an API key; set LOREBASE_CHAT_API_KEY",
    403: "the API key is not allowed to use this model",
    404: "no such endpoint or model; the URL should end in /v1 and the model must exist",
    422: "the endpoint refused the request; check the model name",
}
DEFAULT_HINT = "the endpoint refused the request; check the model name and the URL"
CLIENT_ERROR_MIN = 400
SERVER_ERROR_MIN = 500
RETRY_LATER = 429


@dataclass(frozen=True, slots=True)
class ChatSettings:
    """Where ``lorebase ask`` sends its prompts. ``url`` is the base (ending in ``/v1``)."""

    url: str = DEFAULT_CHAT_URL
    model: str | None = None
    api_key: str | None = None
    timeout: float = DEFAULT_READ_TIMEOUT

    def __post_init__(self) -> None:
        if not self.url.startswith(("http://", "https://")):
            raise InvalidInput("the chat URL must start with http:// or https://")
        if not self.model:
            raise InvalidInput(f"name the chat model with --model or {ENV_MODEL}")

    @classmethod
    def from_config(
        cls, chat: ChatConfig, *, url: str | None = None, model: str | None = None
    ) -> ChatSettings:
        """Options first, then the settings (``LOREBASE_CHAT_URL``/``_MODEL``/``_API_KEY``)."""
        return cls(url=url or chat.url, model=model or chat.model, api_key=chat.api_key)


@dataclass(frozen=True, slots=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # JSON text, as the model wrote it


@dataclass(slots=True)
class Reply:
    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str | None = None


def carries_knowledge(body: bytes) -> bool:
    """Whether a chat request would hand knowledge-base content to the model: tools, tool
    results, or a fenced passage."""
    try:
        payload = json.loads(body or b"{}")
    except ValueError:
        return True  # not ours to judge: refuse
    if not isinstance(payload, dict):
        return True
    if payload.get("tools"):
        return True
    for message in payload.get("messages") or []:
        if not isinstance(message, dict) or message.get("role") == "tool":
            return True
        if FENCED.search(json.dumps(message.get("content"), ensure_ascii=False)):
            return True
    return False


class ChatClient:
    """Streams chat completions from one endpoint, through the gate."""

    def __init__(
        self, settings: ChatSettings, gate: LocalityGate, *, transport: Any | None = None
    ) -> None:
        import httpx

        self.settings = settings
        self.gate = gate
        self.url = settings.url.rstrip("/") + "/chat/completions"
        self.decision: Decision = gate.decide(self.url)
        self._client = httpx.Client(
            timeout=httpx.Timeout(settings.timeout, connect=CONNECT_TIMEOUT),
            follow_redirects=False,
            trust_env=not self.decision.local,
            event_hooks={"request": [self._check]},
            transport=transport,
        )

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> ChatClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check(self, request: Any) -> None:
        """The gate, on the request as it leaves: its own host decides."""
        host = request.url.raw_host.decode("ascii")
        if self.gate.allow_cloud or self.gate.is_local(host):
            return
        if carries_knowledge(request.content):
            raise ContentBlocked(
                f"refused to send knowledge-base content to {self.decision.endpoint}, which is "
                "not local; allow_cloud_model_access is off"
            )

    def stream(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        tool_choice: str | None = None,
    ) -> Generator[str, None, Reply]:
        """Yield the answer's text as it arrives; return the whole reply (with tool calls)."""
        import httpx

        body: dict[str, Any] = {"model": self.settings.model, "messages": messages, "stream": True}
        if tools:
            body["tools"] = tools
            if tool_choice:
                body["tool_choice"] = tool_choice
        headers = {"Accept": "text/event-stream"}
        if self.settings.api_key:
            headers["Authorization"] = f"Bearer {self.settings.api_key}"
        endpoint = self.decision.endpoint
        try:
            with self._client.stream("POST", self.url, json=body, headers=headers) as response:
                _raise_for_status(response.status_code, endpoint)
                if "text/event-stream" not in response.headers.get("content-type", ""):
                    return (yield from _whole(response.read(), endpoint))
                return (yield from _events(response.iter_lines(), endpoint))
        except httpx.TimeoutException:
            raise Unavailable(f"the chat endpoint {endpoint} timed out") from None
        except httpx.TransportError as error:
            raise Unavailable(
                f"the chat endpoint {endpoint} did not answer ({type(error).__name__}); is the "
                "server running?"
            ) from None


def _raise_for_status(status: int, endpoint: str) -> None:
    if status == RETRY_LATER or status >= SERVER_ERROR_MIN:
        raise Unavailable(f"the chat endpoint {endpoint} answered {status}; try again later")
    if status >= CLIENT_ERROR_MIN:
        raise InvalidInput(
            f"the chat endpoint {endpoint} answered {status}: {HINTS.get(status, DEFAULT_HINT)}"
        )


def _malformed(endpoint: str) -> Unavailable:
    return Unavailable(f"the chat endpoint {endpoint} did not send an OpenAI-compatible reply")


def _events(lines: Any, endpoint: str) -> Generator[str, None, Reply]:
    reply = Reply()
    calls: dict[int, dict[str, str]] = {}
    text: list[str] = []
    for line in lines:
        if not line.startswith(SSE_DATA):
            continue
        data = line[len(SSE_DATA) :].strip()
        if data == SSE_DONE:
            break
        try:
            chunk = json.loads(data)
            choice = (chunk.get("choices") or [{}])[0]
            delta = choice.get("delta") or {}
        except (ValueError, AttributeError, IndexError, TypeError):
            raise _malformed(endpoint) from None
        content = delta.get("content")
        if isinstance(content, str) and content:
            text.append(content)
            yield content
        for fragment in delta.get("tool_calls") or []:
            _merge(calls, fragment)
        reply.finish_reason = choice.get("finish_reason") or reply.finish_reason
    reply.text = "".join(text)
    reply.tool_calls = _assembled(calls)
    return reply


def _whole(raw: bytes, endpoint: str) -> Generator[str, None, Reply]:
    try:
        choice = json.loads(raw)["choices"][0]
        message = choice.get("message") or {}
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        raise _malformed(endpoint) from None
    calls: dict[int, dict[str, str]] = {}
    for index, call in enumerate(message.get("tool_calls") or []):
        _merge(calls, {"index": index, **call})
    text = message.get("content") or ""
    if isinstance(text, str) and text:
        yield text
    return Reply(str(text), _assembled(calls), choice.get("finish_reason"))


def _merge(calls: dict[int, dict[str, str]], fragment: Any) -> None:
    """Tool calls arrive in pieces keyed by index: id and name once, arguments in parts."""
    if not isinstance(fragment, dict):
        return
    index = fragment.get("index", 0)
    call = calls.setdefault(
        index if isinstance(index, int) else 0, {"id": "", "name": "", "arguments": ""}
    )
    if fragment.get("id"):
        call["id"] = str(fragment["id"])
    function = fragment.get("function") or {}
    if function.get("name"):
        call["name"] = str(function["name"])  # sent whole, once (some servers repeat it)
    if function.get("arguments"):
        arguments = function["arguments"]
        call["arguments"] += arguments if isinstance(arguments, str) else json.dumps(arguments)


def _assembled(calls: dict[int, dict[str, str]]) -> list[ToolCall]:
    return [
        ToolCall(call["id"] or f"call_{index}", call["name"], call["arguments"])
        for index, call in sorted(calls.items())
    ]


def chat_client(
    chat: ChatConfig,
    *,
    url: str | None = None,
    model: str | None = None,
    local_hosts: Iterable[str] = (),
    allow_cloud: bool | None = None,
) -> ChatClient:
    """A client for the configured chat model (options override the settings), behind the
    locality gate: knowledge-base content goes only to a local endpoint unless allowed."""
    gate = LocalityGate.from_config(chat, local_hosts=local_hosts, allow_cloud=allow_cloud)
    return ChatClient(ChatSettings.from_config(chat, url=url, model=model), gate)
