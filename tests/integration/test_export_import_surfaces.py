"""`lorebase export` / `lorebase import` and the administrators' routes, through the real
command line and the real app: JSON out, the passphrase from a file or the environment (never
printed, never logged), 403 for members, a problem document for a bad file."""

from __future__ import annotations

import io
import json
import logging
import os
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from loopback import client as api_client
from lorebase.accounts.base import Role
from lorebase.api.app import create_app
from lorebase.app import Lorebase, open_lorebase
from lorebase.cli.main import app
from lorebase.embed.fake import FakeEmbedder
from lorebase.settings import ServeSettings, Settings
from lorebase.vault.keys import DataKey

PASSPHRASE = "a passphrase nobody logs"
runner = CliRunner()


def write_folder(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "glacier.md").write_text("# Glacier\n\nGlacier meltwater feeds the valley rivers.\n")
    (root / "copper.md").write_text("# Copper\n\nCopper smelting needs a hot furnace.\n")
    return root


# -- the command line ----------------------------------------------------------------------
def cli(data: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    result = runner.invoke(
        app, ["--data-dir", str(data), "--embedder", "fake", *args], env=env or {}
    )
    return result.exit_code, result.output


def test_export_and_import_on_the_command_line(tmp_path: Path) -> None:
    source, target = tmp_path / "source", tmp_path / "target"
    code, _ = cli(source, "add", str(write_folder(tmp_path / "docs")), "--kb", "notes")
    assert code == 0
    file = tmp_path / "notes.zip"
    code, out = cli(source, "export", "notes", str(file), "--json")
    assert code == 0, out
    exported = json.loads(out)
    assert exported["documents"] == 2 and exported["vectors"] > 0 and exported["bytes"] > 0
    code, out = cli(target, "import", str(file), "--json")
    assert code == 0, out
    imported = json.loads(out)
    assert imported["knowledge_base"] == "notes" and imported["documents"] == 2
    code, out = cli(target, "import", str(file))
    assert code != 0 and "--replace" in out
    code, out = cli(target, "import", str(file), "--kb", "copy", "--json")
    assert code == 0 and json.loads(out)["renumbered"] == 2
    code, out = cli(target, "import", str(file), "--replace")
    assert code == 0 and "replaced" in out
    code, out = cli(target, "search", "glacier meltwater", "--kb", "copy", "--json")
    assert code == 0 and "glacier.md" in out


def test_the_passphrase_comes_from_a_file_or_the_environment_and_is_never_printed(
    tmp_path: Path,
) -> None:
    data_key = DataKey.generate()
    settings = Settings(data_dir=tmp_path / "source", data_key=data_key.to_base64())
    with open_lorebase(settings=settings, embedder=FakeEmbedder()) as lb:
        lb.add([write_folder(tmp_path / "docs")], kb="notes")
        lb.upload(lb.kb("notes"), "minutes.md", [b"# Minutes\n\nThe board met on Tuesday.\n"])
    env = {"LOREBASE_DATA_KEY": data_key.to_base64()}
    file = tmp_path / "notes.zip"
    code, out = cli(tmp_path / "source", "export", "notes", str(file), env=env)
    assert code == 2 and "--no-originals" in out and "LOREBASE_EXPORT_KEY" in out
    key_file = tmp_path / "export.key"
    key_file.write_text(PASSPHRASE + "\n")
    code, out = cli(
        tmp_path / "source", "export", "notes", str(file), "--key-file", str(key_file), env=env
    )
    assert code == 0 and PASSPHRASE not in out and "1 originals" in out
    code, out = cli(tmp_path / "target", "import", str(file))
    assert code == 2 and "--key-file" in out
    code, out = cli(
        tmp_path / "target",
        "import",
        str(file),
        "--json",
        env={"LOREBASE_EXPORT_KEY": "wrong"},
    )
    assert code == 2 and "does not open" in out and "wrong" not in out.replace("wrong key", "")
    code, out = cli(
        tmp_path / "target", "import", str(file), "--json", env={"LOREBASE_EXPORT_KEY": PASSPHRASE}
    )
    assert code == 0, out
    assert json.loads(out)["originals"] == 1 and PASSPHRASE not in out
    code, out = cli(tmp_path / "other", "export", "notes", str(tmp_path / "x.zip"))
    assert code != 0  # nothing there


# -- the routes ----------------------------------------------------------------------------
@dataclass
class Env:
    lb: Lorebase
    client: TestClient
    keys: dict[str, str]

    def as_(self, user: str, **extra: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.keys[user]}", **extra}


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    lb = open_lorebase(
        settings=Settings(data_dir=tmp_path / "data", serve=ServeSettings(workers=1, watch=False)),
        embedder=FakeEmbedder(),
        data_key=DataKey.generate(),
    )
    keys = {}
    for name, role in {"admin": Role.ADMIN, "alice": Role.MEMBER}.items():
        user = lb.accounts.create_user(name, role)
        keys[name], _ = lb.accounts.create_key(user.id)
    lb.add([write_folder(tmp_path / "docs")], kb="notes")
    lb.upload(lb.kb("notes"), "minutes.md", [b"# Minutes\n\nThe board met on Tuesday.\n"])
    lb.start_serving()
    assert lb.queue.join(30)
    client = api_client(create_app(lb, manage=False), raise_server_exceptions=False)
    yield Env(lb, client, keys)
    lb.close()


def test_admins_export_and_import_over_http_and_members_get_403(
    env: Env, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    kb = env.lb.kb("notes")
    path = f"/v1/knowledge-bases/{kb.id}/export"
    refused = env.client.get(path, headers=env.as_("alice", **{"X-Export-Key": PASSPHRASE}))
    assert refused.status_code == 403
    assert refused.json()["type"] == "/problems/forbidden"
    no_key = env.client.get(path, headers=env.as_("admin"))
    assert no_key.status_code == 422 and "no_originals" not in no_key.text
    answer = env.client.get(path, headers=env.as_("admin", **{"X-Export-Key": PASSPHRASE}))
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"] == "application/zip"
    with zipfile.ZipFile(io.BytesIO(answer.content)) as archive:
        assert json.loads(archive.read("manifest.json"))["counts"]["originals"] == 1
    assert not list((env.lb.settings.data_dir / "tmp").iterdir())  # the file is gone after
    plain = env.client.get(f"{path}?no_originals=true", headers=env.as_("admin"))
    assert plain.status_code == 200

    files = {"file": ("notes.zip", answer.content, "application/zip")}
    imports = "/v1/knowledge-bases/import"
    member = env.client.post(imports, files=files, params={"kb": "copy"}, headers=env.as_("alice"))
    assert member.status_code == 403
    made = env.client.post(
        imports,
        files=files,
        params={"kb": "copy"},
        headers=env.as_("admin", **{"X-Export-Key": PASSPHRASE}),
    )
    assert made.status_code == 201, made.text
    body = made.json()
    assert body["knowledge_base"]["name"] == "copy" and body["documents"] == 3
    assert body["originals"] == 1 and body["renumbered"] == 3
    taken = env.client.post(
        imports,
        files=files,
        params={"kb": "copy"},
        headers=env.as_("admin", **{"X-Export-Key": PASSPHRASE}),
    )
    assert taken.status_code == 409 and "replace" in taken.json()["detail"]
    bad = env.client.post(
        imports,
        files={"file": ("bad.zip", answer.content[: len(answer.content) // 2], "application/zip")},
        params={"kb": "bad"},
        headers=env.as_("admin", **{"X-Export-Key": PASSPHRASE}),
    )
    assert bad.status_code == 422
    assert bad.json()["type"] == "/problems/invalid-input"
    assert "nothing was imported" in bad.json()["detail"]
    assert {kb.name for kb in env.lb.knowledge_bases()} == {"notes", "copy"}
    assert PASSPHRASE not in caplog.text
    assert os.environ.get("LOREBASE_EXPORT_KEY") is None


def test_the_routes_are_in_the_openapi_schema(env: Env) -> None:
    schema = env.client.get("/openapi.json").json()
    assert "get" in schema["paths"]["/v1/knowledge-bases/{kb_id}/export"]
    assert "post" in schema["paths"]["/v1/knowledge-bases/import"]
