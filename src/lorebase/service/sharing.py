"""Sharing a team's base with another team or a user, read-only or read-write.

A grant is kept in the store (``kb_grants``) and read afresh with each request's caller
(:meth:`~lorebase.service.access.Access.authenticate`), so a revocation holds from the next
request on. What a grant allows is decided with every other access rule in
:mod:`lorebase.accounts.access`: grantees see the base (in listings, searches, profiles and
the agent tools, with its owner team named); a read-write grant lets them change its
documents; only whoever administers the base by its scope shares it, changes its grants or
its settings. Every grant and revocation is audited.
"""

from __future__ import annotations

from dataclasses import dataclass

from lorebase.accounts.access import Caller
from lorebase.errors import InvalidInput, NotFound
from lorebase.service.access import Access
from lorebase.store.base import Grant, Grantee, KnowledgeBase, Store
from lorebase.store.states import GrantAccess, Scope


@dataclass(frozen=True, slots=True)
class SharedGrant:
    """A grant with its grantee's name (a team's or a user's)."""

    grant: Grant
    name: str


class Sharing:
    """The grants of bases, as their administrators change them."""

    def __init__(self, store: Store, access: Access) -> None:
        self._store = store
        self._access = access

    def share(
        self,
        kb: KnowledgeBase,
        *,
        team: str | None = None,
        user: str | None = None,
        write: bool = False,
        caller: Caller | None = None,
    ) -> SharedGrant:
        """Share ``kb`` (looked up with ``administer=True``) with a team or a user (one of the
        two, by name: ``NotFound`` for one that does not exist); sharing again changes the
        access."""
        grantee, grantee_id, name = self._grantee(kb, team, user)
        access = GrantAccess.WRITE if write else GrantAccess.READ
        granted_by = caller.user.name if caller is not None else None
        grant = self._store.grant(kb.id, grantee, grantee_id, access, granted_by)
        self._access.audit(caller, "share_knowledge_base", f"kb:{kb.id} {grantee}:{grantee_id}")
        return SharedGrant(grant, name)

    def unshare(
        self,
        kb: KnowledgeBase,
        *,
        grant_id: int | None = None,
        team: str | None = None,
        user: str | None = None,
        caller: Caller | None = None,
    ) -> SharedGrant:
        """End a grant of ``kb``: by id, or by its team's or user's name (``NotFound`` when
        there is none)."""
        if grant_id is None:
            grantee, grantee_id, _ = self._grantee(kb, team, user)
            found = [
                g
                for g in self._store.grants(kb.id)
                if g.grantee is grantee and g.grantee_id == grantee_id
            ]
            if not found:
                raise NotFound("that team or user has no grant of this knowledge base")
            grant_id = found[0].id
        grant = self._store.revoke_grant(kb.id, grant_id)
        self._access.audit(
            caller, "unshare_knowledge_base", f"kb:{kb.id} {grant.grantee}:{grant.grantee_id}"
        )
        return SharedGrant(grant, self._name(grant))

    def grants(self, kb: KnowledgeBase) -> list[SharedGrant]:
        """The base's grants with their grantees' names."""
        return [SharedGrant(g, self._name(g)) for g in self._store.grants(kb.id)]

    def _grantee(
        self, kb: KnowledgeBase, team: str | None, user: str | None
    ) -> tuple[Grantee, int, str]:
        if kb.scope is not Scope.TEAM:
            raise InvalidInput(
                f"only team bases are shared (this one is {kb.scope.value}); "
                "a global base is seen by everyone already"
            )
        if (team is None) == (user is None):
            raise InvalidInput("share with one team or one user (give exactly one of the two)")
        accounts = self._access.accounts
        if team is not None:
            found = accounts.get_team(team)  # NotFound: "no such team; `lorebase teams list` …"
            if found.id == kb.team_id:
                raise InvalidInput("the base belongs to that team already")
            return Grantee.TEAM, found.id, found.name
        assert user is not None
        person = accounts.get_user(user)
        return Grantee.USER, person.id, person.name

    def _name(self, grant: Grant) -> str:
        accounts = self._access.accounts
        if grant.grantee is Grantee.TEAM:
            names = {t.id: t.name for t in accounts.list_teams()}
        else:
            names = {u.id: u.name for u in accounts.list_users()}
        return names.get(grant.grantee_id, f"{grant.grantee.value} {grant.grantee_id} (deleted)")
