from pathlib import PurePath

import pytest

from lorebase.errors import ExtractionFailed
from lorebase.extract import extract_bytes
from lorebase.settings import ExtractSettings
from lorebase.types import DocumentKind, ElementKind, Extracted, FailureReason

SETTINGS = ExtractSettings()


def extract(text: str, name: str) -> Extracted:
    return extract_bytes(text.encode("utf-8"), PurePath(name), SETTINGS)


def shape(extracted: Extracted) -> list[tuple[str, int, int | None, str]]:
    return [(e.kind.value, e.level, e.line, e.text) for e in extracted.elements]


def assert_offsets(extracted: Extracted) -> None:
    for element in extracted.elements:
        assert extracted.text[element.start : element.end] == element.text


RST = """\
=============
Project Guide
=============

Intro paragraph
on two lines.

Installation
============

Run this::

    pip install thing
    thing --help

.. code-block:: python

   print("hi")

.. note::
   Mind the gap.

.. toctree::
   :maxdepth: 2

   usage

.. a comment that is not text

Advanced
--------

- first item
- second item
  continued
"""


def test_rst_titles_code_and_directives() -> None:
    extracted = extract(RST, "guide.rst")
    assert extracted.kind is DocumentKind.TEXT
    assert extracted.title == "Project Guide"
    assert shape(extracted) == [
        ("heading", 1, 2, "Project Guide"),
        ("paragraph", 0, 5, "Intro paragraph\non two lines."),
        ("heading", 2, 8, "Installation"),
        ("paragraph", 0, 11, "Run this::"),
        ("code", 0, 13, "pip install thing\nthing --help"),
        ("code", 0, 18, 'print("hi")'),
        ("paragraph", 0, 21, "Mind the gap."),
        ("heading", 3, 30, "Advanced"),
        ("list_item", 0, 33, "- first item"),
        ("list_item", 0, 34, "- second item\n  continued"),
    ]
    assert extracted.elements[5].language == "python"
    assert "comment" not in extracted.text and "maxdepth" not in extracted.text
    assert_offsets(extracted)


def test_plain_text_paragraphs_lines_and_underlined_titles() -> None:
    text = "Title Here\n==========\n\nFirst para\ncontinues.\n\n\nSecond para.\n"
    extracted = extract(text, "notes.txt")
    assert shape(extracted) == [
        ("heading", 1, 1, "Title Here"),
        ("paragraph", 0, 4, "First para\ncontinues."),
        ("paragraph", 0, 8, "Second para."),
    ]
    assert extracted.title == "Title Here"


def test_a_numbered_line_inside_prose_is_not_a_list_item() -> None:
    text = "The columns are: 1) path/to/image and\n2) path/to/mask, in that order.\n"
    assert [e.kind for e in extract(text, "a.txt").elements] == [ElementKind.PARAGRAPH]


def test_asciidoc_sections_and_source_blocks() -> None:
    text = (
        "= Manual\n:toc:\n\nPreamble text.\n\n== Setup\n\nDo this.\n\n=== Details\n\n"
        "[source,python]\n----\nimport os\n----\n\n// a comment\n"
    )
    extracted = extract(text, "manual.adoc")
    assert extracted.title == "Manual"
    assert shape(extracted) == [
        ("paragraph", 0, 4, "Preamble text."),
        ("heading", 1, 6, "Setup"),
        ("paragraph", 0, 8, "Do this."),
        ("heading", 2, 10, "Details"),
        ("code", 0, 14, "import os"),
    ]
    assert extracted.elements[-1].language == "python"


def test_org_headings_title_and_src_blocks() -> None:
    text = "#+TITLE: Org Notes\n\n* Top\nSome text.\n** Sub\n#+BEGIN_SRC sh\nls -la\n#+END_SRC\n"
    extracted = extract(text, "notes.org")
    assert extracted.title == "Org Notes"
    assert shape(extracted) == [
        ("heading", 1, 3, "Top"),
        ("paragraph", 0, 4, "Some text."),
        ("heading", 2, 5, "Sub"),
        ("code", 0, 7, "ls -la"),
    ]
    assert extracted.elements[-1].language == "sh"


def test_latex_sections() -> None:
    text = (
        "\\title{A Paper}\n% comment\n\\section{Intro}\nWe study things.\n\n"
        "\\subsection*{Method}\nCarefully.\n"
    )
    extracted = extract(text, "paper.tex")
    assert extracted.title == "A Paper"
    assert shape(extracted) == [
        ("heading", 2, 3, "Intro"),
        ("paragraph", 0, 4, "We study things."),
        ("heading", 3, 6, "Method"),
        ("paragraph", 0, 7, "Carefully."),
    ]


def test_json_is_one_code_block_and_jsonl_one_paragraph_per_line() -> None:
    assert extract('{"a": 1}\n', "x.json").elements[0].language == "json"
    lines = extract('{"a": 1}\n\n{"b": 2}\n', "x.jsonl").elements
    assert [(e.line, e.text) for e in lines] == [(1, '{"a": 1}'), (3, '{"b": 2}')]


def test_logs_keep_lines_without_inventing_headings() -> None:
    text = "2024-01-01 start\n----------------\n2024-01-01 end\n"
    extracted = extract(text, "app.log")
    assert all(e.kind is ElementKind.PARAGRAPH for e in extracted.elements)


@pytest.mark.parametrize("content", ["", "   \n\t\n", "\ufeff\n"])
def test_empty_and_whitespace_files_are_empty(content: str) -> None:
    with pytest.raises(ExtractionFailed) as caught:
        extract(content, "blank.txt")
    assert caught.value.reason is FailureReason.EMPTY


def test_whitespace_only_utf16_is_empty() -> None:
    with pytest.raises(ExtractionFailed) as caught:
        extract_bytes("\ufeff   \n".encode("utf-16"), PurePath("x.txt"), SETTINGS)
    assert caught.value.reason is FailureReason.EMPTY


def test_unsupported_and_too_large() -> None:
    with pytest.raises(ExtractionFailed) as caught:
        extract_bytes(b"MZ\x90\x00", PurePath("tool.exe"), SETTINGS)
    assert caught.value.reason is FailureReason.UNSUPPORTED_FORMAT
    small = ExtractSettings(max_file_bytes=10)
    with pytest.raises(ExtractionFailed) as caught:
        extract_bytes(b"x" * 11, PurePath("big.txt"), small)
    assert caught.value.reason is FailureReason.TOO_LARGE


def test_text_over_the_extracted_size_limit_is_too_large() -> None:
    limited = ExtractSettings(max_text_chars=100)
    with pytest.raises(ExtractionFailed) as caught:
        extract_bytes((("word " * 50 + "\n\n") * 3).encode(), PurePath("a.txt"), limited)
    assert caught.value.reason is FailureReason.TOO_LARGE


def test_failure_messages_never_quote_the_document() -> None:
    secret = "TOP-SECRET-PAYLOAD"
    with pytest.raises(ExtractionFailed) as caught:
        extract_bytes(((secret + "\x01\x02\x03") * 50).encode(), PurePath("a.txt"), SETTINGS)
    assert secret not in str(caught.value)


def test_extension_case_does_not_matter() -> None:
    assert extract("hello", "README.TXT").elements[0].text == "hello"


def test_offsets_and_line_numbers_hold_for_crlf_input() -> None:
    extracted = extract_bytes(
        b"Head\r\n====\r\n\r\nBody one\r\n\r\nBody two\r\n", PurePath("a.txt"), SETTINGS
    )
    assert [(e.line, e.text) for e in extracted.elements] == [
        (1, "Head"),
        (4, "Body one"),
        (6, "Body two"),
    ]
    assert_offsets(extracted)
