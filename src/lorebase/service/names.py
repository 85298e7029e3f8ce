"""Which base a name means: a name is unique only within a scope (among the global bases, one
team's bases, one owner's personal bases), so one name may answer for several bases.

- **The operator** (no caller: the CLI, the library) sees every base and is given no
  preference: a name several bases share is refused (``InvalidInput``), listing their ids and
  scopes, and the id is taken instead.
- **A caller** (an API key, the agent tools on their behalf) chooses among the bases they may
  see, nearest first: their personal base, then their team's, then the global one. Two
  visible bases of the same rank (two of their teams have a base of that name; an
  administrator's own base and the administrators' base) are refused the same way, listing
  only those two.
- Where a name is taken, a number that no base (visible to the caller) is named is read as an
  id: ``--kb 12``.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import TYPE_CHECKING

from lorebase.accounts.access import Caller
from lorebase.errors import InvalidInput, NotFound
from lorebase.store.states import Scope, ambiguous, describe_scope

if TYPE_CHECKING:
    from lorebase.store.base import KnowledgeBase

__all__ = ["NEAREST_FIRST", "as_id", "choose", "describe_scope"]

NEAREST_FIRST = (Scope.PERSONAL, Scope.TEAM, Scope.GLOBAL)
"""A caller's preference among visible bases of one name."""


def as_id(name: str) -> int | None:
    """The id a name stands for when no base answers to it: plain ASCII digits only."""
    return int(name) if name.isascii() and name.isdigit() and len(name) < 19 else None


def choose(
    name: str, named: Sequence[KnowledgeBase], caller: Caller | None, *, missing: str
) -> KnowledgeBase:
    """The one base ``name`` means among ``named`` (the bases of that name the asker may see);
    ``NotFound(missing)`` when there is none, ``InvalidInput`` naming the candidates when it
    stays ambiguous."""
    if not named:
        raise NotFound(missing)
    if caller is not None:
        nearest = min(NEAREST_FIRST.index(kb.scope) for kb in named)
        named = [kb for kb in named if NEAREST_FIRST.index(kb.scope) == nearest]
    if len(named) > 1:
        raise InvalidInput(ambiguous(name, named))
    return named[0]


def missing_kb(name: str, visible: Sequence[str], *, named_in_message: bool = True) -> str:
    """What to say when no base the asker may see is called ``name``: the nearest of the
    ``visible`` names when one is close (a typo, another case), else how to list them. Pure."""
    folded = {known.casefold(): known for known in visible}
    close = difflib.get_close_matches(name.casefold(), list(folded), n=1, cutoff=0.6)
    head = f"no knowledge base named {name!r}" if named_in_message else "no such knowledge base"
    if close:
        return f"{head}; did you mean {folded[close[0]]!r}?"
    if not visible and named_in_message:
        return f"{head}; there are no knowledge bases yet: add files with `lorebase add`"
    if not visible:
        return f"{head}; you can see none yet"
    return f"{head}; list them to see the names"
