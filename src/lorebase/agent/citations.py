"""Numbered sources: every passage a tool hands out gets a number the model can cite as
``[n]``, the same number each time the same passage comes back in one conversation.

The registry keeps lorebase's own copy of each source's provenance, so an answer's
citations are printed from what the store said, never from what the model wrote.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from lorebase.agent.fence import for_terminal, one_line

PATH_SEPARATOR = " › "


@dataclass(frozen=True, slots=True)
class Source:
    """One cited passage (``chunk_id`` set) or document window (``chunk_id`` None)."""

    number: int
    knowledge_base: str
    document_id: str
    chunk_id: str | None
    path: str
    title: str | None
    trail: tuple[str, ...]
    page: int | None = None
    page_end: int | None = None
    line: int | None = None

    @property
    def location(self) -> str:
        """``p. 3–4`` or ``line 12``, or empty."""
        if self.page is not None:
            pages = f"{self.page}–{self.page_end}" if self.page_end not in (None, self.page) else ""
            return f"p. {pages or self.page}"
        return f"line {self.line}" if self.line is not None else ""

    @property
    def label(self) -> str:
        """``path › heading › subheading, line 12``, safe to print (document-controlled parts
        are single lines without control characters)."""
        parts = [one_line(self.path), *(one_line(step) for step in self.trail)]
        text = PATH_SEPARATOR.join(part for part in parts if part)
        if self.location:
            text += f", {self.location}"
        return for_terminal(text)


class Citations:
    """The sources handed out in one conversation (thread-safe: tools may run in threads)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_key: dict[tuple[str, str, str | None], Source] = {}

    def register(
        self,
        *,
        knowledge_base: str,
        document_id: str,
        chunk_id: str | None,
        path: str,
        title: str | None,
        trail: tuple[str, ...] = (),
        page: int | None = None,
        page_end: int | None = None,
        line: int | None = None,
    ) -> Source:
        """The source's number: a new one, or the one it got before."""
        key = (knowledge_base, document_id, chunk_id)
        with self._lock:
            known = self._by_key.get(key)
            if known is not None:
                return known
            source = Source(
                number=len(self._by_key) + 1,
                knowledge_base=knowledge_base,
                document_id=document_id,
                chunk_id=chunk_id,
                path=path,
                title=title,
                trail=trail,
                page=page,
                page_end=page_end,
                line=line,
            )
            self._by_key[key] = source
            return source

    def get(self, number: int) -> Source | None:
        with self._lock:
            return next((s for s in self._by_key.values() if s.number == number), None)

    def all(self) -> list[Source]:
        with self._lock:
            return sorted(self._by_key.values(), key=lambda source: source.number)
