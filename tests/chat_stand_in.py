"""A stand-in OpenAI-compatible chat server on 127.0.0.1 (port 0) for the tests of `ask`: it
records every request and answers from a script — streamed text, then tool calls — so a test
plays the model without a model. The ``stand_in`` fixture starts it."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

POLL_SECONDS = 0.02  # how soon the stand-in notices shutdown


@dataclass
class Turn:
    """One scripted reply: text (streamed in pieces) or tool calls (name, arguments)."""

    text: str = ""
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


@dataclass
class StandIn:
    url: str = ""
    script: list[Turn] = field(default_factory=list)
    default: Turn = field(default_factory=lambda: Turn(text="No script left."))
    requests: list[dict[str, Any]] = field(default_factory=list)

    def reply(self) -> bytes:
        turn = self.script.pop(0) if self.script else self.default
        chunks: list[dict[str, Any]] = []
        for start in range(0, len(turn.text), 7):
            chunks.append({"content": turn.text[start : start + 7]})
        for index, (name, arguments) in enumerate(turn.calls):
            raw = json.dumps(arguments)
            chunks.append(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": f"call{index}",
                            "type": "function",
                            "function": {"name": name, "arguments": raw[:5]},
                        }
                    ]
                }
            )
            chunks.append({"tool_calls": [{"index": index, "function": {"arguments": raw[5:]}}]})
        events = [{"choices": [{"index": 0, "delta": delta}]} for delta in chunks]
        finish = "tool_calls" if turn.calls else "stop"
        events.append({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
        return "".join(f"data: {json.dumps(e)}\n\n" for e in events).encode() + b"data: [DONE]\n\n"

    @property
    def bodies(self) -> list[str]:
        return [json.dumps(r, ensure_ascii=False) for r in self.requests]


@pytest.fixture
def stand_in() -> Iterator[StandIn]:
    state = StandIn()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state.requests.append(body | {"_path": self.path})
            payload = state.reply()
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(POLL_SECONDS,), daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    yield state
    server.shutdown()
    server.server_close()
