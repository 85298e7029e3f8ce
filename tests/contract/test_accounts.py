"""The ``AccountStore`` contract, run against every backend.

Each test takes ``accounts`` (a fresh, empty account store). SQLite runs twice: with a
database of its own, and sharing the index store's database (how ``lorebase serve`` runs it);
PostgreSQL runs twice too: with a pool of its own, and over a ``PostgresDatabase`` it is
given (the composition root's). A new backend is one more entry in ``BACKENDS``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager

import pytest

from lorebase.accounts.base import AccountStore, Role
from lorebase.errors import Conflict, InvalidInput, NotFound

Opener = Callable[[], AbstractContextManager[AccountStore]]
"""Opens the test's account store (again and again: the same database each time)."""
Backend = Callable[[pytest.FixtureRequest], Opener]
"""Makes a test's opener, taking what it needs (a folder, a database) from its fixtures."""


def _sqlite_own(request: pytest.FixtureRequest) -> Opener:
    from lorebase.accounts.sqlite import SqliteAccounts

    path = request.getfixturevalue("tmp_path") / "lorebase.db"
    return lambda: SqliteAccounts.open(path)


def _sqlite_shared(request: pytest.FixtureRequest) -> Opener:
    from lorebase.accounts.sqlite import SqliteAccounts
    from lorebase.store.sqlite import SqliteStore

    path = request.getfixturevalue("tmp_path") / "lorebase.db"

    @contextmanager
    def opened() -> Iterator[AccountStore]:
        with SqliteStore(path) as store:
            yield SqliteAccounts(store)

    return opened


def _postgres_own(request: pytest.FixtureRequest) -> Opener:
    from lorebase.accounts.postgres import PostgresAccounts

    url = request.getfixturevalue("postgres_url")
    return lambda: PostgresAccounts.open(url)


def _postgres_shared(request: pytest.FixtureRequest) -> Opener:
    from lorebase.accounts.postgres import PostgresAccounts
    from lorebase.store.postgres.database import PostgresDatabase

    url = request.getfixturevalue("postgres_url")

    @contextmanager
    def opened() -> Iterator[AccountStore]:
        database = PostgresDatabase(url)
        try:
            yield PostgresAccounts(database)
        finally:
            database.close()

    return opened


BACKENDS: dict[str, Backend] = {
    "sqlite": _sqlite_own,
    "sqlite-shared": _sqlite_shared,
    "postgres": _postgres_own,
    "postgres-shared": _postgres_shared,
}


@pytest.fixture(params=sorted(BACKENDS))
def accounts_backend(request: pytest.FixtureRequest) -> Opener:
    return BACKENDS[request.param](request)


@pytest.fixture
def accounts(accounts_backend: Opener) -> Iterator[AccountStore]:
    with accounts_backend() as opened:
        yield opened


# -- users -------------------------------------------------------------------------------------
def test_users_are_created_found_and_listed_by_name(accounts: AccountStore) -> None:
    zoe = accounts.create_user("zoe")
    dana = accounts.create_user("  dana ", Role.ADMIN)
    assert (dana.name, dana.role, zoe.role) == ("dana", Role.ADMIN, Role.MEMBER)
    assert accounts.get_user("dana") == dana
    assert accounts.list_users() == [dana, zoe]
    with pytest.raises(Conflict):
        accounts.create_user("dana")
    with pytest.raises(NotFound):
        accounts.get_user("nobody")


@pytest.mark.parametrize("name", ["", "   ", "a\nb", "x" * 65, "ann\u202egpj", "a\x00b"])
def test_bad_names_are_refused(accounts: AccountStore, name: str) -> None:
    with pytest.raises(InvalidInput):
        accounts.create_user(name)
    with pytest.raises(InvalidInput):
        accounts.create_team(name)


@pytest.mark.parametrize("name", ["lap\ntop", "lap\u202etop", "\x1b[31mred", "x" * 200])
def test_a_key_name_people_are_shown_is_checked_by_the_store(
    accounts: AccountStore, name: str
) -> None:
    """Every way a key is made (CLI, REST, the page) reaches the store, so the store checks."""
    user = accounts.create_user("ann")
    with pytest.raises(InvalidInput, match="key name"):
        accounts.create_key(user.id, name)
    assert accounts.list_keys(user.id) == []
    _, record = accounts.create_key(user.id, "laptop")
    assert record.name == "laptop"


# -- teams -------------------------------------------------------------------------------------
def test_teams_and_memberships(accounts: AccountStore) -> None:
    ops, dev = accounts.create_team("ops"), accounts.create_team("dev")
    assert accounts.get_team("ops") == ops and accounts.list_teams() == [dev, ops]
    with pytest.raises(Conflict):
        accounts.create_team("ops")
    with pytest.raises(NotFound):
        accounts.get_team("nobody")
    dana = accounts.create_user("dana")
    assert accounts.memberships(dana.id) == {}
    accounts.set_member(ops.id, dana.id, Role.MEMBER)
    accounts.set_member(dev.id, dana.id, Role.ADMIN)
    accounts.set_member(ops.id, dana.id, Role.ADMIN)  # a change, not a second row
    assert accounts.memberships(dana.id) == {ops.id: Role.ADMIN, dev.id: Role.ADMIN}
    accounts.set_member(ops.id, dana.id, None)
    assert accounts.memberships(dana.id) == {dev.id: Role.ADMIN}


# -- keys --------------------------------------------------------------------------------------
def test_a_key_resolves_to_its_user_until_revoked(accounts: AccountStore) -> None:
    dana = accounts.create_user("dana")
    key, record = accounts.create_key(dana.id, "laptop")
    assert key.startswith("lb_") and record.prefix == key[: len(record.prefix)]
    assert key not in record.prefix and record.user_id == dana.id and record.name == "laptop"
    assert accounts.resolve_key(key) == dana
    assert accounts.resolve_key(key + "x") is None
    assert accounts.resolve_key("not-a-key") is None
    accounts.revoke_key(record.id)
    assert accounts.resolve_key(key) is None
    with pytest.raises(NotFound):
        accounts.revoke_key(record.id)  # already revoked
    [listed] = accounts.list_keys()
    assert listed.id == record.id and listed.revoked_at is not None


def test_an_expired_key_resolves_to_nobody(
    accounts: AccountStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    dana = accounts.create_user("dana")
    now = time.time()
    with pytest.raises(InvalidInput, match="future"):  # never made already expired
        accounts.create_key(dana.id, expires_at=now - 1)
    soon, _ = accounts.create_key(dana.id, expires_at=now + 60)
    later, _ = accounts.create_key(dana.id, expires_at=now + 3600)
    monkeypatch.setattr(time, "time", lambda: now + 120)  # two minutes on
    assert accounts.resolve_key(soon) is None
    assert accounts.resolve_key(later) == dana


def test_keys_are_listed_per_user_and_need_a_user(accounts: AccountStore) -> None:
    dana, eli = accounts.create_user("dana"), accounts.create_user("eli")
    _, first = accounts.create_key(dana.id)
    _, second = accounts.create_key(eli.id)
    assert [k.id for k in accounts.list_keys()] == [first.id, second.id]
    assert [k.id for k in accounts.list_keys(eli.id)] == [second.id]
    with pytest.raises(NotFound):
        accounts.create_key(eli.id + 100)


# -- audit -------------------------------------------------------------------------------------
def test_the_audit_log_is_newest_first_and_limited(accounts: AccountStore) -> None:
    for n in range(3):
        accounts.audit("cli", "create_user", f"user-{n}")
    log = accounts.audit_log()
    assert [e.target for e in log] == ["user-2", "user-1", "user-0"]
    assert all((e.actor, e.action) == ("cli", "create_user") for e in log)
    assert [e.target for e in accounts.audit_log(limit=1)] == ["user-2"]


def test_accounts_persist_across_opens(accounts_backend: Opener) -> None:
    with accounts_backend() as accounts:
        key, _ = accounts.create_key(accounts.create_user("dana").id)
    with accounts_backend() as accounts:
        assert accounts.resolve_key(key) == accounts.get_user("dana")


# -- sessions ----------------------------------------------------------------------------------
def test_a_session_resolves_to_the_keys_user_until_it_is_ended(accounts: AccountStore) -> None:
    dana = accounts.create_user("dana")
    key, record = accounts.create_key(dana.id)
    made = accounts.create_session(key, time.time() + 3600)
    assert made is not None
    token, session = made
    assert token.startswith("lbs_") and token != key
    assert (session.user_id, session.key_id) == (dana.id, record.id)
    assert accounts.resolve_session(token) == dana
    assert accounts.resolve_session(token + "x") is None
    assert accounts.resolve_session(key) is None  # a key is not a session
    assert accounts.resolve_key(token) is None  # nor a session a key
    accounts.end_session(token)
    assert accounts.resolve_session(token) is None
    accounts.end_session(token)  # ending twice does nothing


def test_no_session_for_a_bad_revoked_or_expired_key(accounts: AccountStore) -> None:
    dana = accounts.create_user("dana")
    assert accounts.create_session("lb_nope", time.time() + 60) is None
    assert accounts.create_session("not-a-key", time.time() + 60) is None
    key, record = accounts.create_key(dana.id)
    accounts.revoke_key(record.id)
    assert accounts.create_session(key, time.time() + 60) is None


def test_revoking_the_key_ends_its_sessions(accounts: AccountStore) -> None:
    dana = accounts.create_user("dana")
    key, record = accounts.create_key(dana.id)
    other, _ = accounts.create_key(dana.id)
    made, kept = (
        accounts.create_session(key, time.time() + 60),
        accounts.create_session(other, time.time() + 60),
    )
    assert made is not None and kept is not None
    accounts.revoke_key(record.id)
    assert accounts.resolve_session(made[0]) is None
    assert accounts.resolve_session(kept[0]) == dana


def test_a_session_expires_and_never_outlives_its_key(
    accounts: AccountStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    dana = accounts.create_user("dana")
    now = time.time()
    key, _ = accounts.create_key(dana.id, expires_at=now + 60)
    made = accounts.create_session(key, now + 3600)
    assert made is not None and made[1].expires_at <= now + 60
    forever, _ = accounts.create_key(dana.id)
    long = accounts.create_session(forever, now + 600)
    assert long is not None
    monkeypatch.setattr(time, "time", lambda: now + 120)
    assert accounts.resolve_session(made[0]) is None
    assert accounts.resolve_session(long[0]) == dana
    monkeypatch.setattr(time, "time", lambda: now + 601)
    assert accounts.resolve_session(long[0]) is None


# -- keys made with keys (issue 27) ---------------------------------------------------------------
def test_a_key_made_with_a_key_expires_no_later_and_is_revoked_with_it(
    accounts: AccountStore,
) -> None:
    ann = accounts.create_user("ann")
    soon = time.time() + 86_400
    parent, parent_record = accounts.create_key(ann.id, "day", soon)
    child, child_record = accounts.create_key(ann.id, "forever", None, parent_id=parent_record.id)
    assert child_record.parent_id == parent_record.id
    assert child_record.expires_at == soon  # "never" capped at the parent's day
    later, later_record = accounts.create_key(
        ann.id, "week", time.time() + 7 * 86_400, parent_id=parent_record.id
    )
    assert later_record.expires_at == soon
    sooner, sooner_record = accounts.create_key(
        ann.id, "hour", time.time() + 3600, parent_id=parent_record.id
    )
    assert sooner_record.expires_at is not None and sooner_record.expires_at < soon
    grandchild, _ = accounts.create_key(ann.id, "grand", None, parent_id=child_record.id)
    token, _ = accounts.create_session(grandchild, time.time() + 600) or ("", None)
    assert accounts.resolve_session(token) is not None
    listed = {k.name: k for k in accounts.list_keys(ann.id)}
    assert listed["forever"].parent_id == parent_record.id and listed["day"].parent_id is None
    accounts.revoke_key(parent_record.id)
    for key in (parent, child, later, sooner, grandchild):
        assert accounts.resolve_key(key) is None  # the whole tree, grandchildren too
    assert accounts.resolve_session(token) is None  # and the sessions made with them
    with pytest.raises(NotFound):
        accounts.revoke_key(child_record.id)  # already revoked with its parent


def test_revoking_a_child_leaves_its_parent(accounts: AccountStore) -> None:
    ann = accounts.create_user("ann")
    parent, record = accounts.create_key(ann.id)
    child, child_record = accounts.create_key(ann.id, parent_id=record.id)
    accounts.revoke_key(child_record.id)
    assert accounts.resolve_key(child) is None and accounts.resolve_key(parent) is not None


def test_a_key_cannot_be_made_with_a_dead_or_foreign_key(accounts: AccountStore) -> None:
    ann, bob = accounts.create_user("ann"), accounts.create_user("bob")
    _, bobs = accounts.create_key(bob.id)
    with pytest.raises(InvalidInput, match="live key of this user"):
        accounts.create_key(ann.id, parent_id=bobs.id)
    _, revoked = accounts.create_key(ann.id)
    accounts.revoke_key(revoked.id)
    with pytest.raises(InvalidInput, match="live key of this user"):
        accounts.create_key(ann.id, parent_id=revoked.id)
    with pytest.raises(InvalidInput):
        accounts.create_key(ann.id, parent_id=999_999)


def test_the_key_behind_a_key_or_a_session(accounts: AccountStore) -> None:
    ann = accounts.create_user("ann")
    key, record = accounts.create_key(ann.id)
    assert accounts.key_id_of(key) == record.id
    token, _ = accounts.create_session(key, time.time() + 600) or ("", None)
    assert accounts.key_id_of(token) == record.id
    assert accounts.key_id_of("lb_unknown") is None and accounts.key_id_of("nonsense") is None
    accounts.revoke_key(record.id)
    assert accounts.key_id_of(key) is None and accounts.key_id_of(token) is None
