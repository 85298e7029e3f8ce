"""Every real document in ../shared/data/docs yields text or the right reason."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from lorebase.chunk import chunk_document
from lorebase.errors import ExtractionFailed
from lorebase.extract import extract_file
from lorebase.settings import ChunkSettings, ExtractSettings
from lorebase.types import ElementKind, Extracted

pytestmark = pytest.mark.corpus

SETTINGS = ExtractSettings()

# Files that must fail, and why. Every other supported file must yield text.
EXPECTED_FAILURES = {
    "pdf_encrypted/aes-128_pw-baz.pdf": "encrypted",
    "pdf_encrypted/password-example_pw-test.pdf": "encrypted",
    "pdf_encrypted/password_pw-password.pdf": "encrypted",
    "pdf_encrypted/rc4-40_pw-baz.pdf": "encrypted",
    "pdf_broken/empty.pdf": "empty",
    "pdf_broken/invalid.pdf": "corrupt",
    "txt_edge/empty.txt": "empty",
    "txt_edge/all-whitespace.txt": "empty",
    "docx_edge/empty.docx": "empty",
    "docx_edge/having-images-no-text.docx": "empty",
    "docx/tbl-having-tables.docx": "empty",  # its tables hold no text at all
}
# Damaged files where either outcome is honest: a little recovered text, or a reason.
EITHER = {
    "pdf_broken/malformed-from-issue-932.pdf": {"corrupt", "no_text_layer"},
    "pdf_broken/nlp2004slides-mojibake.pdf": {"no_text_layer"},
}


def corpus_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and p.name != "SOURCES.txt")


def outcome(path: Path) -> Extracted | ExtractionFailed:
    try:
        return extract_file(path, SETTINGS)
    except ExtractionFailed as failure:
        return failure


@pytest.fixture(scope="module")
def outcomes(shared_docs: Path) -> dict[str, Extracted | ExtractionFailed]:
    return {p.relative_to(shared_docs).as_posix(): outcome(p) for p in corpus_files(shared_docs)}


def test_every_file_yields_text_or_the_right_reason(
    outcomes: dict[str, Extracted | ExtractionFailed],
) -> None:
    wrong = {}
    for name, result in outcomes.items():
        if isinstance(result, ExtractionFailed):
            allowed = {EXPECTED_FAILURES.get(name)} | EITHER.get(name, set())
            if result.reason.value not in allowed:
                wrong[name] = result.reason.value
        elif name in EXPECTED_FAILURES:
            wrong[name] = "read, but should be " + EXPECTED_FAILURES[name]
        elif not result.text.strip():
            wrong[name] = "no text"
    assert wrong == {}


def test_offsets_index_the_canonical_text(
    outcomes: dict[str, Extracted | ExtractionFailed],
) -> None:
    for name, result in outcomes.items():
        if isinstance(result, Extracted):
            for element in result.elements:
                assert result.text[element.start : element.end] == element.text, name


def test_pdf_pages_stay_within_the_page_count(
    outcomes: dict[str, Extracted | ExtractionFailed],
) -> None:
    pdfs = {n: r for n, r in outcomes.items() if n.endswith(".pdf") and isinstance(r, Extracted)}
    assert len(pdfs) >= 12
    for name, result in pdfs.items():
        assert result.page_count, name
        pages = [e.page for e in result.elements]
        assert all(p is not None and 1 <= p <= result.page_count for p in pages), name
    assert max(e.page or 0 for e in pdfs["pdf/cancer-guide-76p.pdf"].elements) > 70


def test_doj_handbook_headings_form_a_trail(
    outcomes: dict[str, Extracted | ExtractionFailed],
) -> None:
    handbook = outcomes["docx/doj-handbook-872p.docx"]
    assert isinstance(handbook, Extracted)
    headings = [e for e in handbook.elements if e.kind is ElementKind.HEADING]
    assert len(headings) > 100
    assert {e.level for e in headings} >= {1, 2}
    chunks = chunk_document(handbook, ChunkSettings())
    assert any(len(c.position.trail) >= 2 for c in chunks)


def test_html_output_never_contains_script_or_nav_text(
    shared_docs: Path, outcomes: dict[str, Extracted | ExtractionFailed]
) -> None:
    from selectolax.lexbor import LexborHTMLParser

    checked = 0
    for path in sorted((shared_docs / "html").glob("*.html")):
        result = outcomes[f"html/{path.name}"]
        assert isinstance(result, Extracted)
        tree = LexborHTMLParser(path.read_bytes())
        for node in tree.css("script, nav"):
            text = " ".join((node.text() or "").split())
            if len(text) >= 30:
                assert text not in " ".join(result.text.split()), path.name
                checked += 1
    assert checked > 5


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("txt_edge/latin1-portuguese.txt", "tão bem determinada"),
        ("txt_edge/latin1-2.txt", "é"),
        ("txt_edge/cp1252-dutch-nel.txt", "dat zij al…"),
        ("txt_edge/koi8r-russian.txt", "В гимназии он не был"),
        ("txt_edge/utf16le-bom.txt", "About 2 months ago I found myself on"),
        ("txt_edge/utf16be-bom.txt", "About 2 months ago I found myself on"),
        ("txt_edge/utf8-bom.txt", "プロジェクトの概要"),
        ("html_edge/mozilla-bug421271-cp1252.html", "lift £825"),
        ("html_edge/steelJIS-datasheet-utf-16le-bom.html", "日本語"),
    ],
)
def test_encodings_decode_to_the_right_characters(
    outcomes: dict[str, Extracted | ExtractionFailed], name: str, expected: str
) -> None:
    result = outcomes[name]
    assert isinstance(result, Extracted)
    assert expected in result.text
    assert "\x00" not in result.text and "\ufffd" not in result.text


def test_no_document_text_reaches_a_log(
    shared_docs: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    samples: list[str] = []
    for path in corpus_files(shared_docs):
        result = outcome(path)
        if isinstance(result, Extracted):
            samples += [e.text[:40] for e in result.elements[:50] if len(e.text) >= 40]
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert len(samples) > 100
    assert [s for s in samples if s in logged] == []
