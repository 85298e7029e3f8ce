"""`lorebase users|teams|keys` for operators."""

import json
import re
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from lorebase.accounts.sqlite import SqliteAccounts
from lorebase.cli.main import app
from lorebase.errors import InvalidInput
from lorebase.store.sqlite.store import SqliteStore

runner = CliRunner()


def test_users_teams_and_keys(tmp_path: Path) -> None:
    base = ["--data-dir", str(tmp_path), "--embedder", "none"]

    def cli(*args: str) -> Result:
        return runner.invoke(app, [*base, *args])

    created = cli("users", "create", "dana", "--admin")
    assert created.exit_code == 0, created.output
    shown = re.search(r"(lb_\S+)", created.output)
    assert shown is not None
    key = shown.group(1)
    assert cli("users", "create", "dana").exit_code == 4
    assert cli("teams", "create", "ops").exit_code == 0
    assert cli("teams", "add", "ops", "dana", "--admin").exit_code == 0
    assert cli("teams", "add", "ops", "nobody").exit_code == 3
    users = json.loads(cli("users", "list", "--json").stdout)
    assert [(u["name"], u["role"]) for u in users] == [("dana", "admin")]
    second = cli("keys", "create", "dana", "--name", "ci", "--days", "1")
    assert "shown once" in second.output
    keys = json.loads(cli("keys", "list", "--json").stdout)
    assert len(keys) == 2 and all(not k["prefix"].endswith(key[12:]) for k in keys)
    store = SqliteStore(tmp_path / "lorebase.db")
    try:
        accounts = SqliteAccounts(store)
        resolved = accounts.resolve_key(key)
        assert resolved is not None and resolved.name == "dana"
        assert cli("keys", "revoke", str(keys[0]["id"])).exit_code == 0
        assert accounts.resolve_key(key) is None
        assert cli("keys", "revoke", str(keys[0]["id"])).exit_code == 3
        assert cli("teams", "remove", "ops", "dana").exit_code == 0
        assert accounts.memberships(accounts.get_user("dana").id) == {}
        log = [(e.actor, e.action) for e in accounts.audit_log()]
        assert ("cli", "revoke_key") in log and ("cli", "create_user") in log
    finally:
        store.close()
    raw = (tmp_path / "lorebase.db").read_bytes()
    assert key.encode() not in raw  # stored as a hash only


def test_keys_create_refuses_days_below_one(tmp_path: Path) -> None:
    base = ["--data-dir", str(tmp_path), "--embedder", "none"]
    assert runner.invoke(app, [*base, "users", "create", "dana"]).exit_code == 0
    for days in ("0", "-3"):  # 0 made a key that never expired, -3 one already expired
        result = runner.invoke(app, [*base, "keys", "create", "dana", "--days", days])
        assert result.exit_code == 2, result.output
        assert "--days must be 1 or more" in result.output
        assert "shown once" not in result.output
    keys = json.loads(runner.invoke(app, [*base, "keys", "list", "--json"]).stdout)
    assert len(keys) == 1  # only the key made with the user


def test_create_key_refuses_an_expiry_in_the_past(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "lorebase.db")
    try:
        accounts = SqliteAccounts(store)
        user = accounts.create_user("dana")
        for expires_at in (0.0, time.time() - 1):
            with pytest.raises(InvalidInput, match="future"):
                accounts.create_key(user.id, "ci", expires_at)
        assert accounts.list_keys(user.id) == []
        _, record = accounts.create_key(user.id, "ci", time.time() + 60)
        assert record.expires_at is not None
    finally:
        store.close()
