"""Export and import of one knowledge base, through the service, with real files, real SQLite
data directories and the session's PostgreSQL: a round trip keeps documents, chunks, metadata,
vectors and search results (SQLite → PostgreSQL → SQLite), originals are sealed under the
export's passphrase and again under the target's data key; a damaged file, a wrong key, vectors
of another embedder and a name taken are refused with nothing written."""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from collections.abc import Iterator
from email.message import EmailMessage
from pathlib import Path

import pytest

from integration.store_backends import StoreBackend
from lorebase.app import Lorebase, open_lorebase
from lorebase.embed.fake import FakeEmbedder
from lorebase.errors import Conflict, InvalidInput
from lorebase.settings import ServeSettings, Settings
from lorebase.vault.keys import DataKey

PASSPHRASE = "correct horse battery staple"
UPLOADED = b"# Lantern\n\nThe paper lantern festival floats three thousand lanterns downriver.\n"
UPLOAD_NAME = "lantern-festival.md"
QUERIES = (
    "glacier meltwater",
    "copper smelting furnace",
    "lantern festival",
    "orchard pruning in winter",
    "tidal energy",
    "budget for the kayak club",
)
TOPICS = (
    ("glacier", "Glacier meltwater feeds the valley rivers each spring; the ice retreats."),
    ("copper", "Copper smelting needs a furnace hotter than a thousand degrees."),
    ("orchard", "Orchard pruning in winter shapes the apple trees for summer fruit."),
    ("tides", "Tidal energy turbines sit where the estuary narrows and currents run fast."),
    ("bridges", "Suspension bridges hang their deck from cables over the main towers."),
    ("bees", "Honey bees dance to tell the hive where the clover fields are."),
    ("ferns", "Ferns spread by spores from the underside of their fronds."),
    ("rail", "Narrow gauge railways climb the mountain with tight curves."),
)


def write_corpus(root: Path) -> Path:
    """Markdown files of several topics (some sharing words), and a mail with an attachment
    (a document with metadata, and a part held by it)."""
    root.mkdir(parents=True, exist_ok=True)
    for index, (topic, sentence) in enumerate(TOPICS):
        for copy in range(3):
            other = TOPICS[(index + copy + 1) % len(TOPICS)][1]
            text = f"# {topic.title()} {copy}\n\n{sentence}\n\n## More\n\n{other}\n\n" + (
                f"Notes {copy} on {topic}: " + " ".join([sentence] * (copy + 1))
            )
            (root / topic / f"{topic}-{copy}.md").parent.mkdir(exist_ok=True)
            (root / topic / f"{topic}-{copy}.md").write_text(text)
    message = EmailMessage()
    message["From"] = "Ann Example <ann@example.org>"
    message["To"] = "club@example.org"
    message["Subject"] = "Kayak club budget"
    message.set_content("The budget for the kayak club grew this year.\n")
    message.add_attachment(
        b"# Budget\n\nThe kayak club budget buys two new boats.\n",
        maintype="text",
        subtype="markdown",
        filename="budget.md",
    )
    (root / "mail").mkdir(exist_ok=True)
    (root / "mail" / "budget.eml").write_bytes(message.as_bytes())
    return root


def open_sqlite(data_dir: Path, embedder: FakeEmbedder | None = None) -> Lorebase:
    serve = ServeSettings(workers=1, watch=False)
    return open_lorebase(
        settings=Settings(data_dir=data_dir, serve=serve),
        embedder=embedder if embedder is not None else FakeEmbedder(),
        data_key=DataKey.generate(),
    )


def open_postgres(data_dir: Path, url: str) -> Lorebase:
    key = DataKey.generate()
    serve = ServeSettings(workers=1, watch=False)
    settings = Settings(data_dir=data_dir, store_url=url, data_key=key.to_base64(), serve=serve)
    return open_lorebase(settings=settings, embedder=FakeEmbedder(), data_key=key)


def open_target(
    data_dir: Path, backend: StoreBackend, embedder: FakeEmbedder | None = None
) -> Lorebase:
    """The store an import goes into: a SQLite data directory, or a fresh PostgreSQL
    database (with its data key)."""
    serve = ServeSettings(workers=1, watch=False)
    return open_lorebase(
        settings=backend.settings(data_dir, serve=serve),
        embedder=embedder if embedder is not None else FakeEmbedder(),
        data_key=backend.data_key(),
    )


def upload(lb: Lorebase, kb: str, name: str = UPLOAD_NAME, data: bytes = UPLOADED) -> str:
    """An uploaded file, indexed by the queue's worker; its document id."""
    record, _ = lb.upload(lb.kb(kb), name, [data])
    lb.start_serving()
    try:
        assert lb.queue.join(30)
    finally:
        lb.stop_serving()
    return record.id


def make_source(tmp_path: Path, lb: Lorebase, kb: str = "notes") -> str:
    lb.add([write_corpus(tmp_path / "corpus")], kb=kb)
    return upload(lb, kb)


def top5(lb: Lorebase, kb: str) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """Each query's top five (document id, path), by keyword and hybrid."""
    return {
        (query, mode): [
            (hit.provenance.document_id, hit.provenance.path)
            for hit in lb.search(query, kb=kb, top_k=5, mode=mode).hits
        ]
        for query in QUERIES
        for mode in ("keyword", "hybrid")
    }


def paths_of(hits: list[tuple[str, str]]) -> list[str]:
    """The hits' paths (an upload's is its own id: the same upload's differs by base)."""
    return [path if not path.startswith("uploads/") else "uploads/*" for _, path in hits]


def contents(lb: Lorebase, kb: str) -> dict[str, tuple[object, ...]]:
    """What a base holds, by document id: its record's fields that travel, its text, its
    chunks' texts and positions."""
    held: dict[str, tuple[object, ...]] = {}
    for document in lb.documents(kb):
        chunks = lb.chunks_of(kb, document.id, 0, 1000)
        held[document.id] = (
            document.path,
            document.kind,
            document.size,
            document.content_hash,
            document.state,
            document.title,
            document.container,
            dict(document.metadata),
            document.versions,
            document.chunk_count,
            lb.display_name(document),
            lb.text(kb, document.id),
            [
                (
                    c.ordinal,
                    c.text,
                    c.tokens,
                    c.provenance.trail,
                    c.provenance.start,
                    c.provenance.end,
                    c.provenance.content_kind,
                    c.provenance.page,
                    c.provenance.line,
                    c.provenance.uploaded,
                )
                for c in chunks
            ],
        )
    return held


def totals(lb: Lorebase) -> tuple[int, int, int, frozenset[str]]:
    """Bases, documents, chunks, and stored originals of the whole store."""
    bases = lb.knowledge_bases()
    return (
        len(bases),
        sum(kb.documents for kb in bases),
        sum(kb.chunks for kb in bases),
        frozenset(lb.blobs.ids()),
    )


@pytest.fixture
def exported(tmp_path: Path) -> Iterator[tuple[Path, dict[str, tuple[object, ...]], str]]:
    """An export (with originals) of a SQLite base; what the base held; the upload's id."""
    with open_sqlite(tmp_path / "source") as lb:
        upload_id = make_source(tmp_path, lb)
        held = contents(lb, "notes")
        target = tmp_path / "notes.lorebase.zip"
        lb.export_kb("notes", target, key=PASSPHRASE)
    yield target, held, upload_id


# -- the round trip ------------------------------------------------------------------------
@pytest.mark.postgres
def test_sqlite_to_postgres_and_back_keeps_everything_and_the_results(
    tmp_path: Path, postgres_url: str
) -> None:
    with open_sqlite(tmp_path / "one") as lb:
        upload_id = make_source(tmp_path, lb)
        held, results = contents(lb, "notes"), top5(lb, "notes")
        kb = lb.kb("notes")
        first = lb.export_kb("notes", tmp_path / "one.zip", key=PASSPHRASE)
    assert first.documents == kb.documents and first.chunks == kb.chunks
    assert first.vectors == kb.embedded_chunks > 0 and first.originals == 1
    assert any(hits for hits in results.values())

    with open_postgres(tmp_path / "two", postgres_url) as lb:
        summary = lb.import_kb(tmp_path / "one.zip", key=PASSPHRASE)
        assert summary.documents == first.documents and summary.vectors == first.vectors
        assert summary.renumbered == 0 and not summary.reembed
        assert contents(lb, "notes") == held
        got = top5(lb, "notes")
        # Hybrid search gives the same ids in the same order on PostgreSQL; its keyword arm
        # is PostgreSQL's own ranking (not Tantivy's BM25), so the keyword top five are what
        # PostgreSQL gives for the same files indexed there itself.
        assert {k: v for k, v in got.items() if k[1] == "hybrid"} == {
            k: v for k, v in results.items() if k[1] == "hybrid"
        }
        lb.add([tmp_path / "corpus"], kb="native")
        upload(lb, "native")
        native = top5(lb, "native")
        assert {k: paths_of(v) for k, v in got.items() if k[1] == "keyword"} == {
            k: paths_of(v) for k, v in native.items() if k[1] == "keyword"
        }
        assert {k: sorted(v) for k, v in got.items()} == {k: sorted(v) for k, v in results.items()}
        imported = lb.kb("notes")
        assert imported.embedded_chunks == kb.embedded_chunks
        assert imported.identity_key == kb.identity_key
        # The original decrypts under this store's data key, its name too.
        assert lb.blobs.get(upload_id) == UPLOADED
        assert lb.upload_name(upload_id) == UPLOAD_NAME
        lb.export_kb("notes", tmp_path / "two.zip", key=PASSPHRASE)

    with open_sqlite(tmp_path / "three") as lb:
        lb.import_kb(tmp_path / "two.zip", key=PASSPHRASE)
        assert contents(lb, "notes") == held
        assert top5(lb, "notes") == results
        assert lb.blobs.get(upload_id) == UPLOADED


def test_the_file_holds_a_manifest_checksums_and_what_the_brief_lists(
    exported: tuple[Path, dict[str, tuple[object, ...]], str],
) -> None:
    target, held, _ = exported
    with zipfile.ZipFile(target) as archive:
        manifest = json.loads(archive.read("manifest.json"))
        names = set(archive.namelist())
        lines = [json.loads(line) for line in archive.read("documents.jsonl").splitlines()]
    assert manifest["format"] == "lorebase-export" and manifest["format_version"] == 1
    assert manifest["base"]["name"] == "notes"
    assert manifest["base"]["chunk_settings"]["chunk_size"] > 0
    assert manifest["identity"]["dim"] == FakeEmbedder().identity.dim
    assert set(manifest["members"]) == names - {"manifest.json"}
    assert {"documents.jsonl", "vectors.f32", "originals/000001"} <= names
    assert manifest["counts"]["documents"] == len(held) == len(lines)
    assert manifest["sealing"]["kdf"]["name"] == "scrypt"
    # The original and the upload's name are sealed under the passphrase.
    with zipfile.ZipFile(target) as archive:
        assert UPLOADED not in archive.read("originals/000001")
    assert UPLOAD_NAME not in json.dumps(lines)
    mail = next(line for line in lines if line["record"]["path"].endswith("budget.eml"))
    assert mail["record"]["metadata"]["from"] == "Ann Example <ann@example.org>"
    part = next(line for line in lines if line["record"]["container"])
    assert part["chunks"] and {"section", "start", "end", "trail"} <= set(part["chunks"][0])


def test_without_originals_uploads_stay_searchable_without_their_original(
    tmp_path: Path,
) -> None:
    with open_sqlite(tmp_path / "source") as lb:
        upload_id = make_source(tmp_path, lb)
        with pytest.raises(InvalidInput, match="--no-originals"):
            lb.export_kb("notes", tmp_path / "refused.zip")
        assert not (tmp_path / "refused.zip").exists()
        assert not list(tmp_path.glob(".refused.zip.*"))  # no partial file is left
        summary = lb.export_kb("notes", tmp_path / "plain.zip", originals=False)
    assert summary.uploads == 1 and summary.originals == 0
    with zipfile.ZipFile(tmp_path / "plain.zip") as archive:
        assert not [n for n in archive.namelist() if n.startswith("originals/")]
    with open_sqlite(tmp_path / "target") as lb:
        imported = lb.import_kb(tmp_path / "plain.zip")  # no key needed
        assert imported.originals == 0
        _, document = lb.document(upload_id)
        assert document.uploaded and lb.display_name(document) == UPLOAD_NAME
        assert not lb.blobs.exists(upload_id)
        hits = lb.search("paper lantern festival", kb="notes", top_k=3, mode="keyword").hits
        assert hits[0].provenance.document_id == upload_id


# -- damaged files, wrong keys: refused, nothing written ---------------------------------------
def rewritten(source: Path, target: Path, *, drop: str | None = None) -> Path:
    """A copy of the zip at ``source`` without member ``drop``."""
    with zipfile.ZipFile(source) as old, zipfile.ZipFile(target, "w") as new:
        for info in old.infolist():
            if info.filename != drop:
                new.writestr(info, old.read(info.filename))
    return target


def flipped(source: Path, target: Path, member: str) -> Path:
    """A copy with one byte of ``member``'s stored data changed."""
    data = bytearray(source.read_bytes())
    with zipfile.ZipFile(source) as archive:
        info = archive.getinfo(member)
    name_length = int.from_bytes(data[info.header_offset + 26 : info.header_offset + 28], "little")
    extra_length = int.from_bytes(data[info.header_offset + 28 : info.header_offset + 30], "little")
    start = info.header_offset + 30 + name_length + extra_length
    data[start + info.compress_size // 2] ^= 0x01
    target.write_bytes(bytes(data))
    return target


@pytest.mark.parametrize(
    "damage",
    ["cut in half", "documents byte", "vectors byte", "original byte", "no manifest", "not zip"],
)
def test_a_damaged_file_is_refused_and_nothing_is_imported(
    tmp_path: Path,
    backend: StoreBackend,
    exported: tuple[Path, dict[str, tuple[object, ...]], str],
    damage: str,
) -> None:
    source, _, _ = exported
    bad = tmp_path / "bad.zip"
    if damage == "cut in half":
        bad.write_bytes(source.read_bytes()[: source.stat().st_size // 2])
    elif damage == "documents byte":
        flipped(source, bad, "documents.jsonl")
    elif damage == "vectors byte":
        flipped(source, bad, "vectors.f32")
    elif damage == "original byte":
        flipped(source, bad, "originals/000001")
    elif damage == "no manifest":
        rewritten(source, bad, drop="manifest.json")
    else:
        bad.write_bytes(b"PK\x03\x04 this is no export at all")
    with open_target(tmp_path / "target", backend) as lb:
        lb.create_kb("other")
        before = totals(lb)
        with pytest.raises(InvalidInput) as caught:
            lb.import_kb(bad, key=PASSPHRASE)
        assert "nothing was imported" in str(caught.value)
        assert totals(lb) == before


def test_a_wrong_or_missing_key_is_refused_before_anything_is_written(
    tmp_path: Path, backend: StoreBackend, exported: tuple[Path, dict[str, tuple[object, ...]], str]
) -> None:
    source, _, _ = exported
    with open_target(tmp_path / "target", backend) as lb:
        before = totals(lb)
        with pytest.raises(InvalidInput, match="does not open this export"):
            lb.import_kb(source, key="not the passphrase")
        with pytest.raises(InvalidInput, match="LOREBASE_EXPORT_KEY"):
            lb.import_kb(source)
        assert totals(lb) == before


def test_a_newer_format_is_refused_with_what_to_do(
    tmp_path: Path, exported: tuple[Path, dict[str, tuple[object, ...]], str]
) -> None:
    source, _, _ = exported
    newer = tmp_path / "newer.zip"
    with zipfile.ZipFile(source) as old, zipfile.ZipFile(newer, "w") as new:
        for info in old.infolist():
            data = old.read(info.filename)
            if info.filename == "manifest.json":
                manifest = json.loads(data) | {"format_version": 99}
                data = json.dumps(manifest).encode()
            new.writestr(info, data)
    with open_sqlite(tmp_path / "target") as lb, pytest.raises(InvalidInput, match="upgrade"):
        lb.import_kb(newer, key=PASSPHRASE)


def test_hostile_member_names_are_refused_and_never_extracted(
    tmp_path: Path, exported: tuple[Path, dict[str, tuple[object, ...]], str]
) -> None:
    source, _, _ = exported
    outside = tmp_path / "evil.txt"
    escape = "../" * 12 + str(outside).lstrip("/")
    cases = {
        "listed": ("../evil.txt", True),
        "absolute": (str(outside), False),
        "escaping": (escape, False),
        "in originals": ("originals/../../evil.txt", True),
    }
    with open_sqlite(tmp_path / "target") as lb:
        before = totals(lb)
        for case, (name, listed) in cases.items():
            crafted = tmp_path / f"{case.replace(' ', '-')}.zip"
            with zipfile.ZipFile(source) as old, zipfile.ZipFile(crafted, "w") as new:
                manifest = json.loads(old.read("manifest.json"))
                if listed:
                    manifest["members"][name] = {"sha256": "0" * 64, "size": 4}
                for info in old.infolist():
                    if info.filename != "manifest.json":
                        new.writestr(info, old.read(info.filename))
                new.writestr("manifest.json", json.dumps(manifest))
                new.writestr(name, b"evil")
            with pytest.raises(InvalidInput, match="nothing was imported"):
                lb.import_kb(crafted, key=PASSPHRASE)
        assert totals(lb) == before
    assert not outside.exists()
    assert not list(tmp_path.rglob("evil.txt"))


# -- identity, names, ids ------------------------------------------------------------------
def test_vectors_of_another_embedder_are_refused_and_reembed_embeds_on_the_next_sync(
    tmp_path: Path, backend: StoreBackend, exported: tuple[Path, dict[str, tuple[object, ...]], str]
) -> None:
    source, held, upload_id = exported
    other = FakeEmbedder(48, model="fake-other")
    with open_target(tmp_path / "target", backend, other) as lb:
        before = totals(lb)
        with pytest.raises(InvalidInput, match="--reembed") as caught:
            lb.import_kb(source, key=PASSPHRASE)
        assert "fake-other" in str(caught.value)
        assert totals(lb) == before
        summary = lb.import_kb(source, key=PASSPHRASE, reembed=True)
        assert summary.reembed and summary.vectors == 0
        kb = lb.kb("notes")
        assert kb.documents == len(held) and kb.embedded_chunks == 0
        hits = lb.search("glacier meltwater", kb="notes", top_k=3, mode="keyword").hits
        assert hits  # found by keyword at once
        assert lb.stale_documents([kb.id]).get(kb.id, 0) > 0  # marked for the next pass
        lb.sync("notes")
        after = lb.kb("notes")
        assert after.embedded_chunks == after.chunks > 0
        assert after.identity_key == other.identity.key
        assert lb.stale_documents([kb.id]).get(kb.id, 0) == 0
        _, document = lb.document(upload_id)
        assert document.identity_key == other.identity.key  # the upload too, from its original
        dense = lb.search("glacier meltwater", kb="notes", top_k=3, mode="dense").hits
        assert dense


def test_a_taken_name_is_refused_unless_replaced_and_a_second_name_gets_new_ids(
    tmp_path: Path, backend: StoreBackend, exported: tuple[Path, dict[str, tuple[object, ...]], str]
) -> None:
    source, held, upload_id = exported
    with open_target(tmp_path / "target", backend) as lb:
        first = lb.import_kb(source, key=PASSPHRASE)
        assert first.renumbered == 0
        before = totals(lb)
        with pytest.raises(Conflict, match="--replace"):
            lb.import_kb(source, key=PASSPHRASE)
        assert totals(lb) == before
        # The same export under another name: its ids are taken here, so it gets new ones.
        copy = lb.import_kb(source, key=PASSPHRASE, name="copy")
        assert copy.renumbered == len(held) and copy.originals == 1
        copied = contents(lb, "copy")
        by_path = {str(v[0]): v for v in copied.values()}
        assert by_path == {str(v[0]): v for v in held.values()}
        assert not set(copied) & set(held)
        (copied_upload,) = [d.id for d in lb.documents("copy") if d.uploaded]
        assert lb.blobs.get(copied_upload) == UPLOADED
        assert lb.upload_name(copied_upload) == UPLOAD_NAME
        hits = lb.search("copper smelting", kb="copy", top_k=3).hits
        assert hits and all(h.provenance.document_id in copied for h in hits)
        # Replaced: the base of that name goes with its originals, the new one takes its place.
        replaced = lb.import_kb(source, key=PASSPHRASE, replace=True)
        assert replaced.replaced and replaced.kb.id != first.kb.id
        assert replaced.renumbered == len(held)  # the replaced base still held the ids
        assert len(lb.knowledge_bases()) == 2
        assert not lb.blobs.exists(upload_id)
        (new_upload,) = [d.id for d in lb.documents("notes") if d.uploaded]
        assert lb.blobs.get(new_upload) == UPLOADED


def test_an_import_that_fails_in_its_transaction_removes_the_originals_it_wrote(
    tmp_path: Path, backend: StoreBackend, exported: tuple[Path, dict[str, tuple[object, ...]], str]
) -> None:
    """Two documents of one path: the store refuses the whole base, after the originals were
    written (they are removed again)."""
    source, _, _ = exported
    broken = tmp_path / "two-paths.zip"
    with zipfile.ZipFile(source) as old:
        manifest = json.loads(old.read("manifest.json"))
        lines = old.read("documents.jsonl").splitlines()
        first, second = json.loads(lines[0]), json.loads(lines[1])
        second["record"]["path"] = first["record"]["path"]
        lines[1] = json.dumps(second).encode()
        documents = b"\n".join(lines) + b"\n"
        manifest["members"]["documents.jsonl"] = {
            "sha256": hashlib.sha256(documents).hexdigest(),
            "size": len(documents),
        }
        with zipfile.ZipFile(broken, "w") as new:
            for info in old.infolist():
                if info.filename not in ("manifest.json", "documents.jsonl"):
                    new.writestr(info, old.read(info.filename))
            new.writestr("documents.jsonl", documents)
            new.writestr("manifest.json", json.dumps(manifest))
    with open_target(tmp_path / "target", backend) as lb:
        before = totals(lb)
        with pytest.raises(Conflict):
            lb.import_kb(broken, key=PASSPHRASE)
        assert totals(lb) == before


def test_an_export_streams_from_a_file_object_too(
    tmp_path: Path, exported: tuple[Path, dict[str, tuple[object, ...]], str]
) -> None:
    source, held, _ = exported
    with open_sqlite(tmp_path / "target") as lb:
        lb.import_kb(io.BytesIO(source.read_bytes()), key=PASSPHRASE, name="from-memory")
        assert len(lb.documents("from-memory")) == len(held)


def test_tags_people_set_and_ocr_regions_travel_with_the_base(
    tmp_path: Path, backend: StoreBackend
) -> None:
    """What a reading gives (front matter, OCR boxes) and what people added (their tags)
    come back after an import, searchable and shown as before."""
    from lorebase.fields import parse_condition

    with open_sqlite(tmp_path / "source") as lb:
        lb.add([write_corpus(tmp_path / "corpus")], kb="notes")
        kb = lb.kb("notes")
        document = lb.documents("notes")[0]
        lb.tag_document(kb, document, add=["Reviewed", "Q3 audit"])
        boxes = ((0.1, 0.2, 0.9, 0.3),)
        with lb.store._writing() as tx:  # type: ignore[attr-defined]
            tx.execute(
                "INSERT INTO regions (document_id, page, start_offset, end_offset, boxes) "
                "VALUES (?, 1, 0, 10, ?)",
                (document.id, json.dumps([list(b) for b in boxes])),
            )
        target = tmp_path / "notes.zip"
        lb.export_kb("notes", target, originals=False)
    with open_target(tmp_path / "target", backend) as lb:
        lb.import_kb(target)
        kb = lb.kb("notes")
        moved = next(d for d in lb.documents("notes") if d.path == document.path)
        assert lb.fields_of(kb, moved)["tags"][-2:] == ["Q3 audit", "Reviewed"]
        wanted = [parse_condition("tags=reviewed")]
        assert list(lb.store.matching_documents([kb.id], conditions=wanted)) == [moved.id]
        assert lb.store.regions(kb.id, moved.id, 1, 0, 5) == list(boxes)
