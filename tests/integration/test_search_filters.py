"""Search filters on a small real base (SQLite, the fake embedder): ``path_prefix`` (the path
as hits show it) and ``language`` (source files in it) restrict both arms before ranking, alone
and together, in the library, the CLI, the REST API and the agent tool; a filter that matches
nothing gives an empty result that says ``no_answer``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from integration.store_backends import StoreBackend
from loopback import client as api_client
from lorebase.agent.tools import ToolBox
from lorebase.api.app import create_app
from lorebase.app import Lorebase, open_lorebase
from lorebase.cli.main import app
from lorebase.embed.fake import FakeEmbedder
from lorebase.errors import InvalidInput
from lorebase.settings import ServeSettings
from small_base import small_base, write_files

FILES = {
    "app/checksum.py": "def checksum(data):\n    return sum(data) % 256\n",
    "app/verify.py": "def verify_checksum(data, sum):\n    return checksum(data) == sum\n",
    "app/checksum.rs": "fn checksum(data: &[u8]) -> u8 {\n    data.iter().sum()\n}\n",
    "lib/crc.py": "def crc_checksum(data):\n    return zlib.crc32(data)\n",
    "lib/crc.rs": "fn crc_checksum(data: &[u8]) -> u32 {\n    crc32(data)\n}\n",
    "app/README.md": "# Checksums\n\nHow the checksum works:\n\n```python\nchecksum(b'x')\n```\n",
}
QUERY = "checksum data"
ALL = {f"repo/{name}" for name in FILES}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_files(tmp_path_factory.mktemp("corpus") / "repo", FILES)


@pytest.fixture(scope="module")
def lb(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lorebase]:
    with small_base(tmp_path_factory.mktemp("data"), corpus, "code") as instance:
        yield instance


@pytest.mark.parametrize("mode", ["hybrid", "keyword", "dense"])
def test_each_filter_and_both_restrict_the_hits(lb: Lorebase, mode: str) -> None:
    def paths(path_prefix: str | None = None, language: str | None = None) -> set[str]:
        response = lb.search(QUERY, top_k=20, mode=mode, path_prefix=path_prefix, language=language)
        return {hit.provenance.path for hit in response.hits}

    assert paths() <= ALL and len(paths()) > 2
    assert paths(path_prefix="repo/app/") == {p for p in paths() if p.startswith("repo/app/")}
    assert paths(path_prefix="repo/lib/") == {"repo/lib/crc.py", "repo/lib/crc.rs"} & paths()
    python = paths(language="python")
    assert python and python <= {"repo/app/checksum.py", "repo/app/verify.py", "repo/lib/crc.py"}
    assert paths(language="PYTHON") == python  # case-insensitive
    assert paths(path_prefix="repo/lib/", language="rust") == {"repo/lib/crc.rs"}
    # A page with a fenced Python example is no Python source file.
    assert "repo/app/README.md" not in python


def test_the_filters_on_each_backend(corpus: Path, tmp_path: Path, backend: StoreBackend) -> None:
    settings = backend.settings(tmp_path / "data", serve=ServeSettings(watch=False, workers=1))
    with open_lorebase(
        settings=settings, embedder=FakeEmbedder(), data_key=backend.data_key()
    ) as instance:
        instance.add([corpus], kb="code")

        def paths(path_prefix: str | None = None, language: str | None = None) -> list[str]:
            response = instance.search(QUERY, top_k=20, path_prefix=path_prefix, language=language)
            return sorted(hit.provenance.path for hit in response.hits)

        assert paths(path_prefix="repo/lib/") == ["repo/lib/crc.py", "repo/lib/crc.rs"]
        assert paths(language="Rust") == ["repo/app/checksum.rs", "repo/lib/crc.rs"]
        assert paths(path_prefix="repo/app/", language="python") == [
            "repo/app/checksum.py",
            "repo/app/verify.py",
        ]
        assert paths(path_prefix="repo/nowhere/") == []


def test_the_filter_applies_before_ranking(lb: Lorebase) -> None:
    """top_k=1 inside a folder still finds that folder's best hit (no post-filter)."""
    response = lb.search(QUERY, top_k=1, path_prefix="repo/lib/", language="rust")
    assert [hit.provenance.path for hit in response.hits] == ["repo/lib/crc.rs"]


def test_a_filter_that_matches_nothing_says_no_answer(lb: Lorebase) -> None:
    cases: tuple[dict[str, Any], ...] = ({"path_prefix": "elsewhere/"}, {"language": "cobol"})
    for filters in cases:
        response = lb.search(QUERY, **filters)
        assert response.hits == [] and response.no_answer


@pytest.mark.parametrize(
    ("filters", "message"),
    [
        ({"path_prefix": ""}, "path_prefix must be a non-empty string"),
        ({"path_prefix": "a\x00b"}, "NUL"),
        ({"path_prefix": "x" * 1025}, "at most 1024"),
        ({"language": "py thon"}, "language must be a language name"),
        ({"language": "x" * 33}, "language must be a language name"),
    ],
)
def test_bad_filters_are_refused(lb: Lorebase, filters: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        lb.search(QUERY, **filters)


def test_the_cli_filters(lb: Lorebase) -> None:
    base = ["--data-dir", str(lb.settings.data_dir), "--embedder", "fake"]
    runner = CliRunner()

    def paths(*options: str) -> set[str]:
        result = runner.invoke(app, [*base, "search", QUERY, "--top-k", "20", "--json", *options])
        assert result.exit_code == 0, result.output
        return {hit["path"] for hit in json.loads(result.stdout)["hits"]}

    assert paths("--path", "repo/lib/") == {"repo/lib/crc.py", "repo/lib/crc.rs"}
    assert paths("--language", "Rust") == {"repo/app/checksum.rs", "repo/lib/crc.rs"}
    assert paths("--path", "repo/app/", "--language", "rust") == {"repo/app/checksum.rs"}
    nothing = runner.invoke(app, [*base, "search", QUERY, "--language", "cobol"])
    assert nothing.exit_code == 0 and "Nothing relevant found" in nothing.output
    refused = runner.invoke(app, [*base, "search", QUERY, "--language", "no such"])
    assert refused.exit_code != 0 and "language must be a language name" in refused.output
    help_text = runner.invoke(app, ["search", "--help"]).output
    assert "--path" in help_text and "--language" in help_text


def test_the_api_filters(lb: Lorebase) -> None:
    client = api_client(create_app(lb, manage=False))

    def search(**filters: str) -> dict[str, Any]:
        response = client.post("/v1/search", json={"query": QUERY, "top_k": 20, **filters})
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        return body

    both = search(path_prefix="repo/app/", language="python")
    assert {hit["path"] for hit in both["hits"]} == {"repo/app/checksum.py", "repo/app/verify.py"}
    assert {hit["path"] for hit in search(path_prefix="repo/lib/")["hits"]} == {
        "repo/lib/crc.py",
        "repo/lib/crc.rs",
    }
    nothing = search(language="cobol")
    assert nothing["hits"] == [] and nothing["no_answer"] is True
    bad = client.post("/v1/search", json={"query": QUERY, "language": "no such"})
    assert bad.status_code in (400, 422) and "language must be a language name" in bad.text
    too_long = client.post("/v1/search", json={"query": QUERY, "path_prefix": "x" * 1025})
    assert too_long.status_code in (400, 422)


def test_the_agent_tool_filters(lb: Lorebase) -> None:
    toolbox = ToolBox(lb)
    result = toolbox.call(
        "search_knowledge_base",
        {"query": QUERY, "top_k": 20, "path_prefix": "repo/lib/", "language": "python"},
    )
    assert {source.provenance.path for source in result.sources} == {"repo/lib/crc.py"}
    assert "path: repo/lib/crc.py" in result.structured["hits"][0]["content"]
    nothing = toolbox.call("search_knowledge_base", {"query": QUERY, "path_prefix": "nowhere/"})
    assert nothing.structured["hits"] == [] and nothing.structured["no_answer"] is True


def test_filters_narrow_the_documents_asked_for(lb: Lorebase) -> None:
    everything = lb.search(QUERY, top_k=20).hits
    by_path = {hit.provenance.path: hit.provenance.document_id for hit in everything}
    asked = [by_path["repo/lib/crc.py"], by_path["repo/app/checksum.rs"]]
    inside = lb.search(QUERY, top_k=20, document_ids=asked, path_prefix="repo/lib/").hits
    assert {hit.provenance.path for hit in inside} == {"repo/lib/crc.py"}
    outside = lb.search(QUERY, document_ids=asked[1:], language="python")
    assert outside.hits == [] and outside.no_answer
