"""Who is asking and what they may see: :class:`Access` turns API keys and sign-in sessions into
callers, keeps the audit log, and looks up every base or document on a caller's behalf
(anything they may not see answers like a missing one). It owns the accounts (opened on first
use) and is the one place visibility is decided: the other use-case objects ask it.

A session is an API key exchanged for a token the web page keeps in an HttpOnly cookie; it
lasts :data:`SESSION_SECONDS` at most, never outlives its key, and ends when the key is
revoked. Its CSRF token (:func:`csrf_token`) is derived from it one way: the page is told it
once and sends it with every change, which a page of another site can neither read nor forge.
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
from collections.abc import Callable

from lorebase.accounts.access import (
    OPERATOR,
    Caller,
    can_administer,
    can_change,
    can_create,
    can_see,
)
from lorebase.accounts.base import AccountStore, ApiKey, AuditEntry, Role, User
from lorebase.errors import Forbidden, InvalidInput, NotFound, Unauthorized, Unavailable
from lorebase.service.names import as_id, choose, missing_kb
from lorebase.settings import Settings
from lorebase.store.base import DocumentRecord, KnowledgeBase, Store
from lorebase.store.states import Scope

NO_KB = "no such knowledge base"
NO_DOCUMENT = "no such document"
SESSION_SECONDS = 12 * 3600  # a sign-in lasts a working day at most
CSRF_LABEL = b"lorebase-csrf:"

# The identity of HTTP requests when keys are off (loopback only): a local administrator.
LOCAL_USER = User(id=0, name="local", role=Role.ADMIN, created_at=0.0)


def csrf_token(session: str) -> str:
    """The CSRF token of a session: public to its page, useless without the cookie."""
    return hashlib.sha256(CSRF_LABEL + session.encode("utf-8")).hexdigest()


class Access:
    """Callers, their keys and sessions, the audit log, and every lookup of a base or document
    as a caller may see it (without a caller: the operator's, nothing hidden)."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        accounts: Callable[[], AccountStore] | None = None,
    ) -> None:
        """``accounts`` opens the account store on first use (None: this lorebase has none)."""
        self._settings = settings
        self._store = store
        self._make_accounts = accounts
        self._accounts: AccountStore | None = None

    @property
    def accounts(self) -> AccountStore:
        """Users, teams, API keys and the audit log (opened on first use)."""
        if self._accounts is None:
            if self._make_accounts is None:
                raise Unavailable("this lorebase was opened without accounts")
            self._accounts = self._make_accounts()
        return self._accounts

    def authenticate(self, key: str | None, session: str | None = None) -> Caller:
        """The caller behind an API key, else a sign-in session (with keys off: the local
        administrator); ``Unauthorized`` for a missing, unknown, expired or revoked key or an
        ended session."""
        if not self._settings.serve.auth:
            return Caller(LOCAL_USER)
        credential = key or session
        found = None
        if credential:
            found = self.accounts.resolve_credential(credential, session=not key)
        if found is None:
            raise Unauthorized("a valid API key is required: send `Authorization: Bearer KEY`")
        user, key_id = found
        memberships = self.accounts.memberships(user.id)
        shared = self._store.shared_with(user.id, list(memberships))
        return Caller(user, memberships, key_id=key_id, by_session=not key, shared=shared)

    def sign_in(self, key: str, client: str | None = None) -> tuple[Caller, str, float]:
        """Exchange a valid API key for a session: (its caller, the token, its expiry);
        ``client``: the address it came from (audited)."""
        if not self._settings.serve.auth:
            raise InvalidInput("this server runs without API keys: there is nothing to sign in to")
        made = self.accounts.create_session(key, time.time() + SESSION_SECONDS)
        if made is None:
            raise Unauthorized("that API key is not valid (unknown, expired or revoked)")
        token, session = made
        caller = dataclasses.replace(self.authenticate(None, token), client=client)
        self.audit(caller, "sign_in", f"key:{session.key_id}")
        return caller, token, session.expires_at

    def sign_out(self, session: str) -> None:
        """End a session (unknown or ended ones are ignored)."""
        self.accounts.end_session(session)

    def own_keys(self, caller: Caller) -> list[ApiKey]:
        """The caller's own API keys (records, never the keys)."""
        if not self._settings.serve.auth:
            return []
        return self.accounts.list_keys(caller.user.id)

    def create_own_key(
        self,
        caller: Caller,
        name: str,
        expires_at: float | None = None,
        key: str | None = None,
    ) -> tuple[str, ApiKey]:
        """A new key for the caller: (the key, shown this once; its record). It is made with
        the key the request came with: it expires no later and is revoked with it. A request
        signed in with a session cookie must give one of the caller's keys again (``key``):
        a session alone mints nothing that outlives it."""
        if not self._settings.serve.auth:
            raise InvalidInput("this server runs without API keys")
        parent = caller.key_id
        if caller.by_session:
            given = self.accounts.resolve_credential(key, session=False) if key else None
            if given is None or given[0].id != caller.user.id:
                raise Forbidden(
                    "making a key from a sign-in session needs one of your API keys again: "
                    "give it as `key` (the new key expires with it and is revoked with it)"
                )
            parent = given[1]
        made = self.accounts.create_key(caller.user.id, name, expires_at, parent_id=parent)
        self.audit(caller, "create_key", f"key:{made[1].id}")
        return made

    def revoke_own_key(self, caller: Caller, key_id: int) -> None:
        """Revoke one of the caller's keys (someone else's answers like a missing one); its
        sessions end with it."""
        if not any(k.id == key_id and k.revoked_at is None for k in self.own_keys(caller)):
            raise NotFound("no such active key of yours")
        self.accounts.revoke_key(key_id)
        self.audit(caller, "revoke_key", f"key:{key_id}")

    def team_names(self) -> dict[int, str]:
        """Every team's name by id (callers see the names of their own teams)."""
        return {team.id: team.name for team in self.accounts.list_teams()}

    def knowledge_bases(
        self, caller: Caller | None = None, *, totals: bool = True
    ) -> list[KnowledgeBase]:
        """The bases the caller may see (every base without a caller); ``totals=False`` skips
        counting their documents (a read of every document row) where only names and settings
        are needed."""
        bases = self._store.list_kbs(totals=totals)
        return bases if caller is None else [kb for kb in bases if can_see(caller, kb)]

    def kb(
        self,
        name: str,
        caller: Caller | None = None,
        *,
        write: bool = False,
        totals: bool = True,
        administer: bool = False,
    ) -> KnowledgeBase:
        """A base by name (or, when no base answers to it, a number as an id), as the caller
        may see (and with ``write``, change; with ``administer``, administer) it; several
        bases of one name are told apart as :mod:`lorebase.service.names` says."""
        named = self._store.kbs_named(name)
        if caller is not None:
            named = [kb for kb in named if can_see(caller, kb)]
        number = as_id(name)
        if not named and number is not None:
            return self.kb_by_id(number, caller, write=write, totals=totals, administer=administer)
        missing = ""
        if not named:
            seen = self._store.list_kbs(totals=False)
            visible = [kb.name for kb in seen if caller is None or can_see(caller, kb)]
            missing = missing_kb(name, visible, named_in_message=caller is None)
        kb = choose(name, named, caller, missing=missing)
        if caller is not None:
            self._allowed(caller, kb, write, administer)
        return self._store.get_kb_by_id(kb.id) if totals else kb

    def kb_by_id(
        self,
        kb_id: int,
        caller: Caller | None = None,
        *,
        write: bool = False,
        totals: bool = False,
        administer: bool = False,
    ) -> KnowledgeBase:
        """A base by id, as the caller may see (and with ``write``, change; with
        ``administer``, administer) it. Its documents are counted only once it is known the
        caller may see it."""
        try:
            kb = self._store.get_kb_by_id(kb_id, totals=totals and caller is None)
        except NotFound:
            raise NotFound(NO_KB) from None
        if caller is None:
            return kb
        self._allowed(caller, kb, write, administer)
        return self._store.get_kb_by_id(kb_id) if totals else kb

    def document(
        self, document_id: str, caller: Caller | None = None, *, write: bool = False
    ) -> tuple[KnowledgeBase, DocumentRecord]:
        """A document by id in any base the caller may see, with its base."""
        document = self._store.find_document(document_id)
        if document is None:
            raise NotFound(NO_DOCUMENT)
        try:
            kb = self.kb_by_id(document.kb_id, caller, write=write)
        except NotFound:
            raise NotFound(NO_DOCUMENT) from None
        return kb, document

    def may_see(self, key: str | None, kb_id: int, session: str | None = None) -> bool:
        """Whether the holder of ``key`` (or ``session``), looked up afresh, may see base
        ``kb_id`` now (``Unauthorized`` when the key or session no longer works): asked before
        each event is sent."""
        try:
            self.kb_by_id(kb_id, self.authenticate(key, session))
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

    def base(self, kb: KnowledgeBase | str) -> KnowledgeBase:
        """The operator's base: one already looked up, or by name (or id) as :meth:`kb` reads
        it, without its totals."""
        return self.kb(kb, totals=False) if isinstance(kb, str) else kb

    def check_create(self, caller: Caller | None, scope: Scope, team_id: int | None) -> None:
        """``Forbidden`` unless the caller may create a base in ``scope`` (and team)."""
        if caller is not None and not can_create(caller, scope, team_id):
            raise Forbidden("global bases are created by admins, team bases by the team's admins")

    def audit_log(
        self, caller: Caller | None, since: float | None = None, limit: int = 100
    ) -> list[AuditEntry]:
        """The newest ``limit`` audited changes (at or after ``since``), for administrators
        (``Forbidden`` for anyone else; the operator's command line reads them all)."""
        if caller is not None and not caller.is_admin:
            raise Forbidden("the audit log is for administrators")
        return self.accounts.audit_log(limit, since)

    def audit(self, caller: Caller | None, action: str, target: str) -> None:
        """Record who changed what (ids only) and from where: a request's user and address,
        else the operator's command line (``cli``), when this lorebase keeps accounts."""
        if caller is not None:
            self.accounts.audit(caller.user.name, action, target, caller.client)
        elif self._make_accounts is not None:
            self.accounts.audit(OPERATOR, action, target, OPERATOR)

    @staticmethod
    def _allowed(
        caller: Caller, kb: KnowledgeBase, write: bool, administer: bool = False
    ) -> KnowledgeBase:
        if not can_see(caller, kb):
            raise NotFound(NO_KB)
        if administer and not can_administer(caller, kb):
            raise Forbidden(
                "only the knowledge base's administrators may do this (its team's admins, "
                "its owner, or for a global base the server's admins); ask one of them"
            )
        if write and not can_change(caller, kb):
            raise Forbidden("you may read this knowledge base but not change it")
        return kb
