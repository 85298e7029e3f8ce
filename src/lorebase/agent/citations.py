"""Numbered sources: every passage a tool hands out gets a number the model can cite as
``[n]``, the same number each time the same passage comes back in one conversation.

The registry keeps lorebase's own copy of each source's provenance, so an answer's
citations are printed from what the store said, never from what the model wrote.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from lorebase.agent.fence import for_terminal, one_line
from lorebase.types import CITATION_SEPARATOR, Position, Provenance


def terminal_citation(provenance: Provenance) -> str:
    """:meth:`Provenance.citation`, safe to print: document-controlled parts are single lines
    without control characters, escape sequences or bidi overrides."""
    return for_terminal(provenance.citation(one_line))


def terminal_place(position: Position) -> str:
    """Where in its document a passage stands, ``heading › subheading (line 12)``, safe to
    print: for a passage listed under its document's hit (the path said once, above it)."""
    trail = CITATION_SEPARATOR.join(part for part in map(one_line, position.trail) if part)
    where = position.location
    text = f"{trail} ({where})" if trail and where else trail or where
    return for_terminal(text) or "elsewhere in the document"


@dataclass(frozen=True, slots=True)
class Citation:
    """One cited passage (``chunk_id`` set) or document window (``chunk_id`` None) and its
    provenance (a window's: the document, with the window's offsets)."""

    number: int
    chunk_id: str | None
    provenance: Provenance

    @property
    def label(self) -> str:
        """The passage's citation (``path › heading › subheading (line 12)``), safe to print."""
        return terminal_citation(self.provenance)


class Citations:
    """The sources handed out in one conversation (thread-safe: tools may run in threads)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_key: dict[tuple[str, str, str | None], Citation] = {}

    def register(self, chunk_id: str | None, provenance: Provenance) -> Citation:
        """The source's number: a new one, or the one it got before."""
        key = (provenance.knowledge_base, provenance.document_id, chunk_id)
        with self._lock:
            known = self._by_key.get(key)
            if known is not None:
                return known
            source = Citation(
                number=len(self._by_key) + 1, chunk_id=chunk_id, provenance=provenance
            )
            self._by_key[key] = source
            return source

    def get(self, number: int) -> Citation | None:
        with self._lock:
            return next((s for s in self._by_key.values() if s.number == number), None)

    def all(self) -> list[Citation]:
        with self._lock:
            return sorted(self._by_key.values(), key=lambda source: source.number)
