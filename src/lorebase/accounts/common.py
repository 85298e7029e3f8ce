"""What every ``AccountStore`` backend shares: making keys and session tokens, hashing them,
checking names, and turning rows into records. The backends differ only in their SQL."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lorebase.accounts.base import ApiKey, AuditEntry, Role, User
from lorebase.errors import InvalidInput
from lorebase.names import checked_name

KEY_PREFIX = "lb_"
SESSION_PREFIX = "lbs_"
KEY_BYTES = 32
SHOWN_PREFIX_CHARS = 10
NAME_MAX = 64
USER_COLUMNS = "id, name, role, created_at"
KEY_COLUMNS = (
    "id, user_id, prefix, name, created_at, expires_at, revoked_at, last_used_at, parent_id"
)
AUDIT_COLUMNS = "id, at, actor, action, target, client"
ACCOUNT_MIGRATIONS_TABLE = "account_migrations"
"""Where every backend records the accounts' own migrations (the store records its own in a
table of its own)."""


def key_hash(key: str) -> str:
    """What is stored of a key or session token: its SHA-256 (hex)."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def check_name(name: str, what: str) -> str:
    """A user or team name, trimmed: 1-64 characters, each shown as itself
    (:func:`lorebase.names.checked_name`; ``InvalidInput`` else)."""
    cleaned = name.strip()
    if not cleaned or len(cleaned) > NAME_MAX:
        raise InvalidInput(f"a {what} name must be 1-{NAME_MAX} characters on one line")
    return checked_name(cleaned, f"{what} name")


@dataclass(frozen=True, slots=True)
class NewKey:
    """A key about to be stored: the key (shown once) and what the store keeps of it."""

    key: str
    prefix: str
    hash: str


def new_key(name: str, expires_at: float | None, now: float) -> NewKey:
    """A fresh random API key; its name must show as itself (:func:`lorebase.names.checked_name`)
    and fit ``NAME_MAX`` characters, and its expiry lie in the future (``InvalidInput``
    else)."""
    if len(checked_name(name, "key name")) > NAME_MAX:
        raise InvalidInput(f"a key name is at most {NAME_MAX} characters")
    if expires_at is not None and expires_at <= now:
        raise InvalidInput("a key's expiry must lie in the future")
    key = KEY_PREFIX + secrets.token_urlsafe(KEY_BYTES)
    return NewKey(key, key[:SHOWN_PREFIX_CHARS], key_hash(key))


def new_session_token() -> str:
    return SESSION_PREFIX + secrets.token_urlsafe(KEY_BYTES)


def looks_like_key(key: str) -> bool:
    return key.startswith(KEY_PREFIX)


def looks_like_session(token: str) -> bool:
    return token.startswith(SESSION_PREFIX)


def key_is_live(expires_at: float | None, revoked_at: float | None, now: float) -> bool:
    return revoked_at is None and (expires_at is None or expires_at > now)


def user_from_row(row: Sequence[Any]) -> User:
    """A :class:`User` from ``USER_COLUMNS``."""
    return User(int(row[0]), str(row[1]), Role(row[2]), float(row[3]))


def key_from_row(row: Sequence[Any]) -> ApiKey:
    """An :class:`ApiKey` from ``KEY_COLUMNS``."""
    return ApiKey(
        int(row[0]),
        int(row[1]),
        str(row[2]),
        str(row[3]),
        float(row[4]),
        _maybe_float(row[5]),
        _maybe_float(row[6]),
        _maybe_float(row[7]),
        None if row[8] is None else int(row[8]),
    )


def capped_expiry(requested: float | None, parent: float | None) -> float | None:
    """A key made with another expires no later than it (None: never). Pure."""
    if parent is None:
        return requested
    return parent if requested is None else min(requested, parent)


def checked_parent(
    parent: Sequence[Any] | None, user_id: int, expires_at: float | None, now: float
) -> float | None:
    """The expiry of a key made with ``parent`` (its row: user id, expiry, revocation): no
    later than the parent's; ``InvalidInput`` unless the parent is a live key of the user's."""
    if parent is None or int(parent[0]) != user_id or not key_is_live(parent[1], parent[2], now):
        raise InvalidInput(
            "the key this one would be made with is not a live key of this user; sign in again "
            "with a valid key"
        )
    return capped_expiry(expires_at, _maybe_float(parent[1]))


def revoke_tree_sql(placeholder: str) -> str:
    """Revoke a key and every key made with it, theirs too (parameters: the key's id, the
    time), in either backend's placeholder style."""
    p = placeholder
    return (
        f"WITH RECURSIVE tree(id) AS (SELECT id FROM api_keys WHERE id = {p} UNION "
        "SELECT k.id FROM api_keys AS k JOIN tree ON k.parent_id = tree.id) "
        f"UPDATE api_keys SET revoked_at = {p} WHERE id IN (SELECT id FROM tree) "
        "AND revoked_at IS NULL"
    )


def credential_sql(placeholder: str, session: bool) -> str:
    """The user (``USER_COLUMNS``) and the id of the live key behind an API key (``session``
    False) or a session token, in either backend's placeholder style (parameters:
    :func:`credential_params`)."""
    p = placeholder
    found = "u.id, u.name, u.role, u.created_at, k.id"
    live = f"k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > {p})"
    if session:
        return (
            f"SELECT {found} FROM sessions AS s JOIN api_keys AS k ON k.id = s.key_id "
            f"JOIN users AS u ON u.id = k.user_id WHERE s.hash = {p} AND s.expires_at > {p} "
            f"AND {live}"
        )
    return (
        f"SELECT {found} FROM api_keys AS k JOIN users AS u ON u.id = k.user_id "
        f"WHERE k.hash = {p} AND {live}"
    )


def credential_params(credential: str, session: bool, now: float) -> tuple[Any, ...] | None:
    """The parameters of :func:`credential_sql`; None when ``credential`` is not that kind of
    credential at all (no query needed to say it is unknown)."""
    if not (looks_like_session(credential) if session else looks_like_key(credential)):
        return None
    digest = key_hash(credential)
    return (digest, now, now) if session else (digest, now)


def credential_from_row(row: Sequence[Any] | None) -> tuple[User, int] | None:
    """The user and key id of a :func:`credential_sql` row (None: no row)."""
    return None if row is None else (user_from_row(row[:4]), int(row[4]))


def audit_from_row(row: Sequence[Any]) -> AuditEntry:
    """An :class:`AuditEntry` from ``AUDIT_COLUMNS``."""
    client = None if row[5] is None else str(row[5])
    return AuditEntry(int(row[0]), float(row[1]), str(row[2]), str(row[3]), str(row[4]), client)


def _maybe_float(value: Any) -> float | None:
    return None if value is None else float(value)
