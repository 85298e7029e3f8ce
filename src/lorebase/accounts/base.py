"""The ``AccountStore`` seam: users with roles, teams with members, API keys, sign-in sessions,
the audit log.

API keys are random (``lb_`` + 32 bytes, URL-safe), shown once, and stored only as their
SHA-256: with that much entropy a fast hash is enough, and lookups stay one indexed query.
Session tokens (``lbs_`` + 32 bytes) are stored the same way.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from enum import StrEnum


class Role(StrEnum):
    ADMIN = "admin"
    MEMBER = "member"


@dataclass(frozen=True, slots=True)
class User:
    id: int
    name: str
    role: Role
    created_at: float


@dataclass(frozen=True, slots=True)
class Team:
    id: int
    name: str
    created_at: float


@dataclass(frozen=True, slots=True)
class ApiKey:
    """A key's record; the key itself is shown once when created and never stored."""

    id: int
    user_id: int
    prefix: str  # the first characters, to tell keys apart in listings
    name: str
    created_at: float
    expires_at: float | None
    revoked_at: float | None
    last_used_at: float | None
    parent_id: int | None = None  # the key it was made with: it ends no later, and with it


@dataclass(frozen=True, slots=True)
class Session:
    """A sign-in session's record; its token is handed out once (as a cookie), never stored."""

    id: int
    user_id: int
    key_id: int  # the key it was exchanged for: revoking the key ends the session
    created_at: float
    expires_at: float


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One change: when, who (a user's name, or ``cli``), what (an action and the ids it
    touched, never content) and from where (the client's address, ``cli``; None: not told)."""

    id: int
    at: float
    actor: str
    action: str
    target: str
    client: str | None = None


class AccountStore(ABC):
    @abstractmethod
    def create_user(self, name: str, role: Role = Role.MEMBER) -> User:
        """``Conflict`` when the name is taken."""

    @abstractmethod
    def get_user(self, name: str) -> User:
        """``NotFound`` when there is none."""

    @abstractmethod
    def list_users(self) -> list[User]: ...

    @abstractmethod
    def create_team(self, name: str) -> Team: ...

    @abstractmethod
    def get_team(self, name: str) -> Team: ...

    @abstractmethod
    def list_teams(self) -> list[Team]: ...

    @abstractmethod
    def set_member(self, team_id: int, user_id: int, role: Role | None) -> None:
        """Add or change a membership; ``None`` removes it."""

    @abstractmethod
    def memberships(self, user_id: int) -> dict[int, Role]:
        """Team id → the user's role in it."""

    @abstractmethod
    def create_key(
        self,
        user_id: int,
        name: str = "",
        expires_at: float | None = None,
        parent_id: int | None = None,
    ) -> tuple[str, ApiKey]:
        """A new key for the user: (the key, shown once; its record). ``expires_at`` (epoch
        seconds) must lie in the future (:class:`InvalidInput` otherwise); None: never.
        ``parent_id``: the user's live key it is made with (an API request's): the new key
        expires no later than it and is revoked with it (:class:`InvalidInput` for a parent
        that is not a live key of the user's)."""

    @abstractmethod
    def resolve_credential(self, credential: str, *, session: bool) -> tuple[User, int] | None:
        """The user behind an API key (``session`` False) or a sign-in session's token, and
        the id of the live key it is (or the session was exchanged for), in one lookup; None
        when it is unknown, expired, revoked or ended, or not that kind of credential."""

    def resolve_key(self, key: str) -> User | None:
        """The user a valid (known, unrevoked, unexpired) key belongs to, else None."""
        found = self.resolve_credential(key, session=False)
        return None if found is None else found[0]

    def key_id_of(self, credential: str) -> int | None:
        """The id of the live key behind an API key or a session token (the key the
        session was exchanged for), else None."""
        found = self.resolve_credential(credential, session=False) or self.resolve_credential(
            credential, session=True
        )
        return None if found is None else found[1]

    @abstractmethod
    def revoke_key(self, key_id: int) -> None:
        """Revoke an active key and every key made with it, theirs too (``NotFound`` when it
        is not an active key); the sessions signed in with any of them end."""

    @abstractmethod
    def list_keys(self, user_id: int | None = None) -> list[ApiKey]: ...

    @abstractmethod
    def create_session(self, key: str, expires_at: float) -> tuple[str, Session] | None:
        """Exchange a valid key for a session token (shown once) lasting until ``expires_at``
        at most (no longer than the key); None when the key is not valid."""

    def resolve_session(self, token: str) -> User | None:
        """The user of a live session (unexpired, not ended, its key still valid), else None."""
        found = self.resolve_credential(token, session=True)
        return None if found is None else found[0]

    @abstractmethod
    def end_session(self, token: str) -> None:
        """End a session (signing out); ending an unknown or ended one does nothing."""

    @abstractmethod
    def set_embedder_key(self, user_id: int, embedder: str, sealed: str) -> None:
        """Keep a user's own key for an embedder, sealed by the caller (replacing theirs)."""

    @abstractmethod
    def embedder_keys(self, user_id: int) -> list[tuple[str, float]]:
        """The embedders a user keeps a key for, with when each was set (never the keys)."""

    @abstractmethod
    def sealed_embedder_key(self, user_name: str, embedder: str) -> str | None:
        """The sealed key a user (by name) keeps for an embedder, else None."""

    @abstractmethod
    def delete_embedder_key(self, user_id: int, embedder: str) -> bool:
        """Forget a user's key for an embedder; False when there was none."""

    @abstractmethod
    def sealed_embedder_keys(self) -> list[tuple[int, str, str]]:
        """Every (user id, embedder, sealed key): what a data-key rotation seals again."""

    @abstractmethod
    def audit(self, actor: str, action: str, target: str, client: str | None = None) -> None:
        """Record a change (who, what, on what, from where; never document text); the oldest
        entries past the log's bound are dropped."""

    @abstractmethod
    def audit_log(self, limit: int = 100, since: float | None = None) -> list[AuditEntry]:
        """The newest ``limit`` entries (of those at or after ``since``), newest first."""
