"""POST /v1/ask: an answer from the configured chat model, streamed as server-sent events.

The chat endpoint is the operator's (``LOREBASE_CHAT_URL``…, read once into the settings); the
locality gate decides, on
that endpoint, whether knowledge-base content may reach it. Events: ``notice`` (the gate's
decision, named endpoint), ``delta`` (answer text), ``tool`` (a tool the model used; no
arguments), ``answer`` (final text and the numbered sources), ``error``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Annotated, Any

from fastapi import APIRouter
from fastapi.responses import StreamingResponse
from pydantic import Field

from lorebase.api.deps import CallerDep, LbDep
from lorebase.api.schemas import Strict
from lorebase.errors import LorebaseError
from lorebase.service import Caller, Lorebase

router = APIRouter(tags=["agent tools"])


MAX_HISTORY_TURNS = 20
MAX_QUESTION_CHARS = 4000
MAX_ANSWER_CHARS = 20000


class AskTurnIn(Strict):
    """An earlier turn of the conversation, as the client kept it."""

    question: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS)
    answer: str = Field(max_length=MAX_ANSWER_CHARS)


class AskIn(Strict):
    question: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS)
    profile: str | None = Field(None, max_length=64)
    inject: bool = False
    top_k: int = Field(5, ge=1, le=20)
    knowledge_bases: list[Annotated[int, Field(ge=1, le=2**63 - 1)]] | None = Field(
        None,
        max_length=100,
        description="Only these bases (ids) for this question: the bases switched on; default "
        "every base the caller may see (or the profile's).",
    )
    history: list[AskTurnIn] = Field(
        default_factory=list,
        max_length=MAX_HISTORY_TURNS,
        description="The conversation's earlier turns, oldest first ({question, answer}): "
        "a follow-up carries them to the model. Not sent to an endpoint the locality gate "
        "keeps content from.",
    )


def _event(kind: str, data: dict[str, Any]) -> str:
    return f"event: {kind}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


def _answer_events(lb: Lorebase, caller: Caller, body: AskIn) -> Iterator[str]:
    from lorebase.agent.ask import Answer, Asker, Delta, Notice, ToolUse, Turn
    from lorebase.agent.chat import chat_client
    from lorebase.agent.tools import toolbox_for

    try:
        toolbox = toolbox_for(lb, caller, body.profile, body.knowledge_bases)
        with chat_client(lb.settings.chat) as client:
            asker = Asker(toolbox, client, lb.usage_meter)
            history = [Turn(t.question, t.answer) for t in body.history]
            events = asker.ask(body.question, inject=body.inject, top_k=body.top_k, history=history)
            for event in events:
                if isinstance(event, Notice):
                    yield _event("notice", {"text": event.text})
                elif isinstance(event, Delta):
                    yield _event("delta", {"text": event.text})
                elif isinstance(event, ToolUse):
                    yield _event("tool", {"name": event.name, "ok": event.ok})
                elif isinstance(event, Answer):
                    yield _event("answer", _answer(event))
    except LorebaseError as error:
        yield _event("error", {"message": str(error)})


def _answer(answer: Any) -> dict[str, Any]:
    sources = [
        {
            "number": source.number,
            "citation": source.label,
            "document_id": source.provenance.document_id,
            "chunk_id": source.chunk_id,
            "knowledge_base": source.provenance.knowledge_base,
        }
        for source in answer.sources
    ]
    return {"text": answer.text, "sources": sources, "cited": answer.cited, "rounds": answer.rounds}


@router.post("/v1/ask")
def ask(body: AskIn, lb: LbDep, caller: CallerDep) -> StreamingResponse:
    """Answer a question with the configured chat model over the caller's knowledge bases,
    streamed as server-sent events, ending with the numbered sources it cited."""
    return StreamingResponse(_answer_events(lb, caller, body), media_type="text/event-stream")
