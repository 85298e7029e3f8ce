"""`lorebase users|teams|keys` for operators."""

import json
import re
from pathlib import Path

from typer.testing import CliRunner

from lorebase.accounts.sqlite import SqliteAccounts
from lorebase.cli.main import app
from lorebase.store.sqlite.store import SqliteStore

runner = CliRunner()


def test_users_teams_and_keys(tmp_path: Path) -> None:
    base = ["--data-dir", str(tmp_path), "--embedder", "none"]

    def cli(*args: str):  # type: ignore[no-untyped-def]
        return runner.invoke(app, [*base, *args])

    created = cli("users", "create", "dana", "--admin")
    assert created.exit_code == 0, created.output
    key = re.search(r"(lb_\S+)", created.output).group(1)  # type: ignore[union-attr]
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
        assert accounts.resolve_key(key).name == "dana"  # type: ignore[union-attr]
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
