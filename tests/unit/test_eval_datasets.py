"""Question sets: BEIR folders, evals.jsonl files, corpus files and path resolution."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lorebase.errors import InvalidInput, NotFound
from lorebase.eval import datasets
from lorebase.eval.datasets import (
    BeirSet,
    Question,
    beir_questions,
    corpus_hash,
    corpus_id_from_path,
    document_file_name,
    document_text,
    load_evals,
    load_qrels,
    materialize,
    resolve_documents,
)
from lorebase.ingest.sources import is_hidden


def write_beir(root: Path, qrels: str, corpus: list[dict[str, str]] | None = None) -> BeirSet:
    (root / "qrels").mkdir(parents=True)
    records = corpus or [
        {"_id": "d1", "title": "Wing flutter", "text": "Flutter of swept wings."},
        {"_id": "d2", "title": "", "text": "Heat transfer in slabs."},
        {"_id": "a/b", "title": "Odd id", "text": "An id with a slash."},
    ]
    (root / "corpus.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n")
    queries = [
        {"_id": "1", "text": "flutter"},
        {"_id": "2", "text": "heat"},
        {"_id": "3", "text": "unjudged"},
    ]
    (root / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in queries))
    (root / "qrels" / "test.tsv").write_text(qrels)
    return BeirSet(root)


def test_qrels_with_header_grades_and_trec_columns(tmp_path: Path) -> None:
    beir = write_beir(tmp_path, "query-id\tcorpus-id\tscore\n1\td1\t2\n1\td2\t0\n2\td2\t1\n")
    assert load_qrels(beir.qrels) == {"1": {"d1": 2, "d2": 0}, "2": {"d2": 1}}
    trec = tmp_path / "trec.txt"
    trec.write_text("1 0 d1 3\n1 0 d2 0\n")
    assert load_qrels(trec) == {"1": {"d1": 3, "d2": 0}}
    trec.write_text("1 d1\n")
    with pytest.raises(InvalidInput):
        load_qrels(trec)


def test_only_queries_with_a_relevant_judgment_are_asked(tmp_path: Path) -> None:
    beir = write_beir(tmp_path, "1\td1\t2\n2\td2\t0\n")
    questions, notes = beir_questions(beir)
    assert [(q.id, q.text, q.relevance) for q in questions] == [("1", "flutter", {"d1": 2})]
    assert notes == ["2 queries without a relevant judgment were left out"]
    with pytest.raises(NotFound):
        beir_questions(BeirSet(tmp_path, split="dev"))


@given(st.text(min_size=1, max_size=40))
def test_any_corpus_id_survives_the_file_name(corpus_id: str) -> None:
    name = document_file_name(corpus_id)
    assert "/" not in name and not is_hidden(name)
    assert corpus_id_from_path(f"corpus/{name}") == corpus_id


def test_a_record_becomes_a_titled_text_file() -> None:
    assert document_text(" Wing \n flutter ", "Body text. ") == (
        "Wing flutter\n============\n\nBody text.\n"
    )
    assert document_text("", "Only text") == "Only text\n"
    assert document_text("Ab", "x").startswith("Ab\n===\n")


def test_materialize_once_per_corpus_hash(tmp_path: Path) -> None:
    beir = write_beir(tmp_path / "mini", "1\td1\t1\n")
    cache = tmp_path / "cache"
    folder = materialize(beir, cache)
    assert folder.name == "mini" and folder.parent.name == f"mini-{corpus_hash(beir)}"
    names = sorted(p.name for p in folder.iterdir())
    assert names == ["a%2Fb.txt", "d1.txt", "d2.txt"]
    assert (folder / "d1.txt").read_text().startswith("Wing flutter\n")
    stamp = (folder / "d1.txt").stat().st_mtime_ns
    assert materialize(beir, cache) == folder
    assert (folder / "d1.txt").stat().st_mtime_ns == stamp  # not written again
    # A changed corpus gets a new folder; the old one goes.
    with beir.corpus.open("a") as handle:
        handle.write(json.dumps({"_id": "d4", "text": "new"}) + "\n")
    changed = materialize(beir, cache)
    assert changed != folder and not folder.exists()
    assert [p.name for p in cache.iterdir()] == [changed.parent.name]


def test_corpus_hash_follows_the_file_layout_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    beir = write_beir(tmp_path, "1\td1\t1\n")
    before = corpus_hash(beir)
    monkeypatch.setattr(datasets, "MATERIALIZE_FORMAT", "next")
    assert corpus_hash(beir) != before


def write_evals(path: Path, *records: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    return path


def test_evals_file(tmp_path: Path) -> None:
    path = write_evals(
        tmp_path / ".lorebase" / "evals.jsonl",
        {"question": "How long is the warranty?", "documents": ["terms.md"], "answerable": True},
        {"question": "Who won the 1954 world cup?", "documents": [], "answerable": False},
        {"id": "graded", "question": "vacation", "documents": {"hr/leave.md": 2, "faq.md": 1}},
    )
    questions = load_evals(path)
    assert questions == [
        Question("q1", "How long is the warranty?", {"terms.md": 1}, True),
        Question("q2", "Who won the 1954 world cup?", {}, False),
        Question("graded", "vacation", {"hr/leave.md": 2, "faq.md": 1}, True),
    ]


@pytest.mark.parametrize(
    "record",
    [
        {"documents": ["a.md"]},
        {"question": "   ", "documents": ["a.md"]},
        {"question": "q", "documents": "a.md"},
        {"question": "q", "documents": [], "answerable": True},
        {"question": "q", "documents": ["a.md"], "answerable": "yes"},
        ["not", "an", "object"],
    ],
)
def test_bad_evals_lines_say_which_line(tmp_path: Path, record: object) -> None:
    path = write_evals(
        tmp_path / "evals.jsonl", {"question": "fine", "documents": ["a.md"]}, record
    )
    with pytest.raises(InvalidInput, match="line 2"):
        load_evals(path)


def test_missing_or_empty_evals(tmp_path: Path) -> None:
    with pytest.raises(NotFound):
        load_evals(tmp_path / "nope.jsonl")
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(InvalidInput):
        load_evals(tmp_path / "empty.jsonl")


def test_relative_paths_resolve_to_stored_documents() -> None:
    stored = {"handbook/hr/leave.md", "handbook/terms.md", "other/terms.md", "notes.md"}
    questions = [
        Question("1", "q", {"hr/leave.md": 1, "./terms.md": 2}),
        Question("2", "q", {"notes.md": 1, "missing.md": 1}),
    ]
    resolved, missing = resolve_documents(questions, stored, prefix="handbook")
    assert resolved[0].relevance == {"handbook/hr/leave.md": 1, "handbook/terms.md": 2}
    assert resolved[1].relevance == {"notes.md": 1, "missing.md": 1}
    assert missing == ["missing.md"]
    # Without the folder's name, a unique suffix still resolves; an ambiguous one does not.
    resolved, missing = resolve_documents(questions[:1], stored, prefix=None)
    assert resolved[0].relevance["handbook/hr/leave.md"] == 1
    assert missing == ["./terms.md"]
