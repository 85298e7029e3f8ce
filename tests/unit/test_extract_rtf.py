"""RTF extraction: paragraphs, headings, lists and tables from the token stream, code pages
and Unicode decoded right, pictures and tables of fonts and styles left out, the info group as
title and metadata, and what a damaged or hostile file does."""

from __future__ import annotations

import time
from pathlib import Path, PurePath

import pytest

from lorebase.errors import ExtractionFailed
from lorebase.extract.registry import extract_bytes
from lorebase.extract.sandbox import ExtractionPool
from lorebase.settings import MB, ExtractSettings
from lorebase.types import ElementKind, Extracted, FailureReason

DOC = PurePath("letter.rtf")
HEAD = (
    rb"{\rtf1\ansi\ansicpg1252\deff0"
    rb"{\fonttbl{\f0\froman\fcharset0 Times New Roman;}{\f1\fswiss\fcharset204 Arial Cyr;}}"
    rb"{\colortbl;\red0\green0\blue0;\red255\green0\blue0;}"
    rb"{\stylesheet{\s0 Normal;}{\s1\outlinelevel0 heading 1;}{\s2 heading 2;}"
    rb"{\*\cs10 Default Paragraph Font;}}"
)


def rtf(body: bytes, head: bytes = HEAD) -> bytes:
    return head + body + b"}"


def extract(data: bytes) -> Extracted:
    extracted = extract_bytes(data, DOC, ExtractSettings())
    for element in extracted.elements:
        assert extracted.text[element.start : element.end] == element.text
    return extracted


def failure(data: bytes) -> ExtractionFailed:
    with pytest.raises(ExtractionFailed) as caught:
        extract(data)
    return caught.value


def outline(extracted: Extracted) -> list[tuple[str, int, str]]:
    return [(e.kind.value, e.level, e.text) for e in extracted.elements]


# -- structure -----------------------------------------------------------------------------------


def test_paragraphs_headings_and_list_items() -> None:
    body = (
        rb"\pard\s1 Chapter One\par"
        rb"\pard\plain First paragraph,\line second line.\par"
        rb"\pard\s2 A Section\par"
        rb"\pard\outlinelevel2 Deeper\par"
        rb"\pard\ls1\ilvl0{\listtext\f0 \'b7\tab}Bullet one\par"
        rb"{\pntext 2.\tab}Second item\par"
        rb"\pard Closing words.\par"
    )
    extracted = extract(rtf(body))
    assert outline(extracted) == [
        ("heading", 1, "Chapter One"),
        ("paragraph", 0, "First paragraph,\nsecond line."),
        ("heading", 2, "A Section"),
        ("heading", 3, "Deeper"),
        ("list_item", 0, "Bullet one"),
        ("list_item", 0, "Second item"),
        ("paragraph", 0, "Closing words."),
    ]
    assert extracted.title == "Chapter One"  # no \info title: the first level-1 heading
    assert extracted.kind == "rtf"


def test_table_rows_and_cells_with_a_header() -> None:
    row = rb"\trowd\cellx1000\cellx2000"
    body = (
        rb"\pard Before.\par"
        + row
        + rb"\pard\intbl Name\cell\pard\intbl Size\cell\row"
        + row
        + rb"\pard\intbl alpha\par more\cell\pard\intbl 1\cell\row"
        + rb"\pard After.\par"
    )
    extracted = extract(rtf(body))
    assert outline(extracted) == [
        ("paragraph", 0, "Before."),
        ("table", 0, "Name | Size\nalpha more | 1"),
        ("paragraph", 0, "After."),
    ]
    table = extracted.elements[1]
    assert table.header == "Name | Size"


def test_nested_table_is_a_table_of_its_own() -> None:
    nested_row = rb"{\*\nesttableprops\trowd\cellx500\cellx900\nestrow}{\nonesttables\par}"
    body = (
        rb"\pard Title\par"
        rb"\trowd\cellx1000\cellx2000"
        rb"\pard\intbl\itap2 Artery\nestcell\pard\intbl\itap2 Score\nestcell"
        + nested_row
        + rb"\pard\intbl\itap2 RCA\nestcell\pard\intbl\itap2 0\nestcell"
        + nested_row
        + rb"\pard\intbl\itap1\cell\pard\intbl side\cell\row\pard\par"
    )
    extracted = extract(rtf(body))
    assert outline(extracted) == [
        ("paragraph", 0, "Title"),
        ("table", 0, "Artery | Score\nRCA | 0"),
        ("table", 0, "| side"),  # the outer row: its first cell held the nested table
    ]


def test_hyperlink_text_is_kept_and_its_address_is_not() -> None:
    body = (
        rb"\pard See {\field{\*\fldinst {HYPERLINK \"https://example.org/x\"}}"
        rb"{\fldrslt {\ul the site}}} now.\par"
    )
    extracted = extract(rtf(body))
    assert extracted.text == "See the site now."


def test_footnotes_come_after_the_body_and_hidden_text_is_dropped() -> None:
    body = (
        rb"\pard Main text{\super\chftn}{\footnote\pard\plain{\super\chftn} The note.}"
        rb" goes on.{\v secret} End.\par\pard Last.\par"
    )
    extracted = extract(rtf(body))
    assert outline(extracted) == [
        ("paragraph", 0, "Main text goes on. End."),
        ("paragraph", 0, "Last."),
        ("paragraph", 0, "The note."),
    ]


def test_info_group_gives_title_and_metadata() -> None:
    info = (
        rb"{\info{\title Quarterly \'dcbersicht}{\author Erika Muster}{\subject Numbers}"
        rb"{\keywords q3, sales}{\*\company ACME GmbH}{\creatim\yr2020\mo6\dy4\hr15\min22}"
        rb"{\operator someone}{\nofpages2}}"
    )
    extracted = extract(rtf(info + rb"\pard Body.\par"))
    assert extracted.title == "Quarterly Übersicht"
    assert dict(extracted.metadata) == {
        "title": "Quarterly Übersicht",
        "author": "Erika Muster",
        "subject": "Numbers",
        "keywords": "q3, sales",
        "company": "ACME GmbH",
        "created": "2020-06-04T15:22",
    }
    assert extracted.text == "Body."


def test_tables_of_fonts_colours_and_styles_and_pictures_are_left_out() -> None:
    picture = rb"{\pict\pngblip\picw10\pich10 " + b"89504e470d0a1a0a" * 100 + b"}"
    shape = rb"{\*\shppict{\pict\emfblip 0100}}{\nonshppict{\pict\wmetafile8 0100}}"
    binary = rb"{\pict\bin6 {}{\}x}"
    body = rb"\pard Text " + picture + shape + binary + rb"after pictures.\par"
    extracted = extract(rtf(body))
    assert extracted.text == "Text after pictures."


# -- decoding ------------------------------------------------------------------------------------


def test_code_page_escapes_and_unicode() -> None:
    body = (
        rb"\pard Gr\'fc\'dfe aus K\'f6ln \'96 \'80\par"
        rb"\pard\uc1 Stra\u223?e, \u8364? und \u-10179?\u-8704?\par"
        rb"\pard\uc0 \u252\u246\par"
        rb"\pard\uc2 \u12354\'82\'a0!\par"
        rb"\pard\f1 \'cf\'f0\'e8\'e2\'e5\'f2\f0  ok\par"
    )
    assert extract(rtf(body)).text.split("\n\n") == [
        "Grüße aus Köln – €",
        "Straße, € und 😀",
        "üö",
        "あ!",
        "Привет ok",
    ]


def test_a_document_code_page_other_than_1252() -> None:
    head = rb"{\rtf1\ansi\ansicpg1251\deff0{\fonttbl{\f0 Arial;}}"
    assert extract(rtf(rb"\pard \'c4\'ee\'e1\'f0\'fb\'e9 \'e4\'e5\'ed\'fc\par", head)).text == (
        "Добрый день"
    )


def test_shift_jis_double_byte_escapes() -> None:
    head = rb"{\rtf1\ansi\ansicpg932\deff0{\fonttbl{\f0\fcharset128 MS Mincho;}}"
    assert extract(rtf(rb"\pard\f0 \'93\'fa\'96\'7b\par", head)).text == "日本"


def test_symbols_and_special_characters() -> None:
    body = rb"\pard a\~b\_c\-d \{x\} \\ \ldblquote q\rdblquote\emdash\bullet\par"
    assert extract(rtf(body)).text == "a b\u2011cd {x} \\ \u201cq\u201d\u2014\u2022"


# -- bad input -----------------------------------------------------------------------------------


def test_not_rtf_is_corrupt() -> None:
    assert failure(b"Hello, plain text pretending.").reason is FailureReason.CORRUPT
    assert failure(b"PK\x03\x04 zipped").reason is FailureReason.CORRUPT


def test_rtf_without_text_is_empty() -> None:
    assert failure(rtf(rb"{\pict 0102}\pard\par")).reason is FailureReason.EMPTY


def test_truncated_rtf_reads_what_is_there() -> None:
    data = rtf(rb"\pard First.\par\pard Second half is cut")[:-8]  # no closing braces
    assert extract(data).text == "First.\n\nSecond half"


def test_deep_nesting_and_stray_braces_do_not_crash() -> None:
    data = HEAD + b"{" * 50_000 + b"deep" + b"}" * 50_100 + rb"\pard after\par}"
    extracted = extract(data)
    assert "after" in extracted.text


def test_a_huge_embedded_picture_is_skipped_in_bounded_time() -> None:
    picture = rb"{\*\shppict{\pict\pngblip\picw4000\pich4000 " + b"0f" * (20 * MB) + b"}}"
    data = rtf(rb"\pard Caption before." + picture + rb" And after.\par")
    started = time.monotonic()
    extracted = extract(data)
    assert time.monotonic() - started < 5
    assert extracted.text == "Caption before. And after."


def test_a_huge_picture_in_the_sandbox() -> None:
    picture = rb"{\pict\wmetafile8 " + b"a1" * (16 * MB) + b"}"
    data = rtf(rb"\pard Kept." + picture + rb"\par")
    with ExtractionPool(ExtractSettings()) as pool:
        assert pool.extract(data, DOC).text == "Kept."


# -- the real files ------------------------------------------------------------------------------

CORPUS = {
    "striprtf-example-text-word.rtf": "Text here with hyperlink",
    "striprtf-calcium-score-libreoffice.rtf": "Gesamt Calcium-Score",
    "striprtf-pages-table-sample.rtf": "Hier steht normaler Text",
    "striprtf-issue-15-txrtf32.rtf": "Costa Rica is an exotic country",
}


@pytest.mark.corpus
@pytest.mark.parametrize("name", sorted(CORPUS))
def test_corpus_phrase_and_no_mojibake(shared_formats: Path, name: str) -> None:
    extracted = extract((shared_formats / "rtf" / name).read_bytes())
    assert CORPUS[name] in extracted.text
    for noise in ("Ã", "\ufffd", "Times New Roman", "panose", "HYPERLINK", "89504e47"):
        assert noise not in extracted.text


@pytest.mark.corpus
def test_corpus_pages_table(shared_formats: Path) -> None:
    extracted = extract((shared_formats / "rtf" / "striprtf-pages-table-sample.rtf").read_bytes())
    assert outline(extracted) == [
        ("paragraph", 0, "Hier steht normaler Text, dann kommt eine Tabelle."),
        ("paragraph", 0, "Tabelle ist:"),
        ("table", 0, "Header A | Header B | Header C\nA1 | B1 | C1\nA2 | B2 | C2\nA3 | B3 | C3"),
        ("paragraph", 0, "Hier steht wieder normaler Text."),
    ]


@pytest.mark.corpus
def test_corpus_libreoffice_nested_table(shared_formats: Path) -> None:
    path = shared_formats / "rtf" / "striprtf-calcium-score-libreoffice.rtf"
    extracted = extract(path.read_bytes())
    tables = [e for e in extracted.elements if e.kind is ElementKind.TABLE]
    assert [t.text for t in tables] == [
        "Coronararterie | Calcium-Score\nRCA | 0\nLM | 0\nLAD/RIVA | 0\nCX | 0\n"
        "Gesamt Calcium-Score | 0"
    ]
    assert extracted.metadata["created"] == "2018-03-26T08:51"


@pytest.mark.corpus
def test_corpus_word_file_author_and_picture(shared_formats: Path) -> None:
    extracted = extract((shared_formats / "rtf" / "striprtf-example-text-word.rtf").read_bytes())
    assert extracted.metadata["author"] == "Gattermann, Katjana"
    assert extracted.elements[0].text == "Text here with hyperlink"
    assert len(extracted.text) < 6000  # the picture (most of the 104 KB) is not text


@pytest.mark.corpus
def test_corpus_code_page_escapes(shared_formats: Path) -> None:
    extracted = extract((shared_formats / "rtf" / "striprtf-issue-15-txrtf32.rtf").read_bytes())
    assert "Day 1: San José" in extracted.text  # \'e9 under \ansicpg1252
    assert "Caño Island" in extracted.text  # \'f1
    assert "SAN JOSE – VOLCAN ARENAL" in extracted.text  # \'96, an en dash in cp1252
    # The German files (LibreOffice, Pages) hold no umlauts at all, not one byte over 127:
    # umlauts are covered by test_code_page_escapes_and_unicode and the info-group test.
