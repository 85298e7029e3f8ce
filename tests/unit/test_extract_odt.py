"""ODT (OpenDocument text): headings, white space, nested lists, tables, notes after the body,
frames, the title and metadata, and the ways a package fails."""

from __future__ import annotations

import io
from pathlib import Path, PurePath

import pytest
from odf import dc, draw, meta, office, style, table, text
from odf.opendocument import OpenDocumentText

from lorebase.errors import ExtractionFailed
from lorebase.extract.odf import paragraph_text, table_rows
from lorebase.extract.registry import extract_bytes
from lorebase.settings import MB, ExtractSettings
from lorebase.types import ElementKind, Extracted
from unit.fixtures_office import replace_zip_entries

ODT = PurePath("notes.odt")
TEXT_NS = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"


def extract(data: bytes, settings: ExtractSettings | None = None) -> Extracted:
    extracted = extract_bytes(data, ODT, settings or ExtractSettings())
    for element in extracted.elements:
        assert extracted.text[element.start : element.end] == element.text
        assert element.page is None
    return extracted


def failure(data: bytes, settings: ExtractSettings | None = None) -> str:
    with pytest.raises(ExtractionFailed) as caught:
        extract(data, settings)
    return caught.value.reason.value


def outline(extracted: Extracted) -> list[tuple[str, int, str]]:
    return [(e.kind.value, e.level, e.text) for e in extracted.elements]


def odt_bytes(document: OpenDocumentText) -> bytes:
    buffer = io.BytesIO()
    document.write(buffer)
    return buffer.getvalue()


def paragraph(*parts: object) -> text.P:
    """A paragraph of strings and inline elements."""
    element = text.P()
    for part in parts:
        if isinstance(part, str):
            element.addText(part)
        else:
            element.addElement(part)
    return element


def bullet_list(*items: str | tuple[str, text.List]) -> text.List:
    listed = text.List()
    for entry in items:
        item = text.ListItem()
        words, nested = entry if isinstance(entry, tuple) else (entry, None)
        item.addElement(text.P(text=words))
        if nested is not None:
            item.addElement(nested)
        listed.addElement(item)
    return listed


def simple_table(rows: list[list[str]]) -> table.Table:
    grid = table.Table(name="Grid")
    grid.addElement(table.TableColumn(numbercolumnsrepeated=len(rows[0])))
    for values in rows:
        row = table.TableRow()
        for value in values:
            cell = table.TableCell()
            cell.addElement(text.P(text=value))
            row.addElement(cell)
        grid.addElement(row)
    return grid


def footnote(number: str, words: str, kind: str = "footnote") -> text.Note:
    note = text.Note(id=f"n{number}", noteclass=kind)
    note.addElement(text.NoteCitation(text=number))
    body = text.NoteBody()
    body.addElement(text.P(text=words))
    note.addElement(body)
    return note


# -- reading -------------------------------------------------------------------------------------


def test_headings_paragraphs_nested_lists_and_tables_in_order() -> None:
    document = OpenDocumentText()
    document.text.addElement(text.H(outlinelevel=1, text="Field Manual"))
    document.text.addElement(text.P(text="Opening words."))
    document.text.addElement(text.H(outlinelevel=2, text="Packing"))
    document.text.addElement(bullet_list("Tent", ("Stove", bullet_list("Fuel", "Lighter")), "Map"))
    document.text.addElement(simple_table([["Item", "Weight"], ["Tent", "2 kg"]]))
    document.text.addElement(text.H(outlinelevel=9, text="Deep"))  # levels past 6 are 6
    extracted = extract(odt_bytes(document))
    assert outline(extracted) == [
        ("heading", 1, "Field Manual"),
        ("paragraph", 0, "Opening words."),
        ("heading", 2, "Packing"),
        ("list_item", 0, "Tent"),
        ("list_item", 0, "Stove"),
        ("list_item", 0, "Fuel"),
        ("list_item", 0, "Lighter"),
        ("list_item", 0, "Map"),
        ("table", 0, "Item | Weight\nTent | 2 kg"),
        ("heading", 6, "Deep"),
    ]
    (grid,) = [e for e in extracted.elements if e.kind is ElementKind.TABLE]
    assert grid.header == "Item | Weight"
    assert extracted.title == "Field Manual"  # no dc:title: the first heading
    assert extracted.kind == "odt" and extracted.page_count is None


def test_white_space_follows_the_odf_rule() -> None:
    document = OpenDocumentText()
    spaced = paragraph("Value", text.S(c=3), "With 3 spaces")
    tabbed = paragraph("Name", text.Tab(), "Value")
    broken = paragraph("First line", text.LineBreak(), "Second line")
    linked = paragraph("See ", text.A(href="https://example.org", text="the site"), " now.")
    spans = paragraph(text.Span(text="Bold"), " and ", text.Span(text="plain"))
    for element in (spaced, tabbed, broken, linked, spans):
        document.text.addElement(element)
    assert [e.text for e in extract(odt_bytes(document)).elements] == [
        "Value   With 3 spaces",  # text:s c="3"
        "Name\tValue",
        "First line\nSecond line",
        "See the site now.",
        "Bold and plain",
    ]


def test_xml_white_space_collapses_and_a_bom_goes() -> None:
    from lxml import etree

    element = etree.fromstring(
        f'<text:p xmlns:text="{TEXT_NS}">\n   \ufeffA   run\n\tof <text:span>spaced</text:span>'
        f"   words<text:s/><text:s/>end</text:p>"
    )
    assert paragraph_text(element) == "A run of spaced words  end"


def test_a_numbered_heading_keeps_its_label_apart() -> None:
    from lxml import etree

    element = etree.fromstring(
        f'<text:h xmlns:text="{TEXT_NS}"><text:number>2.1</text:number>Methods</text:h>'
    )
    assert paragraph_text(element) == "2.1 Methods"


def test_footnotes_and_endnotes_come_after_the_body() -> None:
    document = OpenDocumentText()
    document.text.addElement(paragraph("Claim one", footnote("1", "First source."), "."))
    document.text.addElement(paragraph("Claim two", footnote("i", "Closing remark.", "endnote")))
    document.text.addElement(paragraph("Claim three", footnote("2", "Second source."), "."))
    assert [e.text for e in extract(odt_bytes(document)).elements] == [
        "Claim one.",
        "Claim two",
        "Claim three.",
        "First source.",
        "Second source.",
        "Closing remark.",
    ]


def test_frames_and_text_boxes_are_read_after_their_paragraph() -> None:
    document = OpenDocumentText()
    frame = draw.Frame(width="5cm", height="2cm", anchortype="paragraph")
    box = draw.TextBox()
    box.addElement(text.P(text="Boxed aside"))
    frame.addElement(box)
    picture = draw.Frame(width="1cm", height="1cm", anchortype="paragraph")
    picture.addElement(draw.Image(href="Pictures/x.png"))
    document.text.addElement(paragraph(frame, picture, "Body text"))
    document.text.addElement(text.P(text="After"))
    assert [e.text for e in extract(odt_bytes(document)).elements] == [
        "Body text",
        "Boxed aside",
        "After",
    ]


def test_merged_cells_once_and_covered_cells_below_stay_empty() -> None:
    document = OpenDocumentText()
    grid = table.Table(name="Merged")
    grid.addElement(table.TableColumn(numbercolumnsrepeated=3))
    rows: list[list[tuple[str, int, int] | None]] = [
        [("Region", 1, 1), ("Sales", 2, 1), None],
        [("North", 1, 2), ("10", 1, 1), ("12", 1, 1)],
        [None, ("11", 1, 1), ("13", 1, 1)],
    ]
    for values in rows:
        row = table.TableRow()
        for value in values:
            if value is None:
                row.addElement(table.CoveredTableCell())
                continue
            words, across, down = value
            cell = table.TableCell(numbercolumnsspanned=across, numberrowsspanned=down)
            cell.addElement(text.P(text=words))
            row.addElement(cell)
        grid.addElement(row)
    document.text.addElement(grid)
    (element,) = extract(odt_bytes(document)).elements
    assert element.text == "Region | Sales\nNorth | 10 | 12\n | 11 | 13"
    assert element.header == "Region | Sales"


def test_repeated_rows_and_cells_are_bounded() -> None:
    from lxml import etree

    ns = "urn:oasis:names:tc:opendocument:xmlns:table:1.0"
    grid = etree.fromstring(
        f'<table:table xmlns:table="{ns}" xmlns:text="{TEXT_NS}">'
        '<table:table-row table:number-rows-repeated="2"><table:table-cell '
        'table:number-columns-repeated="2"><text:p>x</text:p></table:table-cell>'
        '<table:table-cell table:number-columns-repeated="16384"/></table:table-row>'
        '<table:table-row table:number-rows-repeated="1048576"><table:table-cell/>'
        "</table:table-row></table:table>"
    )
    assert table_rows(grid) == [["x", "x"], ["x", "x"]]


def test_meta_title_and_metadata() -> None:
    document = OpenDocumentText()
    document.meta.addElement(dc.Title(text="Trip Report"))
    document.meta.addElement(meta.InitialCreator(text="Ada Lovelace"))
    document.meta.addElement(dc.Creator(text="Charles Babbage"))
    document.meta.addElement(meta.CreationDate(text="2024-05-01T10:00:00"))
    document.meta.addElement(dc.Date(text="2024-06-02T11:30:00"))
    document.text.addElement(text.H(outlinelevel=1, text="Day one"))
    document.text.addElement(text.P(text="We walked."))
    extracted = extract(odt_bytes(document))
    assert extracted.title == "Trip Report"
    assert dict(extracted.metadata) == {
        "title": "Trip Report",
        "author": "Ada Lovelace",
        "created": "2024-05-01T10:00:00",
        "modified": "2024-06-02T11:30:00",
    }


def test_title_style_paragraph_is_the_title() -> None:
    document = OpenDocumentText()
    title_style = style.Style(name="Title", family="paragraph")
    document.styles.addElement(title_style)
    direct = style.Style(name="P1", family="paragraph", parentstylename="Title")
    document.automaticstyles.addElement(direct)
    document.text.addElement(text.P(stylename=direct, text="The Handbook"))
    document.text.addElement(text.P(text="Body."))
    extracted = extract(odt_bytes(document))
    assert extracted.title == "The Handbook"
    assert outline(extracted)[0] == ("heading", 1, "The Handbook")
    document.meta.addElement(dc.Title(text="Handbook, 2nd edition"))
    extracted = extract(odt_bytes(document))
    assert extracted.title == "Handbook, 2nd edition"
    assert outline(extracted)[0] == ("paragraph", 0, "The Handbook")


def test_tables_of_contents_and_comments_are_not_text() -> None:
    document = OpenDocumentText()
    contents = text.TableOfContent(name="Contents")
    index = text.IndexBody()
    index.addElement(text.P(text="Introduction ........ 1"))
    contents.addElement(index)
    document.text.addElement(contents)
    comment = office.Annotation()
    comment.addElement(dc.Creator(text="Reviewer"))
    comment.addElement(text.P(text="Reword this"))
    document.text.addElement(text.H(outlinelevel=1, text="Introduction"))
    document.text.addElement(paragraph("The text", comment, " itself."))
    assert [e.text for e in extract(odt_bytes(document)).elements] == [
        "Introduction",
        "The text itself.",
    ]


# -- failures ------------------------------------------------------------------------------------


def small_document() -> bytes:
    document = OpenDocumentText()
    document.text.addElement(text.P(text="Some words."))
    return odt_bytes(document)


def test_a_document_without_text_is_empty() -> None:
    document = OpenDocumentText()
    document.text.addElement(text.P())
    document.text.addElement(simple_table([["", ""]]))
    assert failure(odt_bytes(document)) == "empty"


def test_a_truncated_document_is_corrupt() -> None:
    data = small_document()
    assert failure(data[: len(data) // 2]) == "corrupt"


def test_a_package_of_another_kind_is_corrupt() -> None:
    data = replace_zip_entries(
        small_document(),
        {
            "content.xml": b'<office:document-content xmlns:office="urn:oasis:names:tc:'
            b'opendocument:xmlns:office:1.0"><office:body><office:spreadsheet/>'
            b"</office:body></office:document-content>"
        },
    )
    assert failure(data) == "corrupt"


def test_damaged_content_xml_is_corrupt() -> None:
    assert (
        failure(replace_zip_entries(small_document(), {"content.xml": b"<office:doc"})) == "corrupt"
    )


def test_entities_are_not_expanded() -> None:
    laughs = (
        b'<?xml version="1.0"?><!DOCTYPE d [<!ENTITY a "ha"><!ENTITY b "&a;&a;&a;&a;&a;&a;">'
        b'<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;">]><office:document-content xmlns:office="urn:oasis:'
        b'names:tc:opendocument:xmlns:office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:'
        b'xmlns:text:1.0"><office:body><office:text><text:p>&c;</text:p></office:text>'
        b"</office:body></office:document-content>"
    )
    data = replace_zip_entries(small_document(), {"content.xml": laughs})
    assert failure(data) == "empty"


def test_a_zip_bomb_is_too_large() -> None:
    data = replace_zip_entries(small_document(), {"Pictures/pad.bin": bytes(50 * MB)})
    assert failure(data, ExtractSettings(max_expanded_bytes=10 * MB)) == "too_large"
    assert failure(data) == "too_large"


def test_an_encrypted_package_is_encrypted() -> None:
    manifest = (
        b'<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0">'
        b'<manifest:file-entry manifest:full-path="/" manifest:media-type="application/'
        b'vnd.oasis.opendocument.text"/><manifest:file-entry manifest:full-path="content.xml" '
        b'manifest:media-type="text/xml" manifest:size="3201"><manifest:encryption-data '
        b'manifest:checksum-type="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0#sha256-1k" '
        b'manifest:checksum="AA=="><manifest:algorithm manifest:algorithm-name="http://www.w3.org'
        b'/2001/04/xmlenc#aes256-cbc" manifest:initialisation-vector="AA=="/>'
        b"</manifest:encryption-data></manifest:file-entry></manifest:manifest>"
    )
    data = replace_zip_entries(
        small_document(), {"META-INF/manifest.xml": manifest, "content.xml": bytes(range(256))}
    )
    assert failure(data) == "encrypted"


# -- the real documents --------------------------------------------------------------------------

REAL = [
    ("odt/odfpy-electra.odt", "The Project Gutenberg EBook of Electra"),
    ("odt/odfpy-simpletable.odt", "Cell 4 (italic)"),
    ("odt/odfpy-images.odt", "Right justified picture with paragraph anchor"),
]


def read(folder: Path, name: str) -> Extracted:
    return extract(folder.joinpath(name).read_bytes())


@pytest.mark.parametrize(("name", "phrase"), REAL, ids=[name for name, _ in REAL])
def test_real_documents_hold_their_phrase(shared_formats: Path, name: str, phrase: str) -> None:
    assert phrase in read(shared_formats, name).text


def test_real_electra_loses_its_bom(shared_formats: Path) -> None:
    extracted = read(shared_formats, "odt/odfpy-electra.odt")
    assert extracted.text.startswith("The Project Gutenberg EBook of Electra")
    assert "\ufeff" not in extracted.text
    assert extracted.title == "Ηλέκτρα"  # dc:title
    assert extracted.metadata["author"] == "Euripides"  # meta:initial-creator
    assert ("heading", 1, "ΥΠΟΘΕΣΙΣ") in outline(extracted)


def test_real_simple_table_is_one_table_with_a_header(shared_formats: Path) -> None:
    (element,) = read(shared_formats, "odt/odfpy-simpletable.odt").elements
    assert element.kind is ElementKind.TABLE
    assert element.text == "Cell 1 | Cell 2\nCell 3 (bold) | Cell 4 (italic)"
    assert element.header == "Cell 1 | Cell 2"
