"""Who is asking and what they may see: callers from API keys, and every lookup of a base or
document on a caller's behalf (anything they may not see answers like a missing one)."""

from __future__ import annotations

from lorebase.accounts.access import Caller, can_change, can_create, can_see
from lorebase.errors import Forbidden, NotFound, Unauthorized
from lorebase.service.parts import Parts
from lorebase.store.base import DocumentRecord, KnowledgeBase, Scope

NO_KB = "no such knowledge base"
NO_DOCUMENT = "no such document"


class Access(Parts):
    def authenticate(self, key: str | None) -> Caller:
        """The caller behind an API key (with keys off: the local administrator);
        ``Unauthorized`` for a missing, unknown, expired or revoked key."""
        if not self.settings.serve.auth:
            from lorebase.service.core import LOCAL_USER

            return Caller(LOCAL_USER)
        user = self.accounts.resolve_key(key) if key else None
        if user is None:
            raise Unauthorized("a valid API key is required: send `Authorization: Bearer KEY`")
        return Caller(user, self.accounts.memberships(user.id))

    def knowledge_bases(
        self, caller: Caller | None = None, *, totals: bool = True
    ) -> list[KnowledgeBase]:
        """The bases the caller may see (every base without a caller); ``totals=False`` skips
        counting their documents (a read of every document row) where only names and settings
        are needed."""
        bases = self.store.list_kbs(totals=totals)
        return bases if caller is None else [kb for kb in bases if can_see(caller, kb)]

    def kb(
        self,
        name: str,
        caller: Caller | None = None,
        *,
        write: bool = False,
        totals: bool = True,
    ) -> KnowledgeBase:
        """A base by name (or, when no base answers to it, a number as an id), as the caller
        may see (and with ``write``, change) it; several bases of one name are told apart as
        :mod:`lorebase.service.names` says."""
        from lorebase.service.names import as_id, choose

        named = self.store.kbs_named(name)
        if caller is not None:
            named = [kb for kb in named if can_see(caller, kb)]
        number = as_id(name)
        if not named and number is not None:
            return self.kb_by_id(number, caller, write=write, totals=totals)
        missing = (
            NO_KB if caller else f"no knowledge base named {name!r}; list them to see the names"
        )
        kb = choose(name, named, caller, missing=missing)
        if caller is not None:
            self._allowed(caller, kb, write)
        return self.store.get_kb_by_id(kb.id) if totals else kb

    def kb_by_id(
        self,
        kb_id: int,
        caller: Caller | None = None,
        *,
        write: bool = False,
        totals: bool = False,
    ) -> KnowledgeBase:
        """A base by id, as the caller may see (and with ``write``, change) it. Its documents
        are counted only once it is known the caller may see it."""
        try:
            kb = self.store.get_kb_by_id(kb_id, totals=totals and caller is None)
        except NotFound:
            raise NotFound(NO_KB) from None
        if caller is None:
            return kb
        self._allowed(caller, kb, write)
        return self.store.get_kb_by_id(kb_id) if totals else kb

    def document(
        self, document_id: str, caller: Caller | None = None, *, write: bool = False
    ) -> tuple[KnowledgeBase, DocumentRecord]:
        """A document by id in any base the caller may see, with its base."""
        document = self.store.find_document(document_id)
        if document is None:
            raise NotFound(NO_DOCUMENT)
        try:
            kb = self.kb_by_id(document.kb_id, caller, write=write)
        except NotFound:
            raise NotFound(NO_DOCUMENT) from None
        return kb, document

    def may_see(self, key: str | None, kb_id: int) -> bool:
        """Whether the holder of ``key``, looked up afresh, may see base ``kb_id`` now
        (``Unauthorized`` when the key no longer works): asked before each event is sent."""
        try:
            self.kb_by_id(kb_id, self.authenticate(key))
        except NotFound:
            return False
        return True

    def team_id(self, name: str, caller: Caller | None) -> int:
        """A team by name; one the caller is not in answers exactly like a missing one."""
        try:
            team = self.accounts.get_team(name)
        except NotFound:
            team = None
        if team is None or (caller is not None and team.id not in caller.teams):
            raise NotFound("no such team among yours; `lorebase teams list` shows the teams")
        return team.id

    def check_create(self, caller: Caller | None, scope: Scope, team_id: int | None) -> None:
        if caller is not None and not can_create(caller, scope, team_id):
            raise Forbidden("global bases are created by admins, team bases by the team's admins")

    def audit(self, caller: Caller | None, action: str, target: str) -> None:
        """Record who changed what (ids only) for requests made with an identity."""
        if caller is not None:
            self.accounts.audit(caller.user.name, action, target)

    @staticmethod
    def _allowed(caller: Caller, kb: KnowledgeBase, write: bool) -> KnowledgeBase:
        if not can_see(caller, kb):
            raise NotFound(NO_KB)
        if write and not can_change(caller, kb):
            raise Forbidden("you may read this knowledge base but not change it")
        return kb
