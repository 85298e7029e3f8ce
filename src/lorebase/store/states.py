"""The states and kinds the store's records carry (a base's scope and indexing state, a
source's kind, a document's state, a grant's access) and how a base's scope reads: plain
enumerations and messages, apart from the records and roles of :mod:`lorebase.store.base` so
what only names them (the command line's options, the access rules) loads without those."""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

    from lorebase.store.base import KnowledgeBase


class Scope(StrEnum):
    """Who a knowledge base belongs to: everyone (global), one team, or one user (personal)."""

    GLOBAL = "global"
    TEAM = "team"
    PERSONAL = "personal"


class KbState(StrEnum):
    """Where a knowledge base's indexing stands: waiting for its first pass, in a pass, ready,
    waiting on something it names (an embedder that does not answer), or failed."""

    PENDING = "pending"
    INDEXING = "indexing"
    READY = "ready"
    WAITING = "waiting"
    FAILED = "failed"


class SourceKind(StrEnum):
    """What a source follows: a folder (walked) or one file added on its own by path."""

    FOLDER = "folder"
    FILE = "file"


class DocumentState(StrEnum):
    """Where a document stands: pending, in one of the steps of a pass, indexed (searchable),
    or failed with a fixed reason."""

    PENDING = "pending"
    EXTRACTING = "extracting"
    CHUNKING = "chunking"
    EMBEDDING = "embedding"
    INDEXED = "indexed"
    FAILED = "failed"


class GrantAccess(StrEnum):
    """What a grant allows: seeing and searching the base, or also changing its documents."""

    READ = "read"
    WRITE = "write"


def ambiguous(name: str, bases: Sequence[KnowledgeBase]) -> str:
    """The message for a name several bases answer to: each one's id and scope, and how to
    name one."""
    listed = "; ".join(f"{kb.id} ({describe_scope(kb)})" for kb in bases)
    return (
        f"{len(bases)} knowledge bases are named {name!r}: {listed}; "
        f"give the id instead of the name (for example --kb {bases[0].id})"
    )


def describe_scope(kb: KnowledgeBase) -> str:
    """``global``, ``team 3`` or ``personal, alice`` (``personal, administrators``)."""
    if kb.scope is Scope.TEAM:
        return f"team {kb.team_id}" if kb.team_id is not None else "team"
    if kb.scope is Scope.PERSONAL:
        return f"personal, {kb.owner or 'administrators'}"
    return "global"
