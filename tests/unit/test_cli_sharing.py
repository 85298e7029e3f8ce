"""`lorebase kb share|unshare|grants` on a real SQLite file."""

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner, Result

from lorebase.app import open_lorebase
from lorebase.cli.main import app
from lorebase.settings import Settings

runner = CliRunner()


def test_a_team_base_is_shared_listed_and_unshared(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with open_lorebase(settings=Settings(data_dir=data), embedder=None) as lb:
        accounts = lb.accounts
        accounts.create_team("eng")
        accounts.create_team("ops")
        accounts.create_user("carol")
        lb.create_kb("eng-notes", scope="team", team="eng")
        lb.create_kb("mine")

    def cli(*args: str) -> Result:
        return runner.invoke(app, ["--data-dir", str(data), "--embedder", "fake", *args])

    def as_json(result: Result) -> Any:
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    shared = as_json(cli("kb", "share", "eng-notes", "--team", "ops", "--json"))
    assert (shared["grantee"], shared["name"], shared["access"]) == ("team", "ops", "read")
    assert "carol (write)" in cli("kb", "share", "eng-notes", "--user", "carol", "--write").stdout
    listed = as_json(cli("kb", "grants", "eng-notes", "--json"))
    assert [(g["name"], g["access"]) for g in listed] == [("ops", "read"), ("carol", "write")]
    gone = as_json(cli("kb", "unshare", "eng-notes", "--team", "ops", "--json"))
    assert gone["name"] == "ops"
    assert [g["name"] for g in as_json(cli("kb", "grants", "eng-notes", "--json"))] == ["carol"]
    # What cannot be shared says why, with the exit code of its kind.
    assert cli("kb", "share", "eng-notes", "--team", "nobody").exit_code == 3
    assert cli("kb", "share", "eng-notes").exit_code == 2  # neither a team nor a user
    personal = cli("kb", "share", "mine", "--team", "ops")
    assert personal.exit_code == 2 and "only team bases" in personal.output
    assert cli("kb", "unshare", "eng-notes", "--team", "ops").exit_code == 3
    assert "not shared" in cli("kb", "grants", "mine").stdout
