"""Ranking as users get it (issue 26), through the real pipeline on real SQLite files with the
fake embedder: one hit per document with its other passages, complete scores, the question's
language against the embedder's, the keyword share of the floor, and the edges (empty, stop
words only, long, an unknown script, one document, an embedder that is down)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from lorebase.app import Lorebase, open_lorebase
from lorebase.embed.fake import FakeEmbedder
from lorebase.errors import InvalidInput
from lorebase.search.bounds import MAX_QUERY_CHARS, Mode
from lorebase.settings import Settings

# A long document whose sections all speak of glaciers, and short ones that mention them once.
GLACIERS = "# Glaciers\n\n" + "\n\n".join(
    f"## Part {n}\n\nGlacier ice flows downhill; glacier melt feeds rivers in season {n}. "
    + "Moraines mark where the glacier stood. " * 12
    for n in range(1, 7)
)
SHORT = {
    f"note{n}.md": f"# Note {n}\n\nA short note about a glacier trip in year {2000 + n}.\n"
    for n in range(1, 5)
}
GERMAN = (
    "# Gletscher\n\nDie Gletscher der Alpen schmelzen jedes Jahr schneller, weil die Sommer "
    "wärmer werden und der Schnee im Winter fehlt.\n"
)


def build(tmp_path: Path, files: dict[str, str], embedder: FakeEmbedder | None = None) -> Lorebase:
    folder = tmp_path / "docs"
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    lb = open_lorebase(
        settings=Settings(data_dir=tmp_path / "data"), embedder=embedder or FakeEmbedder()
    )
    lb.add([folder], kb="docs")
    return lb


@pytest.fixture
def lb(tmp_path: Path) -> Iterator[Lorebase]:
    with build(tmp_path, {"glaciers.md": GLACIERS, **SHORT}) as instance:
        yield instance


def test_a_search_gives_each_document_once_with_its_other_passages(lb: Lorebase) -> None:
    response = lb.search("glacier melt rivers", kb="docs", top_k=10)
    documents = [hit.provenance.document_id for hit in response.hits]
    assert len(documents) == len(set(documents)) == 5  # the long document once, four notes
    long = next(hit for hit in response.hits if hit.provenance.path.endswith("glaciers.md"))
    assert 1 <= len(long.passages) <= 5
    for passage in long.passages:
        assert passage.provenance.document_id == long.provenance.document_id
        assert passage.chunk_id != long.chunk_id and passage.snippet
        assert not passage.passages
    # The best passage stands for the document: the others are no better fused.
    fused = [p.scores["fused"].score for p in (long, *long.passages)]
    assert fused == sorted(fused, reverse=True)


def test_passages_mode_gives_every_passage_and_counts_passages(lb: Lorebase) -> None:
    raw = lb.search("glacier melt rivers", kb="docs", top_k=10, collapse=False)
    paths = [hit.provenance.path for hit in raw.hits]
    assert len(raw.hits) == 10 and len(set(paths)) < 10  # the long document repeats
    assert all(not hit.passages for hit in raw.hits)


def test_top_k_counts_documents(lb: Lorebase) -> None:
    response = lb.search("glacier", kb="docs", top_k=2)
    assert len(response.hits) == 2
    assert len({hit.provenance.document_id for hit in response.hits}) == 2


def test_every_keyword_candidate_has_a_cosine_read_for_fusion(lb: Lorebase) -> None:
    """A passage only the keyword arm returned still carries its cosine (rank None)."""
    response = lb.search("moraines glacier season", kb="docs", top_k=10, collapse=False)
    explanation = lb.search(
        "moraines glacier season", kb="docs", top_k=10, collapse=False, explain=True
    ).explanation
    assert explanation is not None
    dense = {c.chunk_id for c in explanation.dense}
    for hit in response.hits:
        assert "dense" in hit.scores and "keyword" in hit.scores
        assert (hit.scores["dense"].rank is None) == (hit.chunk_id not in dense)


def test_the_explanation_holds_both_arms_and_the_fused_order(lb: Lorebase) -> None:
    response = lb.search("glacier trip", kb="docs", top_k=3, explain=True)
    explanation = response.explanation
    assert explanation is not None
    assert explanation.keyword and explanation.dense and explanation.fused
    kept = {c.chunk_id for c in explanation.supported}
    assert kept <= {c.chunk_id for c in explanation.fused}
    assert {hit.chunk_id for hit in response.hits} <= kept
    assert lb.search("glacier trip", kb="docs").explanation is None  # only when asked


def test_a_question_the_embedder_cannot_read_weighs_its_cosines_little(tmp_path: Path) -> None:
    english = FakeEmbedder(languages=frozenset({"en"}))
    with build(tmp_path, {"gletscher.md": GERMAN, **SHORT}, english) as lb:
        question = "Warum schmelzen die Gletscher der Alpen jedes Jahr schneller?"
        response = lb.search(question, kb="docs")
        assert any(note.startswith("language_unread: ") for note in response.notes)
        assert "de" in next(n for n in response.notes if n.startswith("language_unread"))
        assert response.hits[0].provenance.path.endswith("gletscher.md")
        assert question not in " ".join(response.notes)  # a code, never the text
        english_question = lb.search("a short note about a glacier trip", kb="docs")
        assert not any(n.startswith("language_unread") for n in english_question.notes)


def test_an_embedder_reading_every_language_is_never_told_apart(tmp_path: Path) -> None:
    with build(tmp_path, {"gletscher.md": GERMAN}) as lb:
        response = lb.search("Warum schmelzen die Gletscher der Alpen?", kb="docs")
        assert not any(n.startswith("language_unread") for n in response.notes)


def test_a_weak_keyword_match_needs_a_cosine_to_answer(tmp_path: Path) -> None:
    """Off-topic: a long question sharing one common word with the base. The keyword arm
    finds the word; it holds little of the question's weight, and the fake embedder's cosine
    is low: nothing relevant. Keyword mode, which has no cosine to judge by, answers."""
    files = {f"n{n}.md": f"# Report {n}\n\nThe annual report of team {n}.\n" for n in range(8)}
    with build(tmp_path, files) as lb:
        question = "which sourdough starter gives bread the most open crumb in a cold kitchen team"
        assert lb.search(question, kb="docs").no_answer
        assert not lb.search(question, kb="docs", mode=Mode.KEYWORD).no_answer
        assert not lb.search("annual report of team 3", kb="docs").no_answer


# -- edges ---------------------------------------------------------------------------------------
def test_an_empty_query_is_refused_with_what_to_do(lb: Lorebase) -> None:
    with pytest.raises(InvalidInput, match="non-empty"):
        lb.search("   ", kb="docs")


def test_a_query_of_stop_words_only_answers_or_says_nothing(lb: Lorebase) -> None:
    response = lb.search("the of and", kb="docs")
    assert response.no_answer or response.hits


def test_a_query_of_the_longest_size_is_searched(lb: Lorebase) -> None:
    long = ("glacier melt " * 200)[:MAX_QUERY_CHARS]
    response = lb.search(long, kb="docs")
    assert response.hits and len(response.hits) <= 10
    with pytest.raises(InvalidInput, match=str(MAX_QUERY_CHARS)):
        lb.search(long + "x" * 10, kb="docs")


def test_a_query_in_a_script_no_analyzer_knows_gives_an_answer(lb: Lorebase) -> None:
    for query in ("ᚠᚢᚦᚨᚱᚲ ᚷᚹ", "ꦲꦏ꧀ꦱꦫ ꦗꦮ", "𓀀𓀁𓀂"):
        response = lb.search(query, kb="docs")
        assert response.no_answer or response.hits  # never an error


def test_a_base_of_one_document(tmp_path: Path) -> None:
    with build(tmp_path, {"only.md": "# Only\n\nThe only glacier note there is.\n"}) as lb:
        response = lb.search("glacier note", kb="docs")
        assert [hit.provenance.path for hit in response.hits] == ["docs/only.md"]
        assert lb.search("tax return deadline for freelancers", kb="docs").no_answer


def test_a_base_whose_embedder_is_down_answers_by_keyword_with_a_warning(tmp_path: Path) -> None:
    embedder = FakeEmbedder()
    with build(tmp_path, {"glaciers.md": GLACIERS, **SHORT}, embedder) as lb:
        embedder.unavailable = True
        response = lb.search("glacier melt", kb="docs")
        assert response.mode is Mode.KEYWORD and response.hits
        assert any(w.startswith("embedder_unavailable") for w in response.warnings)
        documents = [hit.provenance.document_id for hit in response.hits]
        assert len(documents) == len(set(documents))
