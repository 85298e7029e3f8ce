"""The chat client: streamed text and tool calls, errors, and the gate on outgoing requests.

httpx's MockTransport stands in for the server: no sockets.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any

import httpx
import pytest

from lorebase.agent.chat import ChatClient, ChatSettings, Reply, carries_knowledge
from lorebase.agent.gate import LocalityGate
from lorebase.errors import ContentBlocked, InvalidInput, Unavailable
from lorebase.settings import ChatConfig, Settings

FENCED = "<untrusted-document id=1 nonce=0123456789abcdef01234567>\nx\n</untrusted-document>"


def sse(*chunks: dict[str, Any]) -> bytes:
    lines = [f"data: {json.dumps(chunk)}\n\n" for chunk in chunks]
    return ("".join(lines) + "data: [DONE]\n\n").encode()


def delta(**fields: Any) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": fields, "finish_reason": None}]}


def client(
    handler: Callable[[httpx.Request], httpx.Response],
    url: str = "http://127.0.0.1:9/v1",
    gate: LocalityGate | None = None,
) -> ChatClient:
    settings = ChatSettings(url=url, model="m", api_key="k-123")
    return ChatClient(settings, gate or LocalityGate(), transport=httpx.MockTransport(handler))


def drain(stream: Generator[str, None, Reply]) -> tuple[list[str], Reply]:
    pieces = []
    while True:
        try:
            pieces.append(next(stream))
        except StopIteration as done:
            return pieces, done.value


def test_streams_text_and_assembles_tool_calls() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        body = sse(
            delta(role="assistant", content="Hel"),
            delta(content="lo"),
            delta(
                tool_calls=[
                    {
                        "index": 0,
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "search_knowledge_base", "arguments": ""},
                    }
                ]
            ),
            delta(tool_calls=[{"index": 0, "function": {"arguments": '{"query": '}}]),
            delta(
                tool_calls=[
                    {
                        "index": 1,
                        "id": "c2",
                        "function": {"name": "list_knowledge_bases", "arguments": "{}"},
                    }
                ]
            ),
            delta(tool_calls=[{"index": 0, "function": {"arguments": '"vacation"}'}}]),
            {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        )
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    with client(handler) as chat:
        pieces, reply = drain(
            chat.stream([{"role": "user", "content": "hi"}], tools=[{"x": 1}], tool_choice="auto")
        )
    assert pieces == ["Hel", "lo"] and reply.text == "Hello"
    assert [(c.id, c.name, json.loads(c.arguments)) for c in reply.tool_calls] == [
        ("c1", "search_knowledge_base", {"query": "vacation"}),
        ("c2", "list_knowledge_bases", {}),
    ]
    assert reply.finish_reason == "tool_calls"
    sent = json.loads(seen[0].content)
    assert sent["stream"] is True and sent["model"] == "m" and sent["tool_choice"] == "auto"
    assert seen[0].url.path == "/v1/chat/completions"
    assert seen[0].headers["authorization"] == "Bearer k-123"


def test_reads_a_whole_json_answer_too() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        message = {
            "role": "assistant",
            "content": "Done [1].",
            "tool_calls": [
                {"id": "t", "type": "function", "function": {"name": "n", "arguments": {"a": 1}}}
            ],
        }
        return httpx.Response(
            200, json={"choices": [{"message": message, "finish_reason": "stop"}]}
        )

    with client(handler) as chat:
        pieces, reply = drain(chat.stream([]))
    assert pieces == ["Done [1]."]
    assert reply.tool_calls[0].name == "n" and json.loads(reply.tool_calls[0].arguments) == {"a": 1}


@pytest.mark.parametrize(
    ("status", "error", "hint"),
    [
        (401, InvalidInput, "API key"),
        (404, InvalidInput, "/v1"),
        (429, Unavailable, "later"),
        (503, Unavailable, "later"),
    ],
)
def test_status_errors_name_the_endpoint_not_the_body(
    status: int, error: type[Exception], hint: str
) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, text="echo: secret question")

    with client(handler) as chat, pytest.raises(error) as caught:
        drain(chat.stream([{"role": "user", "content": "secret question"}]))
    assert "127.0.0.1:9" in str(caught.value) and hint in str(caught.value)
    assert "secret" not in str(caught.value)


def test_connection_failures_and_garbage_are_unavailable() -> None:
    def refused(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused")

    with client(refused) as chat, pytest.raises(Unavailable, match="did not answer"):
        drain(chat.stream([]))

    def garbage(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200, headers={"content-type": "text/event-stream"}, content=b"data: {not json\n\n"
        )

    with client(garbage) as chat, pytest.raises(Unavailable, match="OpenAI-compatible"):
        drain(chat.stream([]))


def chat_config(env: dict[str, str]) -> ChatConfig:
    return Settings.from_env(Path("/nonexistent"), env).chat


def test_settings_from_env() -> None:
    env = {
        "LOREBASE_CHAT_URL": "http://127.0.0.1:8080/v1",
        "LOREBASE_CHAT_MODEL": "qwen",
        "LOREBASE_CHAT_API_KEY": "k",
    }
    settings = ChatSettings.from_config(chat_config(env))
    assert (settings.url, settings.model, settings.api_key) == (
        "http://127.0.0.1:8080/v1",
        "qwen",
        "k",
    )
    assert ChatSettings.from_config(chat_config(env), model="llama").model == "llama"
    only_model = chat_config({"LOREBASE_CHAT_MODEL": "m"})
    assert ChatSettings.from_config(only_model).url.startswith("http://127.0.0.1")
    assert "'k'" not in repr(chat_config(env))  # the key stays out of reprs and logs
    with pytest.raises(InvalidInput, match="model"):
        ChatSettings.from_config(chat_config({}))
    with pytest.raises(InvalidInput, match="http"):
        ChatSettings(url="ftp://x", model="m")


@pytest.mark.parametrize(
    ("body", "carries"),
    [
        ({"messages": [{"role": "user", "content": "what is <untrusted-document>?"}]}, False),
        ({"messages": [{"role": "system", "content": "hi"}]}, False),
        ({"messages": [], "tools": [{"type": "function"}]}, True),
        ({"messages": [{"role": "tool", "tool_call_id": "1", "content": "x"}]}, True),
        ({"messages": [{"role": "user", "content": f"q\n{FENCED}"}]}, True),
    ],
)
def test_what_counts_as_knowledge_base_content(body: dict[str, Any], carries: bool) -> None:
    assert carries_knowledge(json.dumps(body).encode()) is carries


def test_the_gate_stops_content_to_a_remote_host_before_it_is_sent() -> None:
    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200, json={"choices": [{"message": {"content": "ok"}}]})

    remote = LocalityGate(loopback=lambda host: False)
    with client(handler, gate=remote) as chat:
        assert not chat.decision.content_allowed
        with pytest.raises(ContentBlocked, match=r"127\.0\.0\.1:9"):
            drain(chat.stream([{"role": "user", "content": "q"}], tools=[{"type": "function"}]))
        with pytest.raises(ContentBlocked):
            drain(chat.stream([{"role": "user", "content": FENCED}]))
        assert sent == []
        drain(chat.stream([{"role": "user", "content": "just a question"}]))
        assert len(sent) == 1
    opted_in = LocalityGate(allow_cloud=True, loopback=lambda host: False)
    with client(handler, gate=opted_in) as chat:
        drain(chat.stream([{"role": "user", "content": FENCED}], tools=[{"type": "function"}]))
    assert len(sent) == 2
