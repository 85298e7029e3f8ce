"""MarkdownExtractor: structure from markdown-it's tokens, metadata kept out of the body."""

from __future__ import annotations

from pathlib import Path, PurePath

import pytest

from lorebase.errors import ExtractionFailed
from lorebase.extract.markdown import MarkdownExtractor
from lorebase.extract.registry import extract_bytes, extract_file
from lorebase.settings import ExtractSettings
from lorebase.types import DocumentKind, Element, ElementKind, Extracted, FailureReason

DOCS = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "docs"
MD_DIR = DOCS / "md"


def extract(source: str | bytes, name: str = "doc.md") -> Extracted:
    data = source.encode("utf-8") if isinstance(source, str) else source
    extracted = MarkdownExtractor(ExtractSettings()).extract(data, PurePath(name))
    for el in extracted.elements:
        assert extracted.text[el.start : el.end] == el.text
    return extracted


def of_kind(extracted: Extracted, kind: ElementKind) -> list[Element]:
    return [el for el in extracted.elements if el.kind is kind]


def test_atx_and_setext_headings_with_levels_and_lines() -> None:
    source = "# One\n\nText.\n\nTwo\n===\n\nThree\n-----\n\n### Four ###\n"
    headings = of_kind(extract(source), ElementKind.HEADING)
    assert [(h.text, h.level, h.line) for h in headings] == [
        ("One", 1, 1),
        ("Two", 1, 5),
        ("Three", 2, 8),
        ("Four", 3, 11),
    ]


def test_heading_text_is_plain() -> None:
    source = "## *Emphasis* and [a link](http://x) with `code` {#anchor}\n"
    (heading,) = of_kind(extract(source), ElementKind.HEADING)
    assert heading.text == "Emphasis and a link with code"


def test_paragraph_plain_text_keeps_line_breaks() -> None:
    source = "Intro\n\nSome **bold** and <span>html</span>\n![alt text](img.png) here.\n"
    paragraphs = of_kind(extract(source), ElementKind.PARAGRAPH)
    assert [(p.text, p.line) for p in paragraphs] == [
        ("Intro", 1),
        ("Some bold and html\nalt text here.", 3),
    ]


def test_fenced_code_backticks_and_tildes_with_language() -> None:
    source = (
        "Text\n\n```Python\nprint(1)\n```\n\n~~~ { .rust }\nfn main() {}\n~~~\n\n```\nplain\n```\n"
    )
    code = of_kind(extract(source), ElementKind.CODE)
    assert [(c.text, c.language, c.line) for c in code] == [
        ("print(1)", "python", 4),
        ("fn main() {}", "rust", 8),
        ("plain", None, 12),
    ]


def test_code_keeps_indentation() -> None:
    source = "```py\ndef f():\n    return 1\n```\n"
    (code,) = of_kind(extract(source), ElementKind.CODE)
    assert code.text == "def f():\n    return 1"


def test_fence_containing_dashes_is_code_not_front_matter_or_setext() -> None:
    source = "Intro line\n\n```yaml\n---\nlayout: post\n---\n```\n\nAfter.\n"
    extracted = extract(source)
    (code,) = of_kind(extracted, ElementKind.CODE)
    assert code.text == "---\nlayout: post\n---"
    assert code.line == 4
    assert of_kind(extracted, ElementKind.HEADING) == []
    assert [p.text for p in of_kind(extracted, ElementKind.PARAGRAPH)] == ["Intro line", "After."]


def test_fence_at_top_after_front_matter() -> None:
    source = "---\ntitle: Top\n---\n```yaml\n---\nkey: value\n---\n```\nBody text.\n"
    extracted = extract(source)
    assert extracted.title == "Top"
    assert extracted.elements[0].kind is ElementKind.CODE
    assert extracted.elements[0].text == "---\nkey: value\n---"
    assert extracted.elements[0].line == 5
    assert "title: Top" not in extracted.text


def test_file_starting_with_a_fence_has_no_front_matter() -> None:
    source = "```\n---\nx: 1\n---\n```\n"
    (code,) = extract(source).elements
    assert code.kind is ElementKind.CODE
    assert code.text == "---\nx: 1\n---"


def test_front_matter_not_in_body_and_gives_title() -> None:
    source = "---\ntitle: 'The Title'\nsecret_key: sentinel-fm\n---\n\n# Heading\n\nBody.\n"
    extracted = extract(source)
    assert extracted.title == "The Title"
    assert "sentinel-fm" not in extracted.text
    assert [(el.text, el.line) for el in extracted.elements] == [("Heading", 6), ("Body.", 8)]


def test_invalid_front_matter_is_dropped_and_title_falls_back() -> None:
    source = "---\ntitle: [unclosed\n---\n\n# Fallback\n\nBody.\n"
    extracted = extract(source)
    assert extracted.title == "Fallback"
    assert "unclosed" not in extracted.text


def test_title_from_first_h1_without_front_matter() -> None:
    extracted = extract("## Second level\n\n# Real Title\n\n# Later\n")
    assert extracted.title == "Real Title"


def test_no_h1_means_no_title() -> None:
    assert extract("## Only h2\n\ntext\n").title is None


def test_multimarkdown_metadata() -> None:
    source = "Title: Meta Title\nAuthor: Someone\n    Continued\n\nBody paragraph.\n"
    extracted = extract(source)
    assert extracted.title == "Meta Title"
    assert extracted.text == "Body paragraph."
    assert extracted.elements[0].line == 5


def test_ordinary_first_paragraph_with_colon_is_body() -> None:
    extracted = extract("Note: this is important.\nReally.\n\n# H\n")
    assert extracted.elements[0].text == "Note: this is important.\nReally."
    assert extracted.title == "H"


def test_toml_front_matter() -> None:
    extracted = extract('+++\ntitle = "Hugo Page"\n+++\n\nBody.\n')
    assert extracted.title == "Hugo Page"
    assert extracted.text == "Body."


def test_table_rows_as_lines() -> None:
    source = "| Name | Value |\n|------|-------|\n| *a*  | 1     |\n| b    | [two](x) |\n"
    (table,) = of_kind(extract(source), ElementKind.TABLE)
    assert table.text == "Name | Value\na | 1\nb | two"
    assert table.line == 1


def test_nested_lists_are_not_duplicated() -> None:
    source = "- alpha\n  - beta\n    - gamma\n  - delta\n- epsilon\n\n1. one\n2. two\n"
    extracted = extract(source)
    items = of_kind(extracted, ElementKind.LIST_ITEM)
    assert [(i.text, i.line) for i in items] == [
        ("alpha", 1),
        ("beta", 2),
        ("gamma", 3),
        ("delta", 4),
        ("epsilon", 5),
        ("one", 7),
        ("two", 8),
    ]
    assert extracted.text.count("gamma") == 1


def test_list_item_with_several_paragraphs_and_code() -> None:
    source = "- first para\n\n  second para\n\n  ```sh\n  ls\n  ```\n- next\n"
    extracted = extract(source)
    assert [(el.kind, el.text) for el in extracted.elements] == [
        (ElementKind.LIST_ITEM, "first para\n\nsecond para"),
        (ElementKind.CODE, "ls"),
        (ElementKind.LIST_ITEM, "next"),
    ]


def test_indented_code() -> None:
    source = "Para.\n\n    indented code\n      more\n\nAfter.\n"
    (code,) = of_kind(extract(source), ElementKind.CODE)
    assert (code.text, code.language, code.line) == ("indented code\n  more", None, 3)


def test_html_block_headings_stay_headings() -> None:
    source = '<h2 id="x">Raw <em>Heading</em></h2>\n\nText.\n'
    (heading, para) = extract(source).elements
    assert (heading.kind, heading.text, heading.level, heading.line) == (
        ElementKind.HEADING,
        "Raw Heading",
        2,
        1,
    )
    assert para.text == "Text."


def test_blockquote_and_html_block() -> None:
    source = "> quoted text\n\n<div>\n<p>inside html</p>\n<script>var leak = 1;</script>\n</div>\n"
    extracted = extract(source)
    assert [p.text for p in of_kind(extracted, ElementKind.PARAGRAPH)] == [
        "quoted text",
        "inside html",
    ]
    assert "leak" not in extracted.text


def test_kramdown_attribute_lines_are_dropped() -> None:
    source = "## Heading\n{: #heading-id}\n\nPara text\n{: .note}\n\n* TOC\n{:toc}\n"
    extracted = extract(source)
    assert "{:" not in extracted.text
    assert [el.text for el in extracted.elements] == ["Heading", "Para text", "TOC"]


def test_liquid_tags_stay() -> None:
    assert "{% include x.html %}" in extract("Before {% include x.html %} after\n").text


def test_crlf_input() -> None:
    source = b"# Title\r\n\r\nline one\r\nline two\r\n\r\n```js\r\nx()\r\n```\r\n"
    extracted = extract(source)
    assert "\r" not in extracted.text
    assert [(el.text, el.line) for el in extracted.elements] == [
        ("Title", 1),
        ("line one\nline two", 3),
        ("x()", 7),
    ]


def test_utf8_bom() -> None:
    extracted = extract(b"\xef\xbb\xbf---\ntitle: Bom\n---\n\n# H\n\nCaf\xc3\xa9\n")
    assert extracted.title == "Bom"
    assert extracted.text == "H\n\nCafé"
    assert extracted.encoding == "utf-8"


def test_mdx_through_the_registry() -> None:
    source = b'import Tabs from "./tabs"\nexport const x = 1\n\n# MDX Page\n\n<Tabs>\n\nBody.\n'
    extracted = extract_bytes(source, PurePath("x.mdx"), ExtractSettings())
    assert extracted.kind is DocumentKind.MARKDOWN
    assert extracted.title == "MDX Page"
    assert "import Tabs" not in extracted.text
    assert "Body." in extracted.text


@pytest.mark.parametrize(
    "source",
    ["", "   \n\n\t\n", "---\ntitle: Only\n---\n", "---\n---\n\n", "Title: Just meta\n"],
)
def test_empty_documents_fail_with_empty(source: str) -> None:
    with pytest.raises(ExtractionFailed) as info:
        extract_bytes(source.encode(), PurePath("empty.md"), ExtractSettings())
    assert info.value.reason is FailureReason.EMPTY


# --- corpus -----------------------------------------------------------------------------------

needs_corpus = pytest.mark.skipif(
    not MD_DIR.is_dir(), reason=f"shared Markdown corpus not found at {MD_DIR}"
)


def corpus(name: str) -> Extracted:
    return extract_file(MD_DIR / name, ExtractSettings())


@pytest.mark.corpus
@needs_corpus
def test_corpus_jekyll_front_matter() -> None:
    extracted = corpus("jekyll-front-matter.md")
    assert extracted.title == "Front Matter"
    assert "permalink: /docs/front-matter/" not in extracted.text
    assert "redirect_from" not in extracted.text
    yaml_blocks = [
        el
        for el in of_kind(extracted, ElementKind.CODE)
        if el.language == "yaml" and el.text.startswith("---")
    ]
    assert yaml_blocks
    assert "title: Blogging Like a Hacker" in yaml_blocks[0].text


@pytest.mark.corpus
@needs_corpus
def test_corpus_python_markdown_metadata_title() -> None:
    extracted = corpus("python-markdown-index.md")
    assert extracted.title == "Python-Markdown"
    assert not extracted.text.startswith("title:")
    assert extracted.elements[0].kind is ElementKind.HEADING


@pytest.mark.corpus
@needs_corpus
def test_corpus_gruber_setext_headings() -> None:
    extracted = corpus("gruber-markdown-syntax.md")
    headings = of_kind(extracted, ElementKind.HEADING)
    assert (headings[0].text, headings[0].level, headings[0].line) == ("Markdown: Syntax", 1, 1)
    # Its section headings are raw HTML (<h2>, <h3>) and still come out as headings.
    assert ("Overview", 2) in [(h.text, h.level) for h in headings]
    assert ("Philosophy", 3) in [(h.text, h.level) for h in headings]
    assert extracted.title == "Markdown: Syntax"


def test_a_tables_first_row_is_its_header() -> None:
    extracted = extract("| Item | Count |\n| --- | --- |\n| widget | 3 |\n| bolt | 9 |\n")
    (table,) = [e for e in extracted.elements if e.kind is ElementKind.TABLE]
    assert table.header == "Item | Count" and table.text.startswith("Item | Count\n")
