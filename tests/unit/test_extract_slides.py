"""Slide decks (PPTX, ODP): a section per slide with its title and page, reading order,
bullets, tables, speaker notes, hidden slides, the deck's title and metadata, and the ways a
deck fails."""

from __future__ import annotations

import io
import re
import struct
import time
import zipfile
from dataclasses import fields
from pathlib import Path, PurePath

import pytest
from odf import draw, presentation, style, table, text
from odf.namespaces import PRESENTATIONNS
from odf.opendocument import OpenDocumentPresentation
from pptx import Presentation
from pptx.presentation import Presentation as Deck
from pptx.shapes.autoshape import Shape
from pptx.slide import Slide
from pptx.util import Cm

from lorebase.chunk import chunk_document
from lorebase.errors import ExtractionFailed
from lorebase.extract.registry import extract_bytes
from lorebase.extract.sandbox import ExtractionPool
from lorebase.extract.slides import deck_title
from lorebase.settings import MB, ChunkSettings, ExtractSettings
from lorebase.types import ElementKind, Extracted, FailureReason, Position, Provenance
from unit.fixtures_office import replace_zip_entries

PPTX = PurePath("deck.pptx")
ODP = PurePath("deck.odp")
TITLE_SLIDE, TITLE_AND_CONTENT, TITLE_ONLY, BLANK = 0, 1, 5, 6  # python-pptx's default layouts


def extract(
    data: bytes, path: PurePath = PPTX, settings: ExtractSettings | None = None
) -> Extracted:
    extracted = extract_bytes(data, path, settings or ExtractSettings())
    for element in extracted.elements:
        assert extracted.text[element.start : element.end] == element.text
        assert element.page is not None and 1 <= element.page <= (extracted.page_count or 0)
    return extracted


def failure(data: bytes, path: PurePath = PPTX, settings: ExtractSettings | None = None) -> str:
    with pytest.raises(ExtractionFailed) as caught:
        extract(data, path, settings)
    return caught.value.reason.value


def outline(extracted: Extracted) -> list[tuple[str, int, int | None, str]]:
    return [(e.kind.value, e.level, e.page, e.text) for e in extracted.elements]


def pptx_bytes(deck: Deck) -> bytes:
    buffer = io.BytesIO()
    deck.save(buffer)
    return buffer.getvalue()


def add_text_box(slide: Slide, text_: str, *, top: float, left: float = 1) -> Shape:
    box = slide.shapes.add_textbox(Cm(left), Cm(top), Cm(10), Cm(2))
    box.text_frame.text = text_
    return box


def four_slide_deck() -> Deck:
    """Title slide; a bulleted slide with notes; a slide without a title whose boxes were
    added bottom first; a hidden slide."""
    deck = Presentation()
    first = deck.slides.add_slide(deck.slide_layouts[TITLE_SLIDE])
    first.shapes.title.text = "Quarterly Review"
    first.placeholders[1].text = "Finance team"
    second = deck.slides.add_slide(deck.slide_layouts[TITLE_AND_CONTENT])
    second.shapes.title.text = "Roadmap"
    body = second.placeholders[1].text_frame
    body.text = "Ship v2"
    nested = body.add_paragraph()
    nested.text, nested.level = "Beta in May", 1
    second.notes_slide.notes_text_frame.text = "Mention the budget.\nThen the hiring plan."
    third = deck.slides.add_slide(deck.slide_layouts[BLANK])
    add_text_box(third, "Bottom box", top=12)
    add_text_box(third, "Right box", top=2, left=12)
    add_text_box(third, "Left box\vsecond line", top=2, left=1)
    fourth = deck.slides.add_slide(deck.slide_layouts[TITLE_ONLY])
    fourth.shapes.title.text = "Appendix"
    add_text_box(fourth, "Backup numbers", top=5)
    fourth._element.set("show", "0")
    return deck


# -- PPTX: reading -------------------------------------------------------------------------------


def test_each_slide_is_a_section_with_its_number() -> None:
    extracted = extract(pptx_bytes(four_slide_deck()))
    assert outline(extracted) == [
        ("heading", 1, 1, "Quarterly Review"),
        ("paragraph", 0, 1, "Finance team"),  # a subtitle carries no bullet
        ("heading", 1, 2, "Roadmap"),
        ("list_item", 0, 2, "Ship v2"),
        ("list_item", 0, 2, "Beta in May"),
        ("heading", 2, 2, "Notes"),
        ("paragraph", 0, 2, "Mention the budget."),
        ("paragraph", 0, 2, "Then the hiring plan."),
        ("heading", 1, 3, "Slide 3"),
        ("paragraph", 0, 3, "Left box\nsecond line"),  # the vertical tab is a line break
        ("paragraph", 0, 3, "Right box"),
        ("paragraph", 0, 3, "Bottom box"),
        ("heading", 1, 4, "Appendix (hidden slide)"),
        ("paragraph", 0, 4, "Backup numbers"),
    ]
    assert extracted.kind == "pptx" and extracted.page_count == 4
    assert extracted.title == "Quarterly Review"  # no core title: the first slide's
    assert extracted.metadata["slides"] == "4"


def test_citations_name_the_slide_title_and_number() -> None:
    extracted = extract(pptx_bytes(four_slide_deck()))
    chunk = next(c for c in chunk_document(extracted, ChunkSettings()) if "Ship v2" in c.text)
    position = chunk.position
    assert position.trail == ("Roadmap",) and position.page == 2
    provenance = Provenance(
        **{f.name: getattr(position, f.name) for f in fields(Position)},
        knowledge_base="kb",
        knowledge_base_id=1,
        document_id="d",
        path="deck.pptx",
        title=extracted.title,
        kind="pptx",
    )
    assert provenance.citation() == "deck.pptx › Roadmap (slide 2)"


def test_core_properties_give_title_and_metadata() -> None:
    deck = four_slide_deck()
    deck.core_properties.title = "Strategy 2030"
    deck.core_properties.author = "Ada Lovelace"
    extracted = extract(pptx_bytes(deck))
    assert extracted.title == "Strategy 2030"
    assert extracted.metadata["author"] == "Ada Lovelace"
    assert extracted.metadata["title"] == "Strategy 2030"
    assert {"created", "modified", "slides"} <= set(extracted.metadata)


def test_a_title_an_application_filled_in_is_no_title() -> None:
    deck = four_slide_deck()
    deck.core_properties.title = "PowerPoint Presentation"
    extracted = extract(pptx_bytes(deck))
    assert extracted.title == "Quarterly Review"
    assert "title" not in extracted.metadata
    assert deck_title("Présentation PowerPoint") is None
    assert deck_title("Roadmap 2030") == "Roadmap 2030"


def test_groups_are_read_shape_by_shape_in_reading_order() -> None:
    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[TITLE_ONLY])
    slide.shapes.title.text = "Architecture"
    group = slide.shapes.add_group_shape()
    group.shapes.add_textbox(Cm(1), Cm(9), Cm(5), Cm(1)).text_frame.text = "Storage"
    group.shapes.add_textbox(Cm(1), Cm(6), Cm(5), Cm(1)).text_frame.text = "Service"
    add_text_box(slide, "Clients", top=4)
    assert [e.text for e in extract(pptx_bytes(deck)).elements] == [
        "Architecture",
        "Clients",
        "Service",
        "Storage",
    ]


def test_explicit_bullets_in_a_text_box_are_list_items() -> None:
    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[BLANK])
    box = add_text_box(slide, "Plain words", top=2)
    item = box.text_frame.add_paragraph()
    item.text = "A bulleted point"
    properties = item._p.get_or_add_pPr()
    properties.append(properties.makeelement(f"{{{properties.nsmap['a']}}}buChar", {"char": "•"}))
    kinds = [(e.kind, e.text) for e in extract(pptx_bytes(deck)).elements[1:]]
    assert kinds == [
        (ElementKind.PARAGRAPH, "Plain words"),
        (ElementKind.LIST_ITEM, "A bulleted point"),
    ]


def test_tables_have_a_header_and_merged_cells_once() -> None:
    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[TITLE_ONLY])
    slide.shapes.title.text = "Budget"
    shape = slide.shapes.add_table(4, 3, Cm(1), Cm(5), Cm(18), Cm(6))
    table = shape.table
    values = [
        ("Item", "Q1", "Q2"),
        ("Hosting", "10", "12"),
        ("People", "80", "90"),
        ("Total for the year", "", ""),
    ]
    for row, texts in zip(table.rows, values, strict=True):
        for cell, value in zip(row.cells, texts, strict=True):
            cell.text = value
    table.cell(3, 0).merge(table.cell(3, 2))  # a row-wide merged cell
    table.cell(1, 0).merge(table.cell(2, 0))  # a cell merged down (its text moves up)
    table.cell(1, 0).text = "Hosting"
    (element,) = [e for e in extract(pptx_bytes(deck)).elements if e.kind is ElementKind.TABLE]
    assert element.text == "Item | Q1 | Q2\nHosting | 10 | 12\n | 80 | 90\nTotal for the year"
    assert element.header == "Item | Q1 | Q2"
    assert element.page == 1


def test_footers_and_slide_numbers_are_not_slide_text() -> None:
    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[TITLE_ONLY])
    slide.shapes.title.text = "Results"
    for placeholder in slide.slide_layout.placeholders:
        if placeholder.placeholder_format.idx in (10, 11, 12):  # date, footer, slide number
            slide.shapes.clone_placeholder(placeholder)
    for placeholder in slide.placeholders:
        if placeholder.placeholder_format.idx in (10, 11, 12):
            placeholder.text = "Company confidential"
    assert len(slide.placeholders) == 4
    add_text_box(slide, "Revenue grew.", top=5)
    assert [e.text for e in extract(pptx_bytes(deck)).elements] == ["Results", "Revenue grew."]


def test_notes_without_slide_text_keep_their_slide_number() -> None:
    deck = Presentation()
    deck.slides.add_slide(deck.slide_layouts[BLANK])
    second = deck.slides.add_slide(deck.slide_layouts[BLANK])
    second.notes_slide.notes_text_frame.text = "Only spoken words."
    assert outline(extract(pptx_bytes(deck))) == [
        ("heading", 1, 2, "Slide 2"),
        ("heading", 2, 2, "Notes"),
        ("paragraph", 0, 2, "Only spoken words."),
    ]


def test_strict_open_xml_deck_reads_like_transitional() -> None:
    data = pptx_bytes(four_slide_deck())
    source = zipfile.ZipFile(io.BytesIO(data))
    renamed = {}
    for name in source.namelist():
        if name.endswith((".xml", ".rels")):
            renamed[name] = re.sub(
                rb"http://schemas\.openxmlformats\.org/(\w+)/2006/(\w+)",
                rb"http://purl.oclc.org/ooxml/\1/\2",
                source.read(name),
            )
    strict = replace_zip_entries(data, renamed)
    assert b"purl.oclc.org" in zipfile.ZipFile(io.BytesIO(strict)).read("_rels/.rels")
    assert outline(extract(strict)) == outline(extract(data))


# -- PPTX: failures ------------------------------------------------------------------------------


def test_a_deck_without_text_is_empty() -> None:
    deck = Presentation()
    for _ in range(3):
        deck.slides.add_slide(deck.slide_layouts[TITLE_AND_CONTENT])  # empty placeholders
    assert failure(pptx_bytes(deck)) == "empty"


def test_a_truncated_deck_is_corrupt() -> None:
    data = pptx_bytes(four_slide_deck())
    assert failure(data[: len(data) // 2]) == "corrupt"


def test_a_zip_that_is_no_deck_is_corrupt() -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("notes.txt", "not a presentation")
    assert failure(buffer.getvalue()) == "corrupt"


def test_a_zip_bomb_is_too_large() -> None:
    data = replace_zip_entries(pptx_bytes(four_slide_deck()), {"ppt/media/pad.bin": bytes(50 * MB)})
    assert failure(data, settings=ExtractSettings(max_expanded_bytes=10 * MB)) == "too_large"
    assert failure(data) == "too_large"  # the compression ratio gives it away too


def compound_file(streams: dict[str, bytes]) -> bytes:
    """A minimal OLE compound file (version 3, 512-byte sectors) holding ``streams``, each
    padded to 4096 bytes so it lives in ordinary sectors (no mini stream)."""
    sector, end, free = 512, 0xFFFFFFFE, 0xFFFFFFFF
    names = list(streams)
    fat = [0xFFFFFFFD, end]  # sector 0 is the FAT, sector 1 the directory
    starts = []
    for _ in names:
        starts.append(len(fat))
        fat += [*range(len(fat) + 1, len(fat) + 8), end]
    fat += [free] * (128 - len(fat))
    header = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(16)
    # Versions, byte order, sector sizes; directory and FAT sectors; no mini FAT, no DIFAT
    # sectors; the FAT's one sector is sector 0.
    header += struct.pack("<5H6x9I", 0x3E, 3, 0xFFFE, 9, 6, 0, 1, 1, 0, 4096, end, 0, end, 0)
    header += struct.pack("<I", 0) + b"\xff" * 4 * 108

    def entry(name: str, kind: int, right: int, child: int, start: int, size: int) -> bytes:
        encoded = name.encode("utf-16-le") + b"\0\0"
        return (
            encoded.ljust(64, b"\0")
            + struct.pack("<HBBIII", len(encoded), kind, 1, free, right, child)
            + bytes(16 + 4 + 16)
            + struct.pack("<IQ", start, size)
        )

    directory = entry("Root Entry", 5, free, 1, end, 0)
    for index, (name, start) in enumerate(zip(names, starts, strict=True), 1):
        directory += entry(name, 2, index + 1 if index < len(names) else free, free, start, 4096)
    directory = directory.ljust(sector, b"\0")
    body = b"".join(streams[name].ljust(4096, b"\0") for name in names)
    return header + struct.pack("<128I", *fat) + directory + body


def test_a_password_protected_deck_is_encrypted() -> None:
    data = compound_file({"EncryptionInfo": b"\x04\x00\x04\x00", "EncryptedPackage": b"\x01"})
    assert failure(data) == "encrypted"


def test_a_deck_encrypted_by_an_office_tool_is_encrypted() -> None:
    ooxml = pytest.importorskip("msoffcrypto.format.ooxml")
    encrypted = io.BytesIO()
    ooxml.OOXMLFile(io.BytesIO(pptx_bytes(four_slide_deck()))).encrypt("secret", encrypted)
    assert failure(encrypted.getvalue()) == "encrypted"


def test_a_legacy_binary_file_is_corrupt_not_encrypted() -> None:
    assert failure(compound_file({"PowerPoint Document": b"\x0f\x00"})) == "corrupt"


def many_blank_slides(count: int) -> bytes:
    """A deck of ``count`` blank slides, its one slide part copied (python-pptx's own
    add_slide takes quadratic time)."""
    deck = Presentation()
    deck.slides.add_slide(deck.slide_layouts[BLANK])
    data = pptx_bytes(deck)
    source = zipfile.ZipFile(io.BytesIO(data))
    slide, relations = (
        source.read("ppt/slides/slide1.xml"),
        source.read("ppt/slides/_rels/slide1.xml.rels"),
    )
    types, rels = source.read("[Content_Types].xml"), source.read("ppt/_rels/presentation.xml.rels")
    main = source.read("ppt/presentation.xml")
    slide_type = b"application/vnd.openxmlformats-officedocument.presentationml.slide+xml"
    slide_rel = b"http://schemas.openxmlformats.org/officeDocument/2006/relationships/slide"
    entries, overrides, relationships, ids = {}, [], [], []
    for number in range(2, count + 1):
        entries[f"ppt/slides/slide{number}.xml"] = slide
        entries[f"ppt/slides/_rels/slide{number}.xml.rels"] = relations
        overrides.append(
            b'<Override PartName="/ppt/slides/slide%d.xml" ContentType="%s"/>'
            % (number, slide_type)
        )
        relationships.append(
            b'<Relationship Id="rIdMany%d" Type="%s" Target="slides/slide%d.xml"/>'
            % (number, slide_rel, number)
        )
        ids.append(b'<p:sldId id="%d" r:id="rIdMany%d"/>' % (1000 + number, number))
    entries["[Content_Types].xml"] = types.replace(b"</Types>", b"".join(overrides) + b"</Types>")
    entries["ppt/_rels/presentation.xml.rels"] = rels.replace(
        b"</Relationships>", b"".join(relationships) + b"</Relationships>"
    )
    entries["ppt/presentation.xml"] = main.replace(
        b"</p:sldIdLst>", b"".join(ids) + b"</p:sldIdLst>"
    )
    return replace_zip_entries(data, entries)


def test_thousands_of_empty_slides_end_quickly_as_empty() -> None:
    data = many_blank_slides(3000)
    started = time.monotonic()
    with (
        ExtractionPool(ExtractSettings(workers=1)) as pool,
        pytest.raises(ExtractionFailed) as caught,
    ):
        pool.extract(data, PPTX)
    assert caught.value.reason is FailureReason.EMPTY
    assert time.monotonic() - started < 30


def test_thousands_of_slides_with_text_keep_their_numbers() -> None:
    deck = Presentation()
    add_text_box(deck.slides.add_slide(deck.slide_layouts[BLANK]), "The very last slide", top=3)
    with_text = zipfile.ZipFile(io.BytesIO(pptx_bytes(deck))).read("ppt/slides/slide1.xml")
    data = replace_zip_entries(many_blank_slides(2000), {"ppt/slides/slide2000.xml": with_text})
    extracted = extract(data)
    assert extracted.page_count == 2000
    assert outline(extracted) == [
        ("heading", 1, 2000, "Slide 2000"),
        ("paragraph", 0, 2000, "The very last slide"),
    ]


# -- ODP -----------------------------------------------------------------------------------------


def odp_bytes(document: OpenDocumentPresentation) -> bytes:
    buffer = io.BytesIO()
    document.write(buffer)
    return buffer.getvalue()


def odp_frame(
    paragraphs: list[str] | None = None, *, y: float, x: float = 1, kind: str | None = None
) -> draw.Frame:
    frame = draw.Frame(width="20cm", height="2cm", x=f"{x}cm", y=f"{y}cm")
    if kind:
        frame.setAttrNS(PRESENTATIONNS, "class", kind)
    box = draw.TextBox()
    for words in paragraphs or []:
        box.addElement(text.P(text=words))
    frame.addElement(box)
    return frame


def odp_deck(*, hidden_second: bool = False) -> OpenDocumentPresentation:
    document = OpenDocumentPresentation()
    layout = style.PageLayout(name="Layout")
    document.automaticstyles.addElement(layout)
    master = style.MasterPage(name="Default", pagelayoutname=layout)
    document.masterstyles.addElement(master)
    hidden = style.Style(name="HiddenPage", family="drawing-page")
    properties = style.DrawingPageProperties()
    properties.setAttrNS(PRESENTATIONNS, "visibility", "hidden")
    hidden.addElement(properties)
    document.automaticstyles.addElement(hidden)

    first = draw.Page(name="page1", masterpagename=master)
    first.addElement(odp_frame(["Later text"], y=10))
    first.addElement(odp_frame(["Launch Plan"], y=1, kind="title"))
    outline_frame = odp_frame(y=4, kind="outline")
    items = text.List()
    for words in ("Design", "Build"):
        item = text.ListItem()
        item.addElement(text.P(text=words))
        items.addElement(item)
    outline_frame.firstChild.addElement(items)
    first.addElement(outline_frame)
    notes = presentation.Notes()
    notes.addElement(draw.PageThumbnail())
    notes.addElement(odp_frame(["Speak slowly."], y=12, kind="notes"))
    first.addElement(notes)
    document.presentation.addElement(first)

    second = draw.Page(name="Risks", masterpagename=master)
    if hidden_second:
        second.setAttrNS(draw.DRAWNS, "style-name", "HiddenPage")
    second.addElement(odp_frame(["Budget overrun"], y=3))
    document.presentation.addElement(second)

    third = draw.Page(name="page3", masterpagename=master)
    grid_frame = draw.Frame(width="10cm", height="4cm", x="1cm", y="8cm")
    grid = table.Table()
    for values in (("Risk", "Owner"), ("Delay", "Ops")):
        row = table.TableRow()
        for value in values:
            cell = table.TableCell()
            cell.addElement(text.P(text=value))
            row.addElement(cell)
        grid.addElement(row)
    grid_frame.addElement(grid)
    third.addElement(grid_frame)
    group = draw.G()
    group.addElement(odp_frame(["Lower in the group"], y=6))
    group.addElement(odp_frame(["Upper in the group"], y=5))
    third.addElement(group)
    third.addElement(odp_frame(["Questions?"], y=3))
    document.presentation.addElement(third)
    return document


def test_odp_slides_titles_lists_and_notes() -> None:
    extracted = extract(odp_bytes(odp_deck(hidden_second=True)), ODP)
    assert outline(extracted) == [
        ("heading", 1, 1, "Launch Plan"),
        ("list_item", 0, 1, "Design"),
        ("list_item", 0, 1, "Build"),
        ("paragraph", 0, 1, "Later text"),
        ("heading", 2, 1, "Notes"),
        ("paragraph", 0, 1, "Speak slowly."),
        ("heading", 1, 2, "Risks (hidden slide)"),  # a name a person gave the slide
        ("paragraph", 0, 2, "Budget overrun"),
        ("heading", 1, 3, "Slide 3"),  # "page3" is the application's name for it
        ("paragraph", 0, 3, "Questions?"),
        ("paragraph", 0, 3, "Upper in the group"),
        ("paragraph", 0, 3, "Lower in the group"),
        ("table", 0, 3, "Risk | Owner\nDelay | Ops"),
    ]
    assert extracted.elements[-1].header == "Risk | Owner"
    assert extracted.kind == "odp" and extracted.page_count == 3
    assert extracted.title == "Launch Plan"
    assert extracted.metadata["slides"] == "3"


def test_odp_meta_title_wins() -> None:
    from odf import dc

    document = odp_deck()
    document.meta.addElement(dc.Title(text="Launch of the year"))
    document.meta.addElement(dc.Creator(text="Grace Hopper"))
    extracted = extract(odp_bytes(document), ODP)
    assert extracted.title == "Launch of the year"
    assert extracted.metadata["author"] == "Grace Hopper"


def test_odp_without_text_is_empty() -> None:
    document = odp_deck()
    for page in list(document.presentation.childNodes):
        document.presentation.removeChild(page)
    document.presentation.addElement(draw.Page(name="page1", masterpagename="Default"))
    assert failure(odp_bytes(document), ODP) == "empty"


def test_odp_truncated_is_corrupt() -> None:
    data = odp_bytes(odp_deck())
    assert failure(data[: len(data) // 2], ODP) == "corrupt"


def test_odp_zip_bomb_is_too_large() -> None:
    data = replace_zip_entries(odp_bytes(odp_deck()), {"Pictures/pad.bin": bytes(50 * MB)})
    assert failure(data, ODP, ExtractSettings(max_expanded_bytes=10 * MB)) == "too_large"


def test_odp_encrypted_package_is_encrypted() -> None:
    manifest = (
        b'<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0">'
        b'<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml">'
        b'<manifest:encryption-data manifest:checksum-type="SHA1/1K" manifest:checksum="AA==">'
        b'<manifest:algorithm manifest:algorithm-name="Blowfish CFB" '
        b'manifest:initialisation-vector="AA=="/></manifest:encryption-data>'
        b"</manifest:file-entry></manifest:manifest>"
    )
    data = replace_zip_entries(
        odp_bytes(odp_deck()), {"META-INF/manifest.xml": manifest, "content.xml": b"\x8f\x02"}
    )
    assert failure(data, ODP) == "encrypted"


# -- the real decks ------------------------------------------------------------------------------

REAL = [
    ("pptx/shapecrawler-050-title-and-notes.pptx", "Eastern Maine medical center"),
    ("pptx/shapecrawler-038-russian-notes.pptx", "Хотелось бы обратить Ваше внимание"),
    ("pptx/python-pptx-tbl-cell.pptx", "vert anchor is inherited"),
    ("odp/odfpy-cols.odp", "Sed ut est elit"),
    ("odp/odfpy-ol.odp", "Eins"),
]


def read(folder: Path, name: str) -> Extracted:
    return extract(folder.joinpath(name).read_bytes(), PurePath(name))


@pytest.mark.parametrize(("name", "phrase"), REAL, ids=[name for name, _ in REAL])
def test_real_decks_hold_their_phrase(shared_formats: Path, name: str, phrase: str) -> None:
    assert phrase in read(shared_formats, name).text


def test_real_deck_title_line_break_and_notes(shared_formats: Path) -> None:
    extracted = read(shared_formats, "pptx/shapecrawler-050-title-and-notes.pptx")
    assert outline(extracted) == [
        ("heading", 1, 1, "Ambulatory CDI Eastern Maine medical center (hidden slide)"),
        ("heading", 2, 1, "Notes"),
        ("paragraph", 0, 1, "Initially the “A” team but now the 3 Amigos"),
    ]
    assert extracted.title == "Ambulatory CDI - EMMC"
    assert extracted.metadata["author"] == "Reid, Mandy"


def test_real_russian_notes_keep_their_slide(shared_formats: Path) -> None:
    extracted = read(shared_formats, "pptx/shapecrawler-038-russian-notes.pptx")
    kinds = outline(extracted)
    notes_at = kinds.index(("heading", 2, 1, "Notes"))
    (note,) = extracted.elements[notes_at + 1 :]  # a bulleted paragraph
    assert note.page == 1 and note.text.startswith("Хотелось бы обратить Ваше внимание")
    assert "ГКУ ЦОДД – согласование схемы размещения" in extracted.text
    assert extracted.title is None  # "PowerPoint Presentation" is the application's


def test_real_tables_cells_and_headers(shared_formats: Path) -> None:
    extracted = read(shared_formats, "pptx/python-pptx-tbl-cell.pptx")
    tables = [e for e in extracted.elements if e.kind is ElementKind.TABLE]
    assert [grid.page for grid in tables] == [1, 2, 2, 3]
    assert tables[0].header == (
        "having custom margins | vert anchor is inherited | vert anchor is top"
        " | vert anchor is bottom"
    )
    assert tables[0].text.splitlines()[1] == "unladen swallows"
    assert tables[1].text == "merged cell"  # a 2x2 merged cell, once
    assert tables[3].text == "a | b | c\nd | e | f\ng | h | i"


def test_real_odp_reading_order_and_nested_list(shared_formats: Path) -> None:
    columns = read(shared_formats, "odp/odfpy-cols.odp")
    texts = [e.text[:2] for e in columns.elements[1:]]
    assert texts[:3] == ["Co"] * 3
    # The column headings, top row, left to right; then the first row of boxes.
    assert [e.text for e in columns.elements[1:4]] == ["Col 1", "Col 2", "Col 3"]
    assert texts[3:6] == ["11", "21", "31"]
    listed = read(shared_formats, "odp/odfpy-ol.odp")
    assert outline(listed)[:4] == [
        ("heading", 1, 1, "OL"),
        ("list_item", 0, 1, "Eins"),
        ("list_item", 0, 1, "Tsvey"),
        ("list_item", 0, 1, "Dray"),
    ]
    assert listed.title == "OL"
