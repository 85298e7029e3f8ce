"""Metadata filters on a small real base (the fake embedder): front matter becomes fields,
filters restrict both arms before ranking (and still fill top_k), tags people set are found at
once, in the library, the CLI, the REST API and the agent tool, on both backends; bad filters
say what is accepted, and a filter that matches nothing says why there is no answer."""

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
from lorebase.errors import InvalidInput, ToolArgumentError
from lorebase.fields import parse_condition
from lorebase.settings import ServeSettings
from small_base import small_base, write_files

FILES = {
    "hr/leave.md": "---\ntitle: Leave policy\ntags: [policy, hr]\nauthor: Ann Lee\n"
    "date: 2025-03-04\n---\n\n# Leave\n\nThe travel and leave budget for the year.\n",
    "hr/travel.md": "---\ntags: policy\nauthor: Bob\ndate: 2024-06-01\n---\n\n"
    "# Travel\n\nHow the travel budget is spent.\n",
    "notes/minutes.md": "---\ntags: [meeting]\nauthor: [Ann Lee, Cy]\ndate: 2025-01-15\n"
    "status: draft\n---\n\n# Minutes\n\nThe budget meeting on travel.\n",
    "notes/plain.txt": "A plain note about the travel budget.\n",
}
QUERY = "travel budget"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_files(tmp_path_factory.mktemp("corpus") / "docs", FILES)


@pytest.fixture(scope="module")
def lb(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lorebase]:
    with small_base(tmp_path_factory.mktemp("data"), corpus, "handbook") as instance:
        yield instance


def _paths(lb: Lorebase, *conditions: str, mode: str = "hybrid", top_k: int = 20) -> set[str]:
    wanted = tuple(parse_condition(text) for text in conditions)
    response = lb.search(QUERY, top_k=top_k, mode=mode, filters=wanted)
    return {hit.provenance.path for hit in response.hits}


@pytest.mark.parametrize("mode", ["hybrid", "keyword", "dense"])
def test_filters_restrict_every_arm(lb: Lorebase, mode: str) -> None:
    assert _paths(lb, "tags=policy", mode=mode) == {"docs/hr/leave.md", "docs/hr/travel.md"}
    assert _paths(lb, "author=ann lee", mode=mode) == {"docs/hr/leave.md", "docs/notes/minutes.md"}
    assert _paths(lb, "author=Ann Lee", "tags=meeting", mode=mode) == {"docs/notes/minutes.md"}
    assert _paths(lb, "date>=2025-01-01", mode=mode) == {
        "docs/hr/leave.md",
        "docs/notes/minutes.md",
    }
    assert _paths(lb, "date<2025", mode=mode) == {"docs/hr/travel.md"}
    assert _paths(lb, "status!=draft", "kind=md", mode=mode) == {
        "docs/hr/leave.md",
        "docs/hr/travel.md",
    }


def test_a_filter_applies_before_ranking(lb: Lorebase) -> None:
    """top_k=1 still finds the one document that meets the filter (no post-filter)."""
    assert _paths(lb, "status=draft", top_k=1) == {"docs/notes/minutes.md"}


def test_hits_show_their_documents_fields(lb: Lorebase) -> None:
    (hit,) = lb.search(QUERY, filters=(parse_condition("title=leave policy"),)).hits
    assert hit.fields["tags"] == ("hr", "policy")
    assert hit.fields["author"] == ("Ann Lee",) and hit.fields["date"] == ("2025-03-04",)


def test_a_filter_that_matches_nothing_says_why(lb: Lorebase) -> None:
    response = lb.search(QUERY, filters=(parse_condition("tags=nothing-like-it"),))
    assert response.no_answer and response.hits == []
    assert response.notes[0].startswith("filter_matched_nothing:")
    assert "tags=nothing-like-it" in response.notes[0]


def test_an_unknown_field_is_refused_naming_those_known(lb: Lorebase) -> None:
    with pytest.raises(InvalidInput) as caught:
        lb.search(QUERY, filters=(parse_condition("colour=red"),))
    message = str(caught.value)
    assert "colour" in message and "status" in message and "author" in message


def test_tags_people_set_are_found_at_once_and_kept(lb: Lorebase, corpus: Path) -> None:
    kb, plain = lb.find_document(
        next(
            hit.provenance.document_id
            for hit in lb.search(QUERY, top_k=20).hits
            if hit.provenance.path == "docs/notes/plain.txt"
        )
    )
    assert lb.tag_document(kb, plain, add=["Finance"]) == ["Finance"]
    assert _paths(lb, "tags=finance") == {"docs/notes/plain.txt"}
    (corpus / "notes/plain.txt").write_text("A plain note about the travel budget, changed.\n")
    lb.sync("handbook")
    assert _paths(lb, "tags=finance") == {"docs/notes/plain.txt"}  # kept across a reading
    assert lb.tag_document(kb, plain, remove=["finance"]) == []
    hits = lb.search(QUERY, top_k=20).hits
    _, leave = lb.find_document(
        next(h.provenance.document_id for h in hits if h.provenance.path == "docs/hr/leave.md")
    )
    with pytest.raises(InvalidInput, match="comes from the document itself"):
        lb.tag_document(kb, leave, remove=["policy"])


def test_the_cli(lb: Lorebase) -> None:
    base = ["--data-dir", str(lb.settings.data_dir), "--embedder", "fake"]
    runner = CliRunner()

    def run(*args: str) -> Any:
        return runner.invoke(app, [*base, *args])

    def paths(*options: str) -> set[str]:
        result = run("search", QUERY, "--top-k", "20", "--json", *options)
        assert result.exit_code == 0, result.output
        return {hit["path"] for hit in json.loads(result.stdout)["hits"]}

    assert paths("--filter", "tags=policy", "--filter", "date>=2025") == {"docs/hr/leave.md"}
    shown = run("search", QUERY, "--filter", "tags=policy")
    assert shown.exit_code == 0 and "author: Ann Lee" in shown.output
    unknown = run("search", QUERY, "--filter", "colour=red")
    assert unknown.exit_code == 2 and "the fields known here" in unknown.output
    malformed = run("search", QUERY, "--filter", "date>=last week")
    assert malformed.exit_code == 2 and "YYYY-MM-DD" in malformed.output
    nothing = run("search", QUERY, "--filter", "tags=nothing-like-it")
    assert nothing.exit_code == 0 and "filter_matched_nothing" in nothing.output
    assert "Nothing relevant found" not in nothing.output
    hit = json.loads(run("search", QUERY, "--json", "--filter", "status=draft").stdout)["hits"][0]
    assert hit["fields"]["status"] == ["draft"]
    tagged = run("docs", "tag", hit["document_id"], "Q1 review", "--json")
    assert tagged.exit_code == 0, tagged.output
    assert json.loads(tagged.stdout)["tags"] == ["meeting", "Q1 review"]
    assert paths("--filter", "tags=q1 review") == {"docs/notes/minutes.md"}
    show = json.loads(run("docs", "show", hit["document_id"], "--json").stdout)
    assert show["fields"]["author"] == ["Ann Lee", "Cy"]
    untagged = run("docs", "untag", hit["document_id"], "Q1 review")
    assert untagged.exit_code == 0 and "tags meeting" in untagged.output
    refused = run("docs", "untag", hit["document_id"], "meeting")
    assert refused.exit_code == 2 and "front matter" in refused.output


def test_the_api(lb: Lorebase) -> None:
    client = api_client(create_app(lb, manage=False))

    def search(**body: Any) -> Any:
        return client.post("/v1/search", json={"query": QUERY, "top_k": 20, **body})

    found = search(filter={"author": ["Bob", "Cy"], "date": {"$lt": "2025-02"}})
    assert found.status_code == 200, found.text
    assert {hit["path"] for hit in found.json()["hits"]} == {
        "docs/hr/travel.md",
        "docs/notes/minutes.md",
    }
    unknown = search(filter={"colour": "red"})
    assert unknown.status_code == 422 and "the fields known here" in unknown.text
    for bad in ({"date": {"$gte": "soon"}}, {"tags": {"$regex": "x"}}, ["tags"]):
        assert search(filter=bad).status_code == 422
    nothing = search(filter={"tags": "nothing-like-it"}).json()
    assert nothing["no_answer"] is True and nothing["notes"][0].startswith("filter_matched")

    document_id = found.json()["hits"][0]["document_id"]
    patched = client.patch(f"/v1/documents/{document_id}", json={"add_tags": ["Archive"]})
    assert patched.status_code == 200, patched.text
    assert "Archive" in patched.json()["fields"]["tags"]
    assert search(filter={"tags": "archive"}).json()["hits"][0]["document_id"] == document_id
    got = client.get(f"/v1/documents/{document_id}").json()
    assert "Archive" in got["fields"]["tags"] and got["user_tags"] == ["Archive"]
    assert patched.json()["user_tags"] == ["Archive"]
    back = client.patch(f"/v1/documents/{document_id}", json={"remove_tags": ["archive"]})
    assert back.status_code == 200 and "Archive" not in back.json()["fields"].get("tags", [])
    own = client.patch(f"/v1/documents/{document_id}", json={"remove_tags": ["policy", "meeting"]})
    assert own.status_code == 422
    empty = client.patch(f"/v1/documents/{document_id}", json={"add_tags": [""]})
    assert empty.status_code == 422
    listed = client.get(f"/v1/knowledge-bases/{got['knowledge_base_id']}/documents").json()
    assert all(item["fields"] is None for item in listed)


def test_the_agent_tool(lb: Lorebase) -> None:
    toolbox = ToolBox(lb)
    result = toolbox.call(
        "search_knowledge_base", {"query": QUERY, "top_k": 20, "filter": {"tags": "meeting"}}
    )
    assert {source.provenance.path for source in result.sources} == {"docs/notes/minutes.md"}
    with pytest.raises(ToolArgumentError, match="filter must be a JSON object"):
        toolbox.call("search_knowledge_base", {"query": QUERY, "filter": "tags=x"})
    with pytest.raises(InvalidInput, match="the fields known here"):
        toolbox.call("search_knowledge_base", {"query": QUERY, "filter": {"colour": "red"}})


def test_the_filters_on_each_backend(corpus: Path, tmp_path: Path, backend: StoreBackend) -> None:
    settings = backend.settings(tmp_path / "data", serve=ServeSettings(watch=False, workers=1))
    with open_lorebase(
        settings=settings, embedder=FakeEmbedder(), data_key=backend.data_key()
    ) as instance:
        instance.add([corpus], kb="handbook")
        assert _paths(instance, "tags=policy", "date>=2025") == {"docs/hr/leave.md"}
        assert _paths(instance, "author=cy") == {"docs/notes/minutes.md"}
        assert _paths(instance, "modified>=2000") == {f"docs/{name}" for name in FILES}
