"""DOCX extraction: reading order, headings in any language, lists, tables, notes, text boxes,
and the ways a package fails."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path, PurePath

import docx
import pytest
from docx.oxml.ns import qn

from lorebase.errors import ExtractionFailed
from lorebase.extract.containers import check_zip
from lorebase.extract.registry import extract_bytes
from lorebase.settings import MB, ExtractSettings
from lorebase.types import ElementKind, Extracted, FailureReason
from unit.fixtures_office import (
    CORPUS_REASON,
    add_footnotes,
    add_localized_heading_style,
    add_text_box,
    docx_bytes,
    png_bytes,
    replace_zip_entries,
    strict_docx,
    zip_bomb_docx,
)

DOCS = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "docs"
DOCX_PATH = PurePath("doc.docx")


def extract(data: bytes, settings: ExtractSettings | None = None) -> Extracted:
    extracted = extract_bytes(data, DOCX_PATH, settings or ExtractSettings())
    assert_invariants(extracted)
    return extracted


def failure(data: bytes, settings: ExtractSettings | None = None) -> ExtractionFailed:
    with pytest.raises(ExtractionFailed) as caught:
        extract(data, settings)
    return caught.value


def assert_invariants(extracted: Extracted) -> None:
    for element in extracted.elements:
        assert extracted.text[element.start : element.end] == element.text
        assert element.page is None
    assert extracted.page_count is None


def outline(extracted: Extracted) -> list[tuple[str, int, str]]:
    """(kind, level, text) of every element with text."""
    return [
        (element.kind.value, element.level, element.text)
        for element in extracted.elements
        if element.kind is not ElementKind.PAGE_BREAK
    ]


# -- reading -------------------------------------------------------------------------------------


def test_headings_paragraphs_lists_and_tables_in_order() -> None:
    document = docx.Document()
    document.core_properties.title = "Field Manual"
    document.add_heading("Chapter One", level=1)
    document.add_paragraph("Opening words.")
    document.add_heading("Section", level=2)
    document.add_paragraph("First item", style="List Bullet")
    document.add_paragraph("Second item", style="List Number")
    table = document.add_table(rows=2, cols=3)
    for row, values in zip(table.rows, [("a", "b", "c"), ("d", "e", "f")], strict=True):
        for cell, value in zip(row.cells, values, strict=True):
            cell.text = value
    document.add_heading("Detail", level=3)
    document.add_paragraph("Closing words.")
    extracted = extract(docx_bytes(document))
    assert extracted.title == "Field Manual"
    assert outline(extracted) == [
        ("heading", 1, "Chapter One"),
        ("paragraph", 0, "Opening words."),
        ("heading", 2, "Section"),
        ("list_item", 0, "First item"),
        ("list_item", 0, "Second item"),
        ("table", 0, "a | b | c\nd | e | f"),
        ("heading", 3, "Detail"),
        ("paragraph", 0, "Closing words."),
    ]


def test_localized_heading_style_is_a_heading() -> None:
    """A style named and identified in German is a heading through its outline level."""
    document = docx.Document()
    name = add_localized_heading_style(document, "Überschrift 1", outline_level=0)
    document.add_paragraph("Einleitung", style=name)
    document.add_paragraph("Text.")
    assert outline(extract(docx_bytes(document)))[0] == ("heading", 1, "Einleitung")


def test_built_in_heading_id_counts_whatever_its_name() -> None:
    """Word localizes the name of a built-in heading but keeps its id ``Heading2``."""
    document = docx.Document()
    style = document.styles["Heading 2"]
    style.name = "Überschrift 2"
    properties = style.element.pPr
    properties.remove(properties.find(qn("w:outlineLvl")))
    document.add_paragraph("Abschnitt", style=style)
    document.add_paragraph("Text.")
    assert outline(extract(docx_bytes(document)))[0] == ("heading", 2, "Abschnitt")


def test_title_style_is_title_and_heading_without_core_title() -> None:
    document = docx.Document()
    document.add_heading("The Handbook", level=0)  # the Title style
    document.add_paragraph("Body.")
    extracted = extract(docx_bytes(document))
    assert extracted.title == "The Handbook"
    assert outline(extracted)[0] == ("heading", 1, "The Handbook")


def test_title_style_is_a_paragraph_under_a_core_title() -> None:
    document = docx.Document()
    document.core_properties.title = "Official Title"
    document.add_heading("Cover Line", level=0)
    extracted = extract(docx_bytes(document))
    assert extracted.title == "Official Title"
    assert outline(extracted) == [("paragraph", 0, "Cover Line")]


def test_merged_and_nested_table_cells() -> None:
    document = docx.Document()
    table = document.add_table(rows=2, cols=3)
    merged = table.cell(0, 0).merge(table.cell(0, 1))
    merged.text = "wide"
    table.cell(0, 2).text = "right"
    table.cell(1, 0).text = "x"
    inner = table.cell(1, 1).add_table(rows=1, cols=2)
    inner.cell(0, 0).text = "in1"
    inner.cell(0, 1).text = "in2"
    table.cell(1, 2).text = "z"
    extracted = extract(docx_bytes(document))
    # The merged cell appears once, the nested table flattens into its cell.
    assert outline(extracted) == [("table", 0, "wide | right\nx | in1 in2 | z")]


def test_a_table_between_paragraphs_is_a_table_chunk() -> None:
    from lorebase.chunk import chunk_document
    from lorebase.settings import ChunkSettings
    from lorebase.types import ContentKind

    document = docx.Document()
    document.add_heading("Fees", level=1)
    document.add_paragraph("The fees below apply from January.")
    table = document.add_table(rows=3, cols=2)
    for row, values in zip(
        table.rows, [("Item", "Fee"), ("Audit", "40"), ("Review", "25")], strict=True
    ):
        for cell, value in zip(row.cells, values, strict=True):
            cell.text = value
    document.add_paragraph("Fees are paid yearly.")
    chunks = chunk_document(extract(docx_bytes(document)), ChunkSettings())
    assert [(c.position.content_kind, c.text) for c in chunks] == [
        (ContentKind.PROSE, "The fees below apply from January."),
        (ContentKind.TABLE, "Item | Fee\nAudit | 40\nReview | 25"),
        (ContentKind.PROSE, "Fees are paid yearly."),
    ]


def test_strict_open_xml_reads_like_transitional() -> None:
    document = docx.Document()
    document.core_properties.title = "Strict Manual"
    document.add_heading("Chapter One", level=1)
    document.add_paragraph("Opening words.")
    document.add_paragraph("First item", style="List Bullet")
    document.add_table(rows=1, cols=2).rows[0].cells[0].text = "cell"
    add_footnotes(document, ["A note at the foot."])
    data = docx_bytes(document)
    strict = strict_docx(data)
    assert b"http://purl.oclc.org/ooxml/wordprocessingml/main" in zipfile.ZipFile(
        io.BytesIO(strict)
    ).read("word/document.xml")
    extracted, expected = extract(strict), extract(data)
    assert extracted.title == "Strict Manual"
    assert outline(extracted) == outline(expected)
    assert ("heading", 1, "Chapter One") in outline(extracted)
    assert ("paragraph", 0, "A note at the foot.") in outline(extracted)


def test_footnotes_come_after_the_body() -> None:
    document = docx.Document()
    document.add_paragraph("Body text.")
    add_footnotes(document, ["A note at the foot."])
    assert outline(extract(docx_bytes(document))) == [
        ("paragraph", 0, "Body text."),
        ("paragraph", 0, "A note at the foot."),
    ]


def test_text_box_is_read_once() -> None:
    document = docx.Document()
    add_text_box(document.add_paragraph("Anchor paragraph."), "Boxed words")
    document.add_paragraph("After.")
    assert outline(extract(docx_bytes(document))) == [
        ("paragraph", 0, "Anchor paragraph."),
        ("paragraph", 0, "Boxed words"),
        ("paragraph", 0, "After."),
    ]


def test_page_break_element_without_page_numbers() -> None:
    document = docx.Document()
    document.add_paragraph("Before.")
    document.add_page_break()  # type: ignore[no-untyped-call]  # unannotated in python-docx
    document.add_paragraph("After.")
    extracted = extract(docx_bytes(document))
    kinds = [element.kind for element in extracted.elements]
    assert kinds == [ElementKind.PARAGRAPH, ElementKind.PAGE_BREAK, ElementKind.PARAGRAPH]


# -- failures ------------------------------------------------------------------------------------


def test_empty_document_is_empty() -> None:
    assert failure(docx_bytes(docx.Document())).reason is FailureReason.EMPTY


def test_images_only_is_empty() -> None:
    document = docx.Document()
    document.add_picture(io.BytesIO(png_bytes()))
    assert failure(docx_bytes(document)).reason is FailureReason.EMPTY


def test_not_a_zip_is_corrupt() -> None:
    assert failure(b"PK\x03\x04 this is no zip archive").reason is FailureReason.CORRUPT


def test_truncated_package_is_corrupt() -> None:
    data = docx_bytes(docx.Document())
    assert failure(data[: len(data) // 2]).reason is FailureReason.CORRUPT


def test_zip_without_a_document_is_corrupt() -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("notes.txt", "not a word document")
    assert failure(buffer.getvalue()).reason is FailureReason.CORRUPT


def test_damaged_document_xml_is_corrupt() -> None:
    data = replace_zip_entries(docx_bytes(docx.Document()), {"word/document.xml": b"<w:doc"})
    assert failure(data).reason is FailureReason.CORRUPT


@pytest.mark.parametrize("form", ["transitional", "strict"])
def test_zip_bomb_is_too_large(form: str) -> None:
    document = docx.Document()
    document.add_paragraph("Small visible text.")
    base = docx_bytes(document)
    data = zip_bomb_docx(base if form == "transitional" else strict_docx(base), 50 * MB)
    error = failure(data, ExtractSettings(max_expanded_bytes=10 * MB))
    assert error.reason is FailureReason.TOO_LARGE
    # Under the default total limit the ratio of zeros (about 1030:1) still gives it away.
    assert failure(data).reason is FailureReason.TOO_LARGE


def test_check_zip_accepts_an_ordinary_package() -> None:
    check_zip(docx_bytes(docx.Document()), 1 * MB)


# -- corpus --------------------------------------------------------------------------------------

corpus = pytest.mark.skipif(not DOCS.is_dir(), reason=CORPUS_REASON)
# Holds only empty tables: no text anywhere in the package.
_NO_TEXT = {"tbl-having-tables.docx"}


def corpus_files(folder: str) -> list[Path]:
    return sorted((DOCS / folder).glob("*.docx")) if DOCS.is_dir() else []


def read(path: Path) -> Extracted:
    extracted = extract_bytes(path.read_bytes(), path, ExtractSettings())
    assert_invariants(extracted)
    return extracted


def read_failure(path: Path) -> ExtractionFailed:
    with pytest.raises(ExtractionFailed) as caught:
        read(path)
    return caught.value


@pytest.mark.corpus
@corpus
@pytest.mark.parametrize("path", corpus_files("docx"), ids=lambda path: path.name)
def test_corpus_docx_yield_text(path: Path) -> None:
    if path.name in _NO_TEXT:
        assert read_failure(path).reason is FailureReason.EMPTY
    else:
        assert read(path).text.strip()


@pytest.mark.corpus
@corpus
def test_corpus_handbook_headings() -> None:
    extracted = read(DOCS / "docx" / "doj-handbook-872p.docx")
    levels = [e.level for e in extracted.elements if e.kind is ElementKind.HEADING]
    assert len(levels) > 100
    assert set(levels) >= {1, 2, 3}


@pytest.mark.corpus
@corpus
def test_corpus_edge_cases() -> None:
    edge = DOCS / "docx_edge"
    assert read_failure(edge / "empty.docx").reason is FailureReason.EMPTY
    assert read_failure(edge / "having-images-no-text.docx").reason is FailureReason.EMPTY
    assert "byte order mark" in read(edge / "utf8-bom.docx").text
    assert "Merged B1-B3" in read(edge / "grid_offset_error.docx").text


@pytest.mark.corpus
@corpus
def test_corpus_endnotes_and_tables() -> None:
    endnotes = read(DOCS / "docx" / "endnotes.docx")
    assert outline(endnotes)[-2:] == [
        ("paragraph", 0, "A tachyon walks into a bar."),
        ("paragraph", 0, "Fin."),
    ]
    tables = read(DOCS / "docx" / "docx-tables.docx")
    assert ("table", 0, "Header Col 1 | Header Col 2\nLorem ipsum | A link example") in outline(
        tables
    )
