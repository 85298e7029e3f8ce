"""Spreadsheets and delimited tables (lorebase.extract.sheets): each sheet a section of row
tables whose lines are row numbers, values as a reader sees them, hidden sheets marked, and
every bad input ending in a clear reason. Workbooks are written in the test (openpyxl, or
the XML by hand where openpyxl cannot say it); the real files are in ../shared/data/formats."""

from __future__ import annotations

import datetime as dt
import io
import re
import time
import zipfile
from pathlib import Path, PurePath

import openpyxl  # type: ignore[import-untyped]
import pytest
from openpyxl.chart import BarChart  # type: ignore[import-untyped]
from openpyxl.comments import Comment  # type: ignore[import-untyped]

from lorebase.chunk import chunk_document
from lorebase.errors import ExtractionFailed
from lorebase.extract.registry import extract_bytes
from lorebase.extract.sandbox import ExtractionPool
from lorebase.extract.sheets import sniff_delimiter
from lorebase.extract.sheets_cells import clean_cell, number_text, value_text
from lorebase.settings import MB, ChunkSettings, ExtractSettings
from lorebase.types import ElementKind, Extracted, FailureReason

SETTINGS = ExtractSettings()
SHEET_PART = "xl/worksheets/sheet1.xml"
MAIN_NS = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"


def extract(data: bytes, name: str, settings: ExtractSettings = SETTINGS) -> Extracted:
    extracted = extract_bytes(data, PurePath(name), settings)
    for element in extracted.elements:
        assert extracted.text[element.start : element.end] == element.text
    return extracted


def failure(data: bytes, name: str, settings: ExtractSettings = SETTINGS) -> FailureReason:
    with pytest.raises(ExtractionFailed) as failed:
        extract_bytes(data, PurePath(name), settings)
    return failed.value.reason


def shape(extracted: Extracted) -> list[tuple[str, int | None, str]]:
    return [(e.kind.value, e.line, e.text) for e in extracted.elements]


def saved(workbook: openpyxl.Workbook) -> bytes:
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


def one_sheet(rows: dict[str, object], title: str = "Data") -> bytes:
    """A workbook of one sheet with ``rows`` as ``{"A1": value, ...}``."""
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet.title = title
    for reference, value in rows.items():
        sheet[reference] = value
    return saved(workbook)


def with_parts(data: bytes, parts: dict[str, bytes]) -> bytes:
    """A copy of a zip package with some parts replaced or added."""
    source = zipfile.ZipFile(io.BytesIO(data))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as target:
        for entry in source.infolist():
            if entry.filename not in parts:
                target.writestr(entry, source.read(entry))
        for name, content in parts.items():
            target.writestr(name, content)
    return buffer.getvalue()


def sheet_xml(cells: str, head: str = "") -> bytes:
    """A worksheet part: ``head`` (e.g. a dimension) then ``cells`` as sheetData's rows."""
    return (
        f'<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="{MAIN_NS}">{head}'
        f"<sheetData>{cells}</sheetData></worksheet>"
    ).encode()


def text_cell(reference: str, text: str) -> str:
    return f'<c r="{reference}" t="inlineStr"><is><t>{text}</t></is></c>'


# -- xlsx: layout ---------------------------------------------------------------------------------


def test_each_sheet_is_a_section_of_row_tables_under_its_header() -> None:
    workbook = openpyxl.Workbook()
    q3 = workbook.active
    q3.title = "Q3"
    q3.append(["Region", "Amount", None, None])  # trailing empty cells are dropped
    q3.append(["North", 12])
    q3.append(["South\nand  islands", 7.5])
    q3.append([])  # an empty row ends a table
    q3.append(["East", 3])
    workbook.create_sheet("Q4").append(["Only", "row"])
    extracted = extract(saved(workbook), "budget.xlsx")
    assert shape(extracted) == [
        ("heading", None, "Q3"),
        ("table", 1, "Region | Amount\nNorth | 12\nSouth and  islands | 7.5"),
        ("table", 5, "East | 3"),
        ("heading", None, "Q4"),
        ("table", 1, "Only | row"),
    ]
    headers = [e.header for e in extracted.elements if e.kind is ElementKind.TABLE]
    assert headers == ["Region | Amount", "Region | Amount", "Only | row"]
    assert extracted.elements[0].level == 1
    assert extracted.kind == "xlsx" and extracted.metadata["sheets"] == ("Q3", "Q4")


def test_values_read_as_a_sheet_shows_them() -> None:
    row = [1, 1.0, 0.1 + 0.2, 2.5e20, True, dt.date(2024, 3, 1), dt.datetime(2024, 3, 1, 14, 30)]
    workbook = openpyxl.Workbook()
    workbook.active.append(row)
    text = extract(saved(workbook), "v.xlsx").elements[1].text
    assert text == "1 | 1 | 0.3 | 2.5e+20 | TRUE | 2024-03-01 | 2024-03-01 14:30:00"


def test_cell_values_as_text() -> None:
    assert [number_text(v) for v in (1.0, -0.0, 0.1 + 0.2, 1 / 3, 1e20)] == [
        "1",
        "0",
        "0.3",
        "0.333333333333333",
        "1e+20",
    ]
    assert value_text(dt.timedelta(hours=30, minutes=5)) == "30:05:00"
    assert value_text(dt.time(9, 15)) == "09:15:00"
    assert value_text(dt.datetime(2024, 3, 1)) == "2024-03-01"
    assert value_text(None) == "" and value_text(False) == "FALSE"
    assert clean_cell(" a\n\tb   c \x01") == "a b   c"  # spaces kept, breaks collapsed


def test_rows_keep_their_numbers_where_the_data_starts_further_down() -> None:
    data = one_sheet({"C5": "Name", "D5": "Score", "C6": "Ada", "D6": 9, "D9": 4})
    extracted = extract(data, "offset.xlsx")
    assert shape(extracted)[1:] == [("table", 5, "Name | Score\nAda | 9"), ("table", 9, "| 4")]


def test_chunks_of_a_long_sheet_cite_their_rows() -> None:
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet.append(["row", "text"])
    for number in range(2, 400):
        if number % 97:  # gaps split the sheet into several tables
            sheet.append([f"r{number}", "lorem ipsum dolor sit amet " * 3])
        else:
            sheet.append([])
    extracted = extract(saved(workbook), "long.xlsx")
    chunks = chunk_document(extracted, ChunkSettings(chunk_size=400, max_tokens=200, overlap=0))
    assert len(chunks) > 20
    for chunk in chunks:
        rows = chunk.text.split("\n")
        if chunk.position.line == 1:
            assert rows[0] == "row | text"
            continue
        if rows[0] == "row | text":  # the header the chunker repeats before a piece
            rows = rows[1:]
        numbers = [int(row.split(" | ")[0].removeprefix("r")) for row in rows]
        assert chunk.position.line == numbers[0]
        assert (chunk.position.line_end or numbers[0]) == numbers[-1]


def test_hidden_sheets_are_read_and_marked_and_chart_sheets_skipped() -> None:
    workbook = openpyxl.Workbook()
    workbook.active.title = "Shown"
    workbook.active["A1"] = "visible text"
    hidden = workbook.create_sheet("Rates")
    hidden["A1"] = "hidden text"
    hidden.sheet_state = "hidden"
    secret = workbook.create_sheet("Keys")
    secret["A1"] = "very hidden text"
    secret.sheet_state = "veryHidden"
    workbook.create_sheet("Empty")
    workbook.create_chartsheet("Chart").add_chart(BarChart())
    extracted = extract(saved(workbook), "h.xlsx")
    headings = [e.text for e in extracted.elements if e.kind is ElementKind.HEADING]
    assert headings == ["Shown", "Rates (hidden sheet)", "Keys (very hidden sheet)"]
    assert "very hidden text" in extracted.text
    assert extracted.metadata["sheets"] == (
        "Shown",
        "Rates (hidden sheet)",
        "Keys (very hidden sheet)",
        "Empty",
    )


def test_title_and_metadata_from_the_core_properties() -> None:
    workbook = openpyxl.Workbook()
    workbook.active["A1"] = "x"
    workbook.properties.title = "Budget 2024"
    workbook.properties.creator = "Ada Lovelace"
    workbook.properties.created = dt.datetime(2024, 1, 2, 3, 4, 5)
    extracted = extract(saved(workbook), "p.xlsx")
    assert extracted.title == "Budget 2024"
    assert extracted.metadata["author"] == "Ada Lovelace"
    assert extracted.metadata["title"] == "Budget 2024"
    assert extracted.metadata["created"] == "2024-01-02T03:04:05Z"
    assert "modified" in extracted.metadata


def test_no_core_title_means_no_title() -> None:
    assert extract(one_sheet({"A1": "x"}), "t.xlsx").title is None


def test_comments_follow_the_sheet_at_their_row() -> None:
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet.append(["Item", "Cost"])
    sheet.append(["Paper", 3])
    sheet["B2"].comment = Comment("Checked by\nfinance", "Ada")
    extracted = extract(saved(workbook), "c.xlsx")
    assert shape(extracted)[-1] == ("paragraph", 2, "Comment on B2: Checked by finance")


def test_formulas_give_their_cached_values_never_their_text() -> None:
    cells = (
        '<row r="1"><c r="A1" t="str"><f>CONCATENATE("a","b")</f><v>ab</v></c>'
        '<c r="B1"><f>1+1</f><v>2</v></c><c r="C1" t="b"><f>A1=A1</f><v>1</v></c></row>'
    )
    data = with_parts(one_sheet({"A1": "placeholder"}), {SHEET_PART: sheet_xml(cells)})
    extracted = extract(data, "f.xlsx")
    assert extracted.elements[1].text == "ab | 2 | TRUE"
    assert "CONCATENATE" not in extracted.text


def test_xlsm_reads_like_xlsx() -> None:
    assert extract(one_sheet({"A1": "macro book"}), "m.xlsm").elements[1].text == "macro book"


# -- xlsx: bad input ------------------------------------------------------------------------------


def test_a_dimension_claiming_a_million_rows_reads_the_few_cells_at_once() -> None:
    head = '<dimension ref="A1:XFD1048576"/>'
    cells = f'<row r="1">{text_cell("A1", "first")}</row><row r="3">{text_cell("B3", "x")}</row>'
    data = with_parts(one_sheet({"A1": "-"}), {SHEET_PART: sheet_xml(cells, head)})
    started = time.monotonic()
    extracted = extract(data, "claims.xlsx")
    assert time.monotonic() - started < 5
    assert shape(extracted)[1:] == [("table", 1, "first"), ("table", 3, "| x")]


def test_cells_far_apart_are_streamed_not_laid_out_as_a_grid() -> None:
    # calamine would allocate the 16384 x 1048576 grid between them, and abort on failing.
    cells = (
        f'<row r="1">{text_cell("A1", "top left")}</row>'
        f'<row r="1048576">{text_cell("XFD1048576", "bottom right")}</row>'
    )
    data = with_parts(one_sheet({"A1": "-"}), {SHEET_PART: sheet_xml(cells)})
    started = time.monotonic()
    extracted = extract(data, "corners.xlsx")
    assert time.monotonic() - started < 10
    assert shape(extracted)[1:] == [
        ("table", 1, "top left"),
        ("table", 1048576, "… | bottom right"),
    ]


def test_cells_without_references_are_placed_by_their_order() -> None:
    cells = (
        '<row><c t="inlineStr"><is><t>a</t></is></c><c><v>2</v></c></row>'
        '<row r="4"><c><v>3</v></c><c r="D4"><v>4</v></c></row>'
    )
    data = with_parts(one_sheet({"A1": "-"}), {SHEET_PART: sheet_xml(cells)})
    assert shape(extract(data, "norefs.xlsx"))[1:] == [
        ("table", 1, "a | 2"),
        ("table", 4, "3 |  |  | 4"),
    ]


def test_a_password_protected_workbook_is_encrypted() -> None:
    # What Excel writes for a password: an OLE compound file holding an EncryptedPackage.
    ole = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(504)
    ole += "EncryptedInfo".encode("utf-16-le") + bytes(50)
    ole += "EncryptedPackage".encode("utf-16-le") + bytes(2000)
    assert failure(ole, "locked.xlsx") is FailureReason.ENCRYPTED
    assert failure(ole.replace(b"P\x00a\x00c", b"X\x00X\x00X"), "old.xlsx") is FailureReason.CORRUPT


def test_a_zip_bomb_is_too_large() -> None:
    data = with_parts(one_sheet({"A1": "x"}), {"xl/media/padding.bin": bytes(50 * MB)})
    assert failure(data, "bomb.xlsx", ExtractSettings(max_expanded_bytes=10 * MB)) is (
        FailureReason.TOO_LARGE
    )
    assert failure(data, "bomb.xlsx") is FailureReason.TOO_LARGE  # the ratio alone


def test_a_truncated_workbook_is_corrupt() -> None:
    data = one_sheet({"A1": "x"})
    assert failure(data[: len(data) // 2], "cut.xlsx") is FailureReason.CORRUPT
    assert failure(b"not a zip at all", "fake.xlsx") is FailureReason.CORRUPT


def test_a_damaged_sheet_is_corrupt() -> None:
    cells = f'<row r="1">{text_cell("A1", "x")}</row><row r="2"><c r="B2"><v>1<'
    data = with_parts(one_sheet({"A1": "x"}), {SHEET_PART: sheet_xml(cells)[:-30]})
    assert failure(data, "damaged.xlsx") is FailureReason.CORRUPT


def test_a_workbook_without_cells_is_empty() -> None:
    workbook = openpyxl.Workbook()
    workbook.create_sheet("Second")
    assert failure(saved(workbook), "empty.xlsx") is FailureReason.EMPTY


def test_an_enormous_cell_is_too_large() -> None:
    data = one_sheet({"A1": "header", "A2": "x" * 30_000})
    assert failure(data, "big.xlsx", ExtractSettings(max_text_chars=20_000)) is (
        FailureReason.TOO_LARGE
    )


def test_bad_workbooks_end_in_reasons_inside_the_worker() -> None:
    corners = (
        f'<row r="1">{text_cell("A1", "top left")}</row>'
        f'<row r="1048576">{text_cell("XFD1048576", "bottom right")}</row>'
    )
    sparse = with_parts(one_sheet({"A1": "-"}), {SHEET_PART: sheet_xml(corners)})
    bomb = with_parts(one_sheet({"A1": "x"}), {"xl/media/padding.bin": bytes(50 * MB)})
    with ExtractionPool(ExtractSettings(workers=1)) as pool:
        assert "bottom right" in pool.extract(sparse, PurePath("corners.xlsx")).text
        with pytest.raises(ExtractionFailed) as failed:
            pool.extract(bomb, PurePath("bomb.xlsx"))
        assert failed.value.reason is FailureReason.TOO_LARGE
        assert pool.extract(one_sheet({"A1": "still here"}), PurePath("a.xlsx")).text.endswith(
            "still here"
        )


# -- ods ------------------------------------------------------------------------------------------

ODS_NS = (
    'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
    'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
    'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
    'xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0" '
    'xmlns:meta="urn:oasis:names:tc:opendocument:xmlns:meta:1.0" '
    'xmlns:dc="http://purl.org/dc/elements/1.1/"'
)
HIDDEN_STYLE = (
    '<style:style style:name="ta2" style:family="table">'
    '<style:table-properties table:display="false"/></style:style>'
)


def ods(tables: str, styles: str = "", meta: str = "", manifest: str = "") -> bytes:
    """An ODS package: ``tables`` inside office:spreadsheet, ``meta`` inside office:meta."""
    content = (
        f'<?xml version="1.0" encoding="UTF-8"?><office:document-content {ODS_NS}>'
        f"<office:automatic-styles>{styles}</office:automatic-styles>"
        f"<office:body><office:spreadsheet>{tables}</office:spreadsheet></office:body>"
        "</office:document-content>"
    )
    meta_xml = (
        f"<office:document-meta {ODS_NS}><office:meta>{meta}</office:meta></office:document-meta>"
    )
    manifest_xml = (
        '<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0">'
        f'<manifest:file-entry manifest:full-path="content.xml">{manifest}</manifest:file-entry>'
        "</manifest:manifest>"
    )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as package:
        package.writestr("mimetype", "application/vnd.oasis.opendocument.spreadsheet")
        package.writestr("content.xml", content)
        package.writestr("meta.xml", meta_xml)
        package.writestr("META-INF/manifest.xml", manifest_xml)
    return buffer.getvalue()


def table(name: str, rows: str, style: str = "ta1") -> str:
    return f'<table:table table:name="{name}" table:style-name="{style}">{rows}</table:table>'


def row(*cells: str, repeat: int = 1) -> str:
    return (
        f'<table:table-row table:number-rows-repeated="{repeat}">{"".join(cells)}</table:table-row>'
    )


def cell(text: str = "", attributes: str = "", inner: str = "") -> str:
    paragraph = f"<text:p>{text}</text:p>" if text else ""
    return f"<table:table-cell {attributes}>{inner}{paragraph}</table:table-cell>"


def test_ods_sheets_rows_values_and_repeats() -> None:
    rows = (
        row(cell("Name"), cell("Share"), cell("Since"), cell("Time"), cell("Ok"))
        + row(
            cell("Ada  <text:s text:c='2'/>Lovelace<text:line-break/>jr", ""),
            cell("25 %", 'office:value-type="percentage" office:value="0.25"'),
            cell("01/03/24", 'office:value-type="date" office:date-value="2024-03-01T00:00:00"'),
            cell("36:00", 'office:value-type="time" office:time-value="PT36H00M00S"'),
            cell("yes", 'office:value-type="boolean" office:boolean-value="true"'),
            '<table:table-cell table:number-columns-repeated="16000"/>',
        )
        + row(cell("same", 'table:number-columns-repeated="2"'), repeat=2)
        + row('<table:table-cell table:number-columns-repeated="1024"/>', repeat=1048000)
    )
    extracted = extract(ods(table("People", rows)), "p.ods")
    assert shape(extracted) == [
        ("heading", None, "People"),
        (
            "table",
            1,
            "Name | Share | Since | Time | Ok\n"
            "Ada   Lovelace jr | 0.25 | 2024-03-01 | 36:00:00 | TRUE\n"
            "same | same\nsame | same",
        ),
    ]
    assert extracted.elements[1].header == "Name | Share | Since | Time | Ok"


def test_ods_formulas_give_their_cached_results() -> None:
    rows = row(
        cell(
            "ab",
            'table:formula="of:=CONCATENATE(&quot;a&quot;;&quot;b&quot;)" '
            'office:value-type="string"',
        ),
        cell("", 'table:formula="of:=1+1" office:value-type="float" office:value="2"'),
        cell("", 'office:value-type="string" office:string-value="from the attribute"'),
    )
    assert extract(ods(table("S", rows)), "f.ods").elements[1].text == (
        "ab | 2 | from the attribute"
    )


def test_ods_gaps_hidden_sheets_and_annotations() -> None:
    note = (
        "<office:annotation><dc:creator>Ada</dc:creator>"
        "<text:p>Check this</text:p></office:annotation>"
    )
    first = row(cell("top")) + row(repeat=5) + row(cell(), cell("seventh", inner=note))
    second = row(cell("secret"))
    data = ods(table("One", first) + table("Two", second, style="ta2"), styles=HIDDEN_STYLE)
    extracted = extract(data, "g.ods")
    assert shape(extracted) == [
        ("heading", None, "One"),
        ("table", 1, "top"),
        ("table", 7, "| seventh"),
        ("paragraph", 7, "Comment on B7: Check this"),
        ("heading", None, "Two (hidden sheet)"),
        ("table", 1, "secret"),
    ]


def test_ods_title_and_metadata() -> None:
    meta = (
        "<dc:title>Stats</dc:title><meta:initial-creator>Ada</meta:initial-creator>"
        "<dc:creator>Bob</dc:creator><meta:creation-date>2024-01-02T03:04:05</meta:creation-date>"
        "<dc:date>2024-02-03T04:05:06</dc:date>"
    )
    extracted = extract(ods(table("S", row(cell("x"))), meta=meta), "m.ods")
    assert extracted.title == "Stats"
    assert dict(extracted.metadata) == {
        "title": "Stats",
        "author": "Ada",
        "created": "2024-01-02T03:04:05",
        "modified": "2024-02-03T04:05:06",
        "sheets": ("S",),
    }


def test_ods_bad_input() -> None:
    encrypted = ods(table("S", row(cell("x"))), manifest="<manifest:encryption-data/>")
    assert failure(encrypted, "locked.ods") is FailureReason.ENCRYPTED
    data = ods(table("S", row(cell("x"))))
    assert failure(data[: len(data) // 2], "cut.ods") is FailureReason.CORRUPT
    assert failure(ods(table("S", row(cell())) + table("T", "")), "e.ods") is FailureReason.EMPTY
    bomb = with_parts(data, {"Pictures/padding.bin": bytes(50 * MB)})
    assert failure(bomb, "bomb.ods") is FailureReason.TOO_LARGE
    big = ods(table("S", row(cell("x" * 30_000))))
    assert (
        failure(big, "big.ods", ExtractSettings(max_text_chars=20_000)) is FailureReason.TOO_LARGE
    )


def test_an_ods_row_repeated_without_end_is_bounded() -> None:
    data = ods(table("S", row(cell("x" * 50, 'table:number-columns-repeated="100"'), repeat=10**9)))
    started = time.monotonic()
    assert failure(data, "r.ods", ExtractSettings(max_text_chars=5 * MB)) is FailureReason.TOO_LARGE
    assert time.monotonic() - started < 10


# -- csv ------------------------------------------------------------------------------------------


def csv_of(text: str, name: str = "data.csv") -> Extracted:
    return extract(text.encode("utf-8"), name)


def test_csv_is_one_table_under_its_header_with_file_lines() -> None:
    extracted = csv_of("\nname,qty\nbolt,3\nnut,5\n\nwasher,7\n")
    assert extracted.kind == "csv" and extracted.title is None
    assert shape(extracted) == [
        ("table", 2, "name | qty\nbolt | 3\nnut | 5"),
        ("table", 6, "washer | 7"),
    ]
    assert {e.header for e in extracted.elements} == {"name | qty"}


def test_a_quoted_field_over_lines_is_one_row_and_the_next_row_keeps_its_line() -> None:
    extracted = csv_of('name,notes\nbolt,"line one\nline two, still"\nnut,plain\nwasher,x\n')
    assert shape(extracted) == [
        ("table", 1, "name | notes\nbolt | line one line two, still"),
        ("table", 4, "nut | plain\nwasher | x"),
    ]


def test_every_record_over_several_lines_starts_at_its_own_line() -> None:
    rows = ["name,notes"] + [f'item{i},"multi\nline {i}"' for i in range(60)]
    tables = csv_of("\n".join(rows) + "\n").elements
    assert tables[0].text == "name | notes\nitem0 | multi line 0"
    assert [t.line for t in tables[1:]] == [2 + 2 * i for i in range(1, 60)]
    assert all(t.header == "name | notes" for t in tables)


def test_delimiters_are_sniffed_and_tsv_is_tabs() -> None:
    assert csv_of("a;b;c\n1,5;2,5;x\n").elements[0].text == "a | b | c\n1,5 | 2,5 | x"
    assert csv_of("a|b\n1|2\n").elements[0].text == "a | b\n1 | 2"
    assert csv_of("a\tb\n1\t2\n").elements[0].text == "a | b\n1 | 2"
    assert csv_of("a,b\n1,2\n", "x.tsv").elements[0].text == "a,b\n1,2"
    assert csv_of("only,header\n").elements[0].text == "only | header"
    assert csv_of("one column\nvalue\n").elements[0].text == "one column\nvalue"
    assert sniff_delimiter('"x, y";z\n"a, b";c\n') == ";"


def test_ragged_rows_are_kept() -> None:
    extracted = csv_of("a,b,c\n1,2,3,4,5\n6\n7,8,,\n")
    assert extracted.elements[0].text == "a | b | c\n1 | 2 | 3 | 4 | 5\n6\n7 | 8"


def test_legacy_encodings_and_byte_order_marks() -> None:
    latin = "nom;ville\nRené;Besançon\nZoë;Orléans\n".encode("cp1252")
    extracted = extract(latin, "fr.csv")
    assert extracted.encoding == "cp1252"
    assert extracted.elements[0].text == "nom | ville\nRené | Besançon\nZoë | Orléans"
    bom = extract("\ufeffid,name\n1,Zoë\n".encode("utf-8-sig"), "b.csv")
    assert bom.elements[0].header == "id | name"


def test_a_nul_byte_is_dropped_and_binary_is_corrupt() -> None:
    rows = "".join(f"item {n},{n}\n" for n in range(50))
    extracted = extract(f"name,qty\nbo\x00lt,3\n{rows}".encode(), "nul.csv")
    assert extracted.elements[0].text.startswith("name | qty\nbolt | 3\nitem 0 | 0")
    assert failure(bytes(range(256)) * 40, "binary.csv") is FailureReason.CORRUPT


def test_an_enormous_field_is_too_large() -> None:
    data = ('a,b\n1,"' + "x" * 300_000 + '"\n').encode()
    assert failure(data, "huge.csv", ExtractSettings(max_text_chars=100_000)) is (
        FailureReason.TOO_LARGE
    )
    assert "x" * 300_000 in extract(data, "huge.csv").text  # over the csv module's 128 KB


def test_a_csv_of_blank_lines_is_empty() -> None:
    assert failure(b",,\n\n , \n", "blank.csv") is FailureReason.EMPTY


# -- the real files -------------------------------------------------------------------------------


def _sources(shared: Path) -> list[tuple[str, str]]:
    """(file, phrase) of every xlsx/ods/csv entry in SOURCES.txt."""
    found = []
    for line in (shared / "SOURCES.txt").read_text(encoding="utf-8").splitlines():
        name = line.split("\t", 1)[0]
        phrase = re.search(r'text: (?:header row )?"(.+?)"(?: \(|$)', line)
        if name.split("/")[0] in ("xlsx", "ods", "csv") and phrase:
            found.append((name, phrase.group(1)))
    return found


def test_every_real_spreadsheet_yields_its_phrase(shared_formats: Path) -> None:
    sources = _sources(shared_formats)
    assert len(sources) == 9
    for name, phrase in sources:
        path = shared_formats / name
        extracted = extract(path.read_bytes(), path.name)
        assert phrase in extracted.text, name


def test_real_hidden_sheets_formulas_and_tables(shared_formats: Path) -> None:
    hidden = extract(
        (shared_formats / "xlsx/calamine-any-sheets-hidden.xlsx").read_bytes(), "h.xlsx"
    )
    assert hidden.metadata["sheets"] == (
        "Visible",
        "Hidden (hidden sheet)",
        "VeryHidden (very hidden sheet)",
    )  # the chart sheet has no cells
    issues = extract(
        (shared_formats / "xlsx/calamine-issues-6sheets-formulas.xlsx").read_bytes(), "i.xlsx"
    )
    datatypes = issues.elements[1]
    assert datatypes.text == "1\n1.5\nab\nFALSE\ntest\n2016-10-20"
    assert "☺" in issues.text and "«" in issues.text
    tables = extract((shared_formats / "xlsx/calamine-table-multiple.xlsx").read_bytes(), "t.xlsx")
    assert tables.elements[1].text.startswith("Item | Type | Quantity\n1 | Apple | 50")


def test_real_ods_files(shared_formats: Path) -> None:
    spaces = extract(
        (shared_formats / "ods/calamine-special-cells-whitespace.ods").read_bytes(), "s.ods"
    )
    assert spaces.elements[1].text.split("\n")[:3] == [
        "Split Line",
        "Value  With spaces",
        "Value   With 3 spaces",
    ]
    notes = extract((shared_formats / "ods/calamine-with-annotation.ods").read_bytes(), "a.ods")
    assert shape(notes)[-1] == ("paragraph", 1, "Comment on A1: This is annotation of a.1")
    stats = extract((shared_formats / "ods/odfpy-countrystatistics.ods").read_bytes(), "c.ods")
    assert stats.metadata["sheets"] == ("Population", "HDI")
    assert "Austria | 8.3 | 83858 | 99" in stats.text


def test_real_csv_files(shared_formats: Path) -> None:
    ragged = extract((shared_formats / "csv/co2-mm-mlo-ragged.csv").read_bytes(), "co2.csv")
    rows = ragged.text.split("\n")
    assert len(rows) == 821 and rows[0].count(" | ") == 5
    assert rows[1] == "1958-03 | 1958.2027 | 315.71 | 314.44 | -01 | -9.99 | -0.99"
    french = extract((shared_formats / "csv/unsd-m49-fr.csv").read_bytes(), "fr.csv")
    assert "Algérie" in french.text and "Territoire britannique de l'océan Indien" in french.text
    assert "001 | Monde | 002 | Afrique" in french.text  # leading zeros are text
    countries = extract((shared_formats / "csv/country-codes.csv").read_bytes(), "cc.csv")
    assert countries.text.count("\n") == 249
