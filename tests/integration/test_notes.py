"""Notes over the real app and both stores: written, searchable at once, edited with versions,
listed, deleted; who may write them; the limits; the agent's save_note tool."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from integration.store_backends import StoreBackend
from integration.test_api import Env, build, create_kb
from lorebase.agent.profiles import Profiles
from lorebase.app import Lorebase, open_lorebase
from lorebase.chunk import estimate_tokens
from lorebase.embed.fake import FakeEmbedder
from lorebase.errors import InvalidInput, TooLarge
from lorebase.settings import Settings

DOOR = "The door code of the lab is 4711. Change it every spring."


@pytest.fixture
def env(tmp_path: Path, backend: StoreBackend) -> Iterator[Env]:
    environment = build(tmp_path, backend)
    yield environment
    environment.lb.close()


def note(env: Env, user: str, kb_id: int, text: str, title: str | None = None) -> dict[str, Any]:
    body = {"text": text} | ({"title": title} if title else {})
    response = env.client.post(
        f"/v1/knowledge-bases/{kb_id}/notes", json=body, headers=env.as_(user)
    )
    assert response.status_code == 201, response.text
    found: dict[str, Any] = response.json()
    return found


def hits(env: Env, user: str, kb_id: int, query: str) -> list[dict[str, Any]]:
    response = env.client.post(
        "/v1/search",
        json={"query": query, "knowledge_bases": [kb_id], "mode": "keyword"},
        headers=env.as_(user),
    )
    assert response.status_code == 200, response.text
    found: list[dict[str, Any]] = response.json()["hits"]
    return found


def test_a_note_is_one_chunk_searchable_when_the_answer_comes(env: Env) -> None:
    kb_id = create_kb(env, "alice", "team-notes", "team", team="eng")
    written = note(env, "alice", kb_id, DOOR, "Lab door")
    assert written["state"] == "indexed" and written["chunks"] == 1
    assert written["created"] is True and written["title"] == "Lab door"
    found = hits(env, "bob", kb_id, "door code lab")
    assert [hit["document_id"] for hit in found] == [written["id"]]
    assert found[0]["title"] == "Lab door"
    # The same title and text again: the same note, 200.
    again = env.client.post(
        f"/v1/knowledge-bases/{kb_id}/notes",
        json={"text": DOOR, "title": "Lab door"},
        headers=env.as_("alice"),
    )
    assert again.status_code == 200 and again.json()["id"] == written["id"]
    assert again.json()["created"] is False


def test_an_edit_keeps_the_previous_text_as_a_version(env: Env) -> None:
    kb_id = create_kb(env, "alice", "alice-notes", "personal")
    written = note(env, "alice", kb_id, DOOR)
    assert written["title"] == DOOR[:80].strip()  # no title: the start of the text
    edited = env.client.patch(
        f"/v1/notes/{written['id']}",
        json={"text": "The door code of the lab is 9090.", "title": "Lab door"},
        headers=env.as_("alice"),
    )
    assert edited.status_code == 200, edited.text
    assert edited.json()["text"] == "The door code of the lab is 9090."
    assert edited.json()["state"] == "indexed"
    assert [h["document_id"] for h in hits(env, "alice", kb_id, "9090")] == [written["id"]]
    assert hits(env, "alice", kb_id, "4711") == []  # the old text is no longer searched
    versions = env.client.get(f"/v1/notes/{written['id']}/versions", headers=env.as_("alice"))
    assert versions.status_code == 200
    assert [(v["version"], v["text"], v["author"]) for v in versions.json()] == [(1, DOOR, "alice")]
    listed = env.client.get(f"/v1/knowledge-bases/{kb_id}/notes", headers=env.as_("alice"))
    assert [(n["id"], n["title"], n["text"]) for n in listed.json()] == [
        (written["id"], "Lab door", None)
    ]
    # Deleting the note takes its versions with it.
    gone = env.client.delete(f"/v1/notes/{written['id']}", headers=env.as_("alice"))
    assert gone.status_code == 204
    assert env.client.get(f"/v1/notes/{written['id']}", headers=env.as_("alice")).status_code == 404
    assert env.lb.store.note_versions(kb_id, written["id"]) == []
    assert hits(env, "alice", kb_id, "9090") == []


def test_a_long_note_is_split_only_past_the_token_limit(env: Env) -> None:
    kb_id = create_kb(env, "alice", "long-notes", "personal")
    settings = env.lb.kb_by_id(kb_id).chunk_settings
    # Longer than a chunk of a file may be, within the token limit: still one chunk.
    text = "word " * 250
    assert len(text) > settings.chunk_size and estimate_tokens(text) <= settings.max_tokens
    short = note(env, "alice", kb_id, text)
    assert short["chunks"] == 1
    long = note(env, "alice", kb_id, " ".join(f"word{i}" for i in range(1200)))
    assert long["chunks"] > 1


def test_who_may_write_read_and_edit_notes(env: Env) -> None:
    kb_id = create_kb(env, "alice", "eng-notes", "team", team="eng")
    written = note(env, "alice", kb_id, DOOR)
    # bob is a member: he reads the team's notes but may not write or edit them (403).
    assert env.client.get(f"/v1/notes/{written['id']}", headers=env.as_("bob")).status_code == 200
    refused = env.client.post(
        f"/v1/knowledge-bases/{kb_id}/notes", json={"text": "x"}, headers=env.as_("bob")
    )
    assert refused.status_code == 403
    assert (
        env.client.patch(
            f"/v1/notes/{written['id']}", json={"text": "y"}, headers=env.as_("bob")
        ).status_code
        == 403
    )
    # carol is not in the team: the base and the note do not exist for her (404).
    for response in (
        env.client.post(
            f"/v1/knowledge-bases/{kb_id}/notes", json={"text": "x"}, headers=env.as_("carol")
        ),
        env.client.get(f"/v1/notes/{written['id']}", headers=env.as_("carol")),
        env.client.get(f"/v1/notes/{written['id']}/versions", headers=env.as_("carol")),
        env.client.delete(f"/v1/notes/{written['id']}", headers=env.as_("carol")),
    ):
        assert response.status_code == 404


def test_bad_notes_say_what_is_wrong_without_their_text(
    env: Env, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    kb_id = create_kb(env, "alice", "limits", "personal")
    limit = env.lb.settings.max_note_chars
    secret = "BLUEHERON " * (limit // 10 + 1)
    too_large = env.client.post(
        f"/v1/knowledge-bases/{kb_id}/notes", json={"text": secret}, headers=env.as_("alice")
    )
    assert too_large.status_code == 413
    problem = too_large.json()
    assert problem["type"] == "/problems/too-large"
    assert str(limit) in problem["detail"] and "BLUEHERON" not in problem["detail"]
    blank = env.client.post(
        f"/v1/knowledge-bases/{kb_id}/notes", json={"text": "  \n "}, headers=env.as_("alice")
    )
    assert blank.status_code == 422 and "needs some text" in blank.json()["detail"]
    # Another document is no note: it is neither read nor edited as one.
    files = {"files": ("plan.md", b"# Plan\n\nBLUEHERON closes in May.\n", "text/markdown")}
    upload = env.client.post(
        f"/v1/knowledge-bases/{kb_id}/documents", files=files, headers=env.as_("alice")
    )
    document_id = upload.json()["documents"][0]["id"]
    for response in (
        env.client.get(f"/v1/notes/{document_id}", headers=env.as_("alice")),
        env.client.patch(f"/v1/notes/{document_id}", json={"text": "x"}, headers=env.as_("alice")),
        env.client.delete(f"/v1/notes/{document_id}", headers=env.as_("alice")),
    ):
        assert response.status_code == 422
        assert "not a note" in response.json()["detail"]
    assert "BLUEHERON" not in caplog.text


def test_the_agent_saves_notes_only_where_its_profile_writes(env: Env) -> None:
    kb_id = create_kb(env, "alice", "agent-notes", "team", team="eng")
    create_kb(env, "alice", "agent-reads", "team", team="eng")
    Profiles(env.lb.settings.data_dir).create(
        "helper", ["agent-notes", "agent-reads"], writable=["agent-notes"]
    )
    Profiles(env.lb.settings.data_dir).create("reader", ["agent-reads"])
    tools = env.client.get("/v1/tools?profile=reader", headers=env.as_("alice")).json()["tools"]
    assert "save_note" not in {tool["function"]["name"] for tool in tools}

    def save(user: str, kb: str, profile: str = "helper") -> dict[str, Any]:
        response = env.client.post(
            f"/v1/tools/save_note?profile={profile}",
            json={"knowledge_base": kb, "text": "Decided: ship on Friday.", "title": "Ship day"},
            headers=env.as_(user),
        )
        found: dict[str, Any] = response.json()
        return found | {"status": response.status_code}

    saved = save("alice", "agent-notes")
    assert saved["status"] == 200 and saved["structured"]["searchable"] is True
    assert [h["document_id"] for h in hits(env, "alice", kb_id, "ship friday")] == [
        saved["structured"]["document_id"]
    ]
    assert save("alice", "agent-reads")["status"] == 403  # not writable in this profile
    assert save("bob", "agent-notes")["status"] == 403  # bob may not change the base


def test_notes_through_the_library(tmp_path: Path, backend: StoreBackend) -> None:
    settings = dataclasses.replace(backend.settings(tmp_path / "data"), max_note_chars=100)
    lb: Lorebase = open_lorebase(
        settings=settings, embedder=FakeEmbedder(), data_key=backend.data_key()
    )
    with lb:
        kb = lb.create_kb("mine")
        record, created = lb.add_note(kb, "Remember the milk.", "Shopping")
        assert created and lb.note_content(record) == ("Shopping", "Remember the milk.")
        with pytest.raises(TooLarge, match="at most 100 characters"):
            lb.add_note(kb, "m" * 101)
        with pytest.raises(TooLarge):
            lb.edit_note(kb, record, "m" * 101)
        with pytest.raises(InvalidInput, match="title"):
            lb.add_note(kb, "text", "a\u202etitle")
        same = lb.edit_note(kb, record, "Remember the milk.", "Shopping")
        assert lb.note_versions(kb, same) == []  # nothing changed, nothing kept
        lb.edit_note(kb, record, title="Groceries")
        lb.edit_note(kb, record, "Remember the bread.")
        kept = lb.note_versions(kb, record)
        assert [(v.version, v.title, v.text) for v in kept] == [
            (1, "Shopping", "Remember the milk."),
            (2, "Groceries", "Remember the milk."),
        ]
        assert lb.search("bread", kb="mine", mode="keyword").hits[0].provenance.title == (
            "Groceries"
        )
        stored = lb.store.every_note_version()  # sealed like the note itself
        assert len(stored) == 2
        assert not any("milk" in v.text or "Shopping" in v.title for v in stored)


def test_kept_versions_stay_readable_after_a_rotation_of_the_data_key(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data")
    with open_lorebase(settings=settings, embedder=FakeEmbedder()) as lb:
        kb = lb.create_kb("mine")
        record, _ = lb.add_note(kb, "The door code is 4711.", "Door")
        lb.edit_note(kb, record, "The door code is 0815.")
        before = lb.store.every_note_version()[0]
        assert lb.rotate_data_key().names >= 1  # the version's title and text, sealed again
        after = lb.store.every_note_version()[0]
        assert (after.title, after.text) != (before.title, before.text)
    with open_lorebase(settings=settings, embedder=FakeEmbedder()) as lb:
        kb = lb.kb("mine")
        (record,) = lb.notes(kb)
        kept = lb.note_versions(kb, record)
        assert [(v.title, v.text) for v in kept] == [("Door", "The door code is 4711.")]


def test_a_lorebase_without_accounts_rotates_its_data_key(tmp_path: Path) -> None:
    """A library instance opened without accounts keeps no user's embedder key: a rotation
    seals its uploads and notes again and skips the keys instead of failing half way."""
    from lorebase.service import Lorebase
    from lorebase.store.sqlite import SqliteStore

    settings = Settings(data_dir=tmp_path / "data")
    settings.data_dir.mkdir(parents=True)
    with Lorebase(settings, SqliteStore(settings.database), FakeEmbedder()) as lb:
        kb = lb.create_kb("mine")
        record, _ = lb.add_note(kb, "First words.", "Words")
        lb.edit_note(kb, record, "Second words.")
        rotation = lb.rotate_data_key()
        assert rotation.names >= 1
        (kept,) = lb.note_versions(kb, record)
        assert kept.text == "First words."
