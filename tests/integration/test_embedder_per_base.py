"""An embedder per knowledge base: two bases made with two models — the fake embedder at 64
dimensions, and a stand-in HTTP embedding server on 127.0.0.1 at 48 — searched together; one
model down while the other answers; a re-embed from one to the other, also killed with
SIGKILL half way and resumed, never answering with vectors of two models for one base."""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from embed_stand_in import MODEL, EmbeddingServer, embedders_file
from integration.store_backends import StoreBackend
from loopback import client as api_client
from lorebase.api.app import create_app
from lorebase.app import Lorebase, open_lorebase
from lorebase.chunk.base import embed_text
from lorebase.embed.fake import FakeEmbedder
from lorebase.errors import NotFound, Unavailable
from lorebase.ingest.embedding import EMBED_BATCH_CHUNKS
from lorebase.search.query import Hit, SearchResponse
from lorebase.settings import ServeSettings, Settings
from lorebase.store.sqlite.store import SqliteStore
from small_base import write_files
from waiting import wait_until

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]
SQLITE = StoreBackend("sqlite")

BIRDS = {
    "herons.md": "# Herons\n\nThe grey heron stands still in shallow water and spears fish.\n",
    "swifts.md": "# Swifts\n\nCommon swifts sleep and eat on the wing, rarely landing at all.\n",
    "owls.md": "# Owls\n\nBarn owls hunt voles at night, hearing them under the grass.\n",
}
BOATS = {
    "keels.md": "# Keels\n\nA deep keel keeps a sailing boat upright against the wind.\n",
    "knots.md": "# Knots\n\nThe bowline makes a fixed loop at the end of a mooring line.\n",
    "herons-boat.md": "# The Heron\n\nThe Heron is a small dinghy sailed by two in light wind.\n",
}


@pytest.fixture
def server() -> Iterator[EmbeddingServer]:
    stand_in = EmbeddingServer(dim=48).start()
    yield stand_in
    stand_in.stop()


def settings_for(
    data: Path, server: EmbeddingServer, backend: StoreBackend, **extra: str
) -> Settings:
    environ = {
        "LOREBASE_EMBEDDERS": str(embedders_file(data.parent, server)),
        "LOREBASE_EMBEDDER": "fake",
        **extra,
    }
    settings = Settings.from_env(data, environ=environ)
    return backend.settings(
        settings.data_dir,
        embed=settings.embed,
        embedders=settings.embedders,
        default_embedder=settings.default_embedder,
        search=settings.search,
        serve=ServeSettings(auth=False, watch=False, workers=1),
    )


def open_at(data: Path, server: EmbeddingServer, backend: StoreBackend = SQLITE) -> Lorebase:
    return open_lorebase(settings=settings_for(data, server, backend), data_key=backend.data_key())


def two_bases(tmp_path: Path, server: EmbeddingServer, backend: StoreBackend) -> Lorebase:
    """``birds`` made with ``small`` (the default), ``boats`` with ``remote``, both indexed."""
    lb = open_at(tmp_path / "data", server, backend)
    lb.create_kb("birds")
    lb.create_kb("boats", embedder="remote")
    lb.add([write_files(tmp_path / "birds", BIRDS)], kb="birds")
    lb.add([write_files(tmp_path / "boats", BOATS)], kb="boats")
    return lb


def expected_cosine(model: FakeEmbedder, query: str, hit: Hit) -> float:
    """The cosine ``model`` gives the hit's passage for the query: what the stored vector
    scores only if ``model`` made it."""
    passage = embed_text(hit.provenance.title, hit.provenance.trail, hit.text)
    question = model.embed([query], "query")[0]
    document = model.embed([passage], "document")[0]
    return float(np.dot(question, document))


def assert_dense_scores_made_by(
    response: SearchResponse, query: str, models: dict[str, FakeEmbedder]
) -> int:
    """Every dense score of every hit is the cosine of its own base's model (int8 storage:
    within 0.03). Returns how many hits had one."""
    checked = 0
    for hit in response.hits:
        if "dense" not in hit.scores:
            continue
        model = models[hit.provenance.knowledge_base]
        assert hit.scores["dense"].score == pytest.approx(
            expected_cosine(model, query, hit), abs=0.03
        )
        checked += 1
    return checked


DISTINCT_IDENTITIES = (
    "SELECT DISTINCT i.key FROM vectors v JOIN identities i ON i.id = v.identity_id"
)
BIRD_WORDS = ("heron", "swift", "owl", "grass", "water", "fish", "night")
BOAT_WORDS = ("keel", "bowline", "mooring", "dinghy", "wind")
SMALL = FakeEmbedder(64, model="fake-small")
REMOTE = FakeEmbedder(48, model=MODEL)


def test_two_bases_with_two_models_are_searched_together(
    tmp_path: Path, server: EmbeddingServer, backend: StoreBackend
) -> None:
    with two_bases(tmp_path, server, backend) as lb:
        birds, boats = lb.kb("birds"), lb.kb("boats")
        assert (birds.embedder, boats.embedder) == ("small", "remote")
        assert birds.identity_key == SMALL.identity.key
        assert boats.identity_key is not None
        assert boats.identity_key.startswith(f"http:{MODEL}@") and boats.identity_key.endswith(
            "/48"
        )
        before = len(server.requests)
        query = "heron standing in water"
        response = lb.search(query, kb=["birds", "boats"], mode="dense", top_k=6)
        assert len(server.requests) == before + 1  # the query embedded once for the remote model
        assert response.warnings == []
        assert response.identities == {birds.id: birds.identity_key, boats.id: boats.identity_key}
        found = {hit.provenance.knowledge_base for hit in response.hits}
        assert found == {"birds", "boats"}
        checked = assert_dense_scores_made_by(response, query, {"birds": SMALL, "boats": REMOTE})
        assert checked == len(response.hits) == 6
        # Each model's best passage comes before either model's second (rank by rank).
        firsts = {hit.provenance.knowledge_base for hit in response.hits[:2]}
        assert firsts == {"birds", "boats"}
        hybrid = lb.search(query, kb=["birds", "boats"], top_k=3)
        assert hybrid.warnings == [] and hybrid.hits
        assert hybrid.hits[0].provenance.path.endswith("herons.md")


def test_one_model_down_the_other_base_answers_in_full(
    tmp_path: Path, server: EmbeddingServer, backend: StoreBackend
) -> None:
    with two_bases(tmp_path, server, backend) as lb:
        server.stop()
        query = "the heron dinghy in light wind"
        response = lb.search(query, kb=["birds", "boats"], top_k=6)
        down = [w for w in response.warnings if w.startswith("embedder_unavailable")]
        assert len(down) == 1 and "remote" in down[0] and "boats" in down[0]
        assert query not in " ".join(response.warnings)
        birds = [h for h in response.hits if h.provenance.knowledge_base == "birds"]
        boats = [h for h in response.hits if h.provenance.knowledge_base == "boats"]
        assert birds and all("dense" in h.scores for h in birds)  # answered in full
        assert boats and all(set(h.scores) <= {"keyword", "fused"} for h in boats)
        assert boats[0].provenance.path.endswith("herons-boat.md")
        assert response.identities == {lb.kb("birds").id: SMALL.identity.key}
        # Dense only: the base whose model is down still answers, by keyword.
        dense = lb.search(query, kb=["birds", "boats"], mode="dense", top_k=6)
        assert {h.provenance.knowledge_base for h in dense.hits} == {"birds", "boats"}
        # Status says which embedder does not answer.
        reach = lb.embedder_reachability(lb.kb("boats"))
        assert not reach.reachable and "127.0.0.1" in (reach.detail or "")
        assert lb.embedder_reachability(lb.kb("birds")).reachable
        # Over the API too: each base's embedder and whether it answers.
        client = api_client(create_app(lb))
        listed = {kb["name"]: kb for kb in client.get("/v1/knowledge-bases").json()}
        assert (listed["birds"]["embedder"], listed["birds"]["embedder_reachable"]) == (
            "small",
            True,
        )
        assert (listed["boats"]["embedder"], listed["boats"]["embedder_reachable"]) == (
            "remote",
            False,
        )
        assert "127.0.0.1" in listed["boats"]["embedder_problem"]
        ids = [listed["birds"]["id"], listed["boats"]["id"]]
        searched = client.post("/v1/search", json={"query": query, "knowledge_bases": ids})
        assert searched.status_code == 200, searched.text
        body = searched.json()
        assert any("remote" in w for w in body["warnings"]) and body["hits"]
        assert body["embedding_identities"] == {str(ids[0]): SMALL.identity.key}


def test_a_base_keeps_its_embedder_and_moves_only_by_an_explicit_reembed(
    tmp_path: Path, server: EmbeddingServer, backend: StoreBackend
) -> None:
    with two_bases(tmp_path, server, backend) as lb:
        with pytest.raises(NotFound, match="lorebase embedders"):
            lb.create_kb("nope", embedder="no-such-model")
        birds = lb.kb("birds")
        before = server.texts
        lb.sync("birds")  # a pass keeps the base's own model
        assert lb.kb("birds").identity_key == birds.identity_key and server.texts == before

        moved = lb.reembed_kb("birds", "remote")
        assert (moved.embedder, moved.embedder_next) == ("small", "remote")
        # Until the pass, searches use the old vectors (the small model's).
        query = "owls hunting at night"
        response = lb.search(query, kb="birds", mode="dense", top_k=3)
        assert response.identities == {birds.id: SMALL.identity.key}
        assert assert_dense_scores_made_by(response, query, {"birds": SMALL}) == 3
        assert any(n.startswith("reembedding: birds") for n in response.notes)
        lb.sync("birds")
        after = lb.kb("birds")
        assert (after.embedder, after.embedder_next) == ("remote", None)
        assert after.identity_key == lb.kb("boats").identity_key
        response = lb.search(query, kb="birds", mode="dense", top_k=3)
        assert response.identities == {birds.id: after.identity_key}
        assert response.notes == []
        assert assert_dense_scores_made_by(response, query, {"birds": REMOTE}) == 3
        # The old model's vectors are gone: both bases hold the remote model's only.
        assert backend.rows(tmp_path / "data", DISTINCT_IDENTITIES) == [(after.identity_key,)]

        server.stop()  # a re-embed to a model that does not answer is refused, nothing changes
        with pytest.raises(Unavailable, match="remote"):
            lb.reembed_kb("boats", "remote")
        assert lb.kb("boats").embedder_next is None


def lorebase_cli(data: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "lorebase", "--data-dir", str(data), *args]


def test_a_reembed_killed_half_way_resumes_and_never_mixes_two_models(
    tmp_path: Path, server: EmbeddingServer
) -> None:
    """``kb update --embedder remote --reembed`` in its own process, killed with SIGKILL while
    the server holds a request of its second batch of vectors (the first one written); the
    base still answers with the small model's vectors only; the same command again finishes,
    embedding only what was not done."""
    data = tmp_path / "data"
    words = [*BIRD_WORDS, *BOAT_WORDS]

    def part(n: int, p: int) -> str:
        return " ".join(words[(n * 7 + p * 3 + i) % len(words)] for i in range(60))

    files = {
        f"notes/n{n:03}.md": f"# Note {n}\n\n"
        + "\n\n".join(f"## Part {p}\n\n{part(n, p)}" for p in range(3))
        for n in range(160)
    }
    folder = write_files(tmp_path / "src", files)
    with open_at(data, server) as lb:
        lb.add([folder], kb="notes")
        small_key = lb.kb("notes").identity_key
        assert lb.kb("notes").chunks > EMBED_BATCH_CHUNKS + 64
    assert small_key == SMALL.identity.key
    environ = os.environ | {
        "LOREBASE_EMBEDDERS": str(tmp_path / "embedders.toml"),
        "LOREBASE_EMBEDDER": "fake",
    }
    # A pass writes vectors every EMBED_BATCH_CHUNKS chunks; the server answers 8 texts a
    # request: hold a request of the second batch.
    server.hold_after = EMBED_BATCH_CHUNKS // 8 + 2
    process = subprocess.Popen(
        lorebase_cli(data, "kb", "update", "notes", "--embedder", "remote", "--reembed"),
        env=environ,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert server.holding.wait(120), "the re-embed never reached its second batch"
        wait_until(  # the first batch's vectors written, beside the old ones
            lambda: len(SQLITE.rows_if_ready(data, DISTINCT_IDENTITIES) or ()) == 2,
            60,
            what="the first batch of new vectors",
        )
        process.send_signal(signal.SIGKILL)
        process.wait(30)
    finally:
        if process.poll() is None:
            process.kill()
    done_before_kill = server.texts
    assert done_before_kill > 0

    with open_at(data, server) as lb:
        kb = lb.kb("notes")
        assert (kb.identity_key, kb.embedder, kb.embedder_next) == (small_key, "small", "remote")
        with _sqlite_store(lb).database.read() as conn:
            by_identity = dict(
                conn.execute(
                    "SELECT i.key, count(*) FROM vectors v "
                    "JOIN identities i ON i.id = v.identity_id GROUP BY i.key"
                ).fetchall()
            )
        assert by_identity[small_key] == kb.chunks  # every old vector still there
        assert 0 < sum(n for key, n in by_identity.items() if key != small_key) < kb.chunks
        query = "owl hunting in the grass at night"
        response = lb.search(query, kb="notes", mode="dense", top_k=10)
        assert response.identities == {kb.id: small_key}
        assert assert_dense_scores_made_by(response, query, {"notes": SMALL}) == 10
        assert response.hits and not response.warnings

    server.hold_after = None
    server.texts = 0
    finished = subprocess.run(
        lorebase_cli(data, "kb", "update", "notes", "--embedder", "remote", "--reembed"),
        env=environ,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert finished.returncode == 0, finished.stderr
    assert "now answers with remote" in finished.stdout
    with open_at(data, server) as lb:
        kb = lb.kb("notes")
        assert (kb.embedder, kb.embedder_next) == ("remote", None)
        assert kb.identity_key != small_key and kb.identity_key is not None
        assert kb.identity_key.startswith(f"http:{MODEL}@")
        # What the killed run made was kept: the resumed one embedded only the rest.
        distinct = len({c for d in lb.documents("notes") for c in _hashes(lb, d.id)})
        assert server.texts < distinct
        response = lb.search(query, kb="notes", mode="dense", top_k=10)
        assert response.identities == {kb.id: kb.identity_key}
        assert assert_dense_scores_made_by(response, query, {"notes": REMOTE}) == 10
        assert SQLITE.rows(data, DISTINCT_IDENTITIES) == [(kb.identity_key,)]


def _sqlite_store(lb: Lorebase) -> SqliteStore:
    """The SQLite store of ``lb`` (read directly by these tests)."""
    assert isinstance(lb.store, SqliteStore)
    return lb.store


def _hashes(lb: Lorebase, document_id: str) -> set[str]:
    with _sqlite_store(lb).database.read() as conn:
        rows = conn.execute(
            "SELECT content_hash FROM chunks WHERE document_id = ?", (document_id,)
        ).fetchall()
    return {row[0] for row in rows}


def test_over_the_api_a_base_is_made_with_an_embedder_and_reembedded_uploads_and_all(
    tmp_path: Path, server: EmbeddingServer
) -> None:
    """The server's queue does the re-embed: uploaded documents (read back from the encrypted
    store) and a followed folder's alike; unknown names 404, a model that does not answer
    503, nothing changed."""
    with (
        open_at(tmp_path / "data", server) as lb,
        api_client(create_app(lb)) as client,
    ):
        made = client.post("/v1/knowledge-bases", json={"name": "mixed", "embedder": "small"})
        assert made.status_code == 201, made.text
        kb = made.json()
        assert (kb["embedder"], kb["embedder_next"]) == ("small", None)
        unknown = client.post("/v1/knowledge-bases", json={"name": "x", "embedder": "nope"})
        assert unknown.status_code == 404 and "lorebase embedders" in unknown.text
        lb.add_source("mixed", write_files(tmp_path / "boats", BOATS))
        lb.sync("mixed")
        files = [("files", (name, text.encode(), "text/markdown")) for name, text in BIRDS.items()]
        uploaded = client.post(f"/v1/knowledge-bases/{kb['id']}/documents", files=files)
        assert uploaded.status_code == 202, uploaded.text

        def indexed() -> bool:
            return lb.kb("mixed").indexed == len(BIRDS) + len(BOATS)

        wait_until(indexed, 60)
        assert lb.kb("mixed").identity_key == SMALL.identity.key

        refused = client.post(f"/v1/knowledge-bases/{kb['id']}/reembed", json={"embedder": "x"})
        assert refused.status_code == 404
        moved = client.post(f"/v1/knowledge-bases/{kb['id']}/reembed", json={"embedder": "remote"})
        assert moved.status_code == 202, moved.text
        assert moved.json()["embedder_next"] == "remote"

        def switched() -> bool:
            return lb.kb("mixed").embedder == "remote"

        wait_until(switched, 60)
        after = client.get(f"/v1/knowledge-bases/{kb['id']}").json()
        assert (after["embedder"], after["embedder_next"], after["embedder_reachable"]) == (
            "remote",
            None,
            True,
        )
        query = "a heron in shallow water"
        response = lb.search(query, kb="mixed", mode="dense", top_k=6)
        assert assert_dense_scores_made_by(response, query, {"mixed": REMOTE}) == 6
        assert {h.provenance.uploaded for h in response.hits} == {True, False}

        server.stop()
        # Back to the small model (the fake: it answers), then refused the remote one (down).
        down = client.post(f"/v1/knowledge-bases/{kb['id']}/reembed", json={"embedder": "small"})
        assert down.status_code == 202, down.text
        wait_until(lambda: lb.kb("mixed").embedder == "small", 60)
        back = client.post(f"/v1/knowledge-bases/{kb['id']}/reembed", json={"embedder": "remote"})
        assert back.status_code == 503 and "remote" in back.json()["detail"]
        assert lb.kb("mixed").embedder_next is None


def test_a_slow_model_server_is_waited_for_at_most_the_embed_deadline(
    tmp_path: Path, server: EmbeddingServer
) -> None:
    with two_bases(tmp_path, server, SQLITE):
        pass
    settings = settings_for(tmp_path / "data", server, SQLITE, LOREBASE_EMBED_DEADLINE="0.5")
    with open_lorebase(settings=settings) as lb:
        server.hold_after = len(server.requests)  # it accepts, and answers nothing
        started = time.monotonic()
        response = lb.search("heron in the wind", kb=["birds", "boats"], top_k=6)
        waited = time.monotonic() - started
        server.released.set()
        assert waited < 5  # not the configured 5 s timeout and its retries
        slow = [w for w in response.warnings if "remote" in w]
        assert len(slow) == 1 and "boats" in slow[0]
        assert {h.provenance.knowledge_base for h in response.hits} == {"birds", "boats"}
        assert response.identities == {lb.kb("birds").id: SMALL.identity.key}
        reach = lb.embedder_reachability(lb.kb("boats"))
        assert not reach.reachable and "deadline" in (reach.detail or "")


def test_a_search_waiting_on_a_model_server_lets_other_searches_run(
    tmp_path: Path, server: EmbeddingServer
) -> None:
    """Searches take turns in a process (lorebase.search.turns), but one waiting on a model
    server gives its turn up: a search of the local model's base answers meanwhile."""
    with two_bases(tmp_path, server, SQLITE):
        pass
    settings = settings_for(tmp_path / "data", server, SQLITE, LOREBASE_EMBED_DEADLINE="20")
    with open_lorebase(settings=settings) as lb:
        server.hold_after = len(server.requests)  # it accepts, and answers nothing
        waiting: dict[str, object] = {}
        slow = threading.Thread(
            target=lambda: waiting.update(found=lb.search("boats in the wind", kb="boats"))
        )
        slow.start()
        assert server.holding.wait(10)  # the held search waits on it now
        started = time.monotonic()
        local = lb.search("heron in the wind", kb="birds", top_k=3)
        took = time.monotonic() - started
        server.released.set()
        slow.join(30)
        assert took < 10 and local.hits  # not after the held search's 20 s deadline
        assert not slow.is_alive() and "found" in waiting


def test_a_base_whose_embedder_left_the_configuration_answers_by_keyword_and_others_go_on(
    tmp_path: Path, server: EmbeddingServer
) -> None:
    with two_bases(tmp_path, server, SQLITE):
        pass
    (tmp_path / "birds" / "wrens.md").write_text("# Wrens\n\nA wren sings loud for its size.\n")
    (tmp_path / "boats" / "oars.md").write_text("# Oars\n\nOars row a boat without wind.\n")
    settings = settings_for(tmp_path / "data", server, SQLITE)
    left = Settings(
        data_dir=settings.data_dir,
        embed=settings.embed,
        embedders=tuple(c for c in settings.embedders if c.name != "remote"),
        default_embedder=settings.default_embedder,
        serve=settings.serve,
    )
    with open_lorebase(settings=left) as lb:
        response = lb.search("boats rowed without wind", kb=["birds", "boats"], top_k=6)
        gone = [w for w in response.warnings if "'remote'" in w]
        assert len(gone) == 1 and "not configured" in gone[0] and "boats" in gone[0]
        assert any(h.provenance.knowledge_base == "boats" for h in response.hits)
        reports = lb.sync()  # every base: the one whose model is gone says so, the rest go on
        assert "no embedder named 'remote'" in (reports["boats"].stopped or "")
        assert reports["birds"].stopped is None and reports["birds"].added == 1
        assert lb.kb("boats").state.value == "waiting"
        assert not lb.embedder_reachability(lb.kb("boats")).reachable


def test_a_running_server_takes_over_a_reembed_another_process_asked_for(
    tmp_path: Path, server: EmbeddingServer
) -> None:
    """`kb update --reembed` while `serve` holds the lock only records the move: the server's
    queue finds the moving base at its next sweep and re-embeds it, uploads and all."""
    with two_bases(tmp_path, server, SQLITE):
        pass
    settings = settings_for(tmp_path / "data", server, SQLITE)
    quick = Settings(
        data_dir=settings.data_dir,
        embed=settings.embed,
        embedders=settings.embedders,
        default_embedder=settings.default_embedder,
        serve=ServeSettings(auth=False, watch=False, workers=1, rescan_seconds=0.2),
    )
    with open_lorebase(settings=quick) as lb, api_client(create_app(lb)):  # serving from here
        lb.store.set_kb_embedder_target(lb.kb("birds").id, "remote")  # as the CLI records it
        wait_until(lambda: lb.kb("birds").embedder == "remote", 60)
        assert lb.kb("birds").identity_key == lb.kb("boats").identity_key


def test_a_model_whose_configuration_changed_is_re_embedded_under_the_same_name(
    tmp_path: Path, server: EmbeddingServer
) -> None:
    """Truncating `remote` to 32 dimensions makes other vectors: its bases answer by keyword
    (and say why) until `--reembed` to the same name has made the new ones."""
    with two_bases(tmp_path, server, SQLITE):
        pass
    settings = settings_for(tmp_path / "data", server, SQLITE)
    shorter = tuple(
        dataclasses.replace(c, truncate=32) if c.name == "remote" else c for c in settings.embedders
    )
    with open_lorebase(settings=dataclasses.replace(settings, embedders=shorter)) as lb:
        query = "a dinghy in light wind"
        response = lb.search(query, kb=["birds", "boats"], top_k=4)
        changed = [w for w in response.warnings if w.startswith("embedding_identity_mismatch")]
        assert len(changed) == 1 and "boats" in changed[0] and "--reembed" in changed[0]
        lb.reembed_kb("boats", "remote")
        response = lb.search(query, kb=["birds", "boats"], top_k=4)
        changed = [w for w in response.warnings if w.startswith("embedding_identity_mismatch")]
        assert len(changed) == 1 and "until their re-embed is done" in changed[0]
        assert not [n for n in response.notes if n.startswith("reembedding: boats")]
        lb.sync("boats")
        boats = lb.kb("boats")
        assert (boats.embedder, boats.embedder_next) == ("remote", None)
        assert boats.identity_key is not None and boats.identity_key.endswith("/truncate:32/32")
        response = lb.search(query, kb=["birds", "boats"], top_k=4)
        assert response.warnings == [] and len(set(response.identities.values())) == 2


def test_an_embedder_whose_key_is_not_set_here_leaves_the_rest_working(
    tmp_path: Path, server: EmbeddingServer
) -> None:
    with two_bases(tmp_path, server, SQLITE):
        pass
    settings = settings_for(tmp_path / "data", server, SQLITE)
    keyless = tuple(
        dataclasses.replace(c, missing_key="REMOTE_KEY") if c.name == "remote" else c
        for c in settings.embedders
    )
    with open_lorebase(settings=dataclasses.replace(settings, embedders=keyless)) as lb:
        response = lb.search("heron", kb=["birds", "boats"], top_k=4)
        down = [w for w in response.warnings if "remote" in w]
        assert len(down) == 1 and "boats" in down[0]
        assert response.identities == {lb.kb("birds").id: SMALL.identity.key}
        reach = lb.embedder_reachability(lb.kb("boats"))
        assert not reach.reachable and "REMOTE_KEY" in (reach.detail or "")
        report = lb.sync("boats")["boats"]
        assert "REMOTE_KEY" in (report.stopped or "")


def test_a_pass_that_read_the_base_before_a_switch_leaves_no_old_vectors_in_it(
    tmp_path: Path, server: EmbeddingServer
) -> None:
    """Another process switches the base to `remote` while this pass runs with `small`: the
    store refuses the old model's vectors (a document whose vectors were all known, written
    whole, and one awaiting its vectors alike); they wait, searchable by keyword, and the next
    pass indexes them with the base's model as it is then."""
    with two_bases(tmp_path, server, SQLITE) as lb:
        folder = write_files(
            tmp_path / "fresh",
            {"a.md": "# Kites\n\nRed kites circle over fields.\n", "herons.md": BIRDS["herons.md"]},
        )
        lb.create_kb("fresh")  # made with small, like birds: herons.md's vectors are known
        fresh = lb.kb("fresh")
        remote = lb.embedders.get("remote")
        assert remote is not None
        switched: list[bool] = []

        def switch_once(_: object) -> None:
            if not switched:  # after the first file: the base moves on under the pass
                switched.append(lb.store.switch_kb_embedder(fresh.id, remote.identity, "remote"))

        report = lb.add([folder], kb="fresh", on_progress=switch_once)
        assert switched == [True]
        assert report.stopped is not None and "switched to another embedder" in report.stopped
        documents = lb.documents("fresh")
        assert {d.identity_key for d in documents} == {None}  # no small vectors in it
        assert lb.search("kites", kb="fresh", mode="keyword").hits  # found by keyword
        lb.sync("fresh")
        documents = lb.documents("fresh")
        assert {(d.state.value, d.identity_key) for d in documents} == {
            ("indexed", lb.kb("fresh").identity_key)
        }
        assert lb.kb("fresh").identity_key == remote.identity.key


def test_an_upload_whose_vectors_were_refused_goes_back_to_pending_for_the_sweep(
    tmp_path: Path, server: EmbeddingServer
) -> None:
    """The base switches to `remote` while an upload is embedded with `small`: the upload is
    not left half way (`embedding`) but `pending`, so the queue's sweep indexes it again."""
    with two_bases(tmp_path, server, SQLITE) as lb:
        inbox = lb.create_kb("inbox")  # made with small, nothing indexed yet
        remote, small = lb.embedders.get("remote"), lb.embedders.get("small")
        assert remote is not None and isinstance(small, FakeEmbedder)

        def race(texts: object, kind: object) -> None:  # another process, mid-embedding
            small.hook = None
            assert lb.store.switch_kb_embedder(inbox.id, remote.identity, "remote")

        document, _ = lb.upload(inbox, "wrens.md", [b"# Wrens\n\nA wren sings loud.\n"])
        small.hook = race
        lb._run_job(inbox.id, document.id)  # the queue's job, run here
        after = lb.store.find_document(document.id)
        assert after is not None and (after.state.value, after.identity_key) == ("pending", None)
        lb._run_job(inbox.id, document.id)
        after = lb.store.find_document(document.id)
        assert after is not None and after.state.value == "indexed"
        assert after.identity_key == remote.identity.key
