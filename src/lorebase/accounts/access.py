"""Who may see and change which knowledge base: pure functions, one rule table.

- ``global`` bases: every user sees them; admins create and change them.
- ``team`` bases: members of the team see them; team admins (and admins) create and change.
- ``personal`` bases: only the owner sees and changes them; one without an owner (made
  with the command line on the server's machine) belongs to the administrators.
- a team base **shared** with another team or a user (a grant, see
  :mod:`lorebase.service.sharing`) is seen by the grantees too, and with a read-write grant
  its documents are changed by them; administering it (its settings, sources, deletion,
  re-embedding, export, grants) stays with whoever administers it by its scope.

A base the caller may not see is reported exactly like a missing one (404), so ids and
names never leak across scopes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lorebase.accounts.base import Role, User
from lorebase.store.states import GrantAccess, Scope

if TYPE_CHECKING:
    from lorebase.store.base import KnowledgeBase

OPERATOR = "cli"
"""Who and where, in the audit log, for changes made without a caller (the operator's
commands)."""


@dataclass(frozen=True, slots=True)
class Caller:
    """The user behind a request, with their team roles (team id → role), the API key the
    request came with (or the key its sign-in session was exchanged for; None without keys),
    whether it came with a session cookie rather than a key, the bases shared with the
    user or their teams (base id → the access granted), read afresh for each request, and the
    address the request came from."""

    user: User
    teams: dict[int, Role] = field(default_factory=dict)
    key_id: int | None = None
    by_session: bool = False
    shared: Mapping[int, GrantAccess] = field(default_factory=dict)
    client: str | None = None  # where the request came from (its address), for the audit log

    @property
    def is_admin(self) -> bool:
        return self.user.role is Role.ADMIN


def can_see(caller: Caller, kb: KnowledgeBase) -> bool:
    if kb.id in caller.shared:
        return True
    if kb.scope is Scope.GLOBAL:
        return True
    if kb.scope is Scope.TEAM:
        return kb.team_id is not None and kb.team_id in caller.teams
    return _owns(caller, kb)


def _owns(caller: Caller, kb: KnowledgeBase) -> bool:
    return kb.owner == caller.user.name if kb.owner is not None else caller.is_admin


def can_change(caller: Caller, kb: KnowledgeBase) -> bool:
    """Write access to the documents: uploads, notes, tags, deletes, reindexes."""
    return caller.shared.get(kb.id) is GrantAccess.WRITE or can_administer(caller, kb)


def can_administer(caller: Caller, kb: KnowledgeBase) -> bool:
    """The base's own settings, sources, deletion, re-embedding and grants: by its scope
    alone (a grant never gives these)."""
    if kb.scope is Scope.GLOBAL:
        return caller.is_admin
    if kb.scope is Scope.TEAM:
        role = caller.teams.get(kb.team_id) if kb.team_id is not None else None
        return role is Role.ADMIN or (caller.is_admin and role is not None)
    return _owns(caller, kb)


def can_create(caller: Caller, scope: Scope, team_id: int | None) -> bool:
    if scope is Scope.GLOBAL:
        return caller.is_admin
    if scope is Scope.TEAM:
        return team_id is not None and caller.teams.get(team_id) is Role.ADMIN
    return True
