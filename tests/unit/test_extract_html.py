"""HtmlExtractor: cleaned tree, main content, block structure, charsets."""

from __future__ import annotations

from pathlib import Path, PurePath

import pytest
from selectolax.lexbor import LexborHTMLParser

from lorebase.errors import ExtractionFailed
from lorebase.extract.encoding import decode
from lorebase.extract.html import HtmlExtractor
from lorebase.extract.registry import extract_bytes, extract_file
from lorebase.settings import ExtractSettings
from lorebase.types import DocumentKind, Element, ElementKind, Extracted, FailureReason

DOCS = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "docs"
HTML_DIR = DOCS / "html"
EDGE_DIR = DOCS / "html_edge"


def extract(source: str | bytes, name: str = "page.html") -> Extracted:
    data = source.encode("utf-8") if isinstance(source, str) else source
    extracted = HtmlExtractor(ExtractSettings()).extract(data, PurePath(name))
    for el in extracted.elements:
        assert extracted.text[el.start : el.end] == el.text
        assert el.line is None
    return extracted


def of_kind(extracted: Extracted, kind: ElementKind) -> list[Element]:
    return [el for el in extracted.elements if el.kind is kind]


def page(body: str, head: str = "") -> str:
    return f"<!DOCTYPE html><html><head>{head}</head><body>{body}</body></html>"


def test_title_headings_and_paragraphs() -> None:
    source = page(
        "<h1>Main</h1><p>First <b>bold</b>\n  para.</p><h3>Sub</h3><p>Second.</p>",
        head="<title>  The\n  Page </title>",
    )
    extracted = extract(source)
    assert extracted.kind is DocumentKind.HTML
    assert extracted.title == "The Page"
    assert [(el.kind, el.text, el.level) for el in extracted.elements] == [
        (ElementKind.HEADING, "Main", 1),
        (ElementKind.PARAGRAPH, "First bold para.", 0),
        (ElementKind.HEADING, "Sub", 3),
        (ElementKind.PARAGRAPH, "Second.", 0),
    ]


def test_title_falls_back_to_first_h1_then_none() -> None:
    assert extract(page("<h2>Two</h2><h1>One <i>h1</i></h1>")).title == "One h1"
    assert extract(page("<p>no headings</p>")).title is None


def test_lists_without_duplicating_nested_items() -> None:
    source = page(
        "<ul><li>alpha<ul><li>beta</li><li><p>gamma</p><p>more</p></li></ul></li>"
        "<li>delta</li></ul><ol><li>one</li></ol>"
    )
    extracted = extract(source)
    items = of_kind(extracted, ElementKind.LIST_ITEM)
    assert [i.text for i in items] == ["alpha", "beta", "gamma\nmore", "delta", "one"]
    assert extracted.text.count("beta") == 1


def test_data_table_rows_as_lines() -> None:
    source = page(
        "<table><caption>Prices</caption><thead><tr><th>Item</th><th>Cost</th></tr></thead>"
        "<tbody><tr><td>Tea</td><td><p>$1</p></td></tr><tr><td>Cake</td><td></td>"
        "<td>$2</td></tr></tbody></table>"
    )
    extracted = extract(source)
    (table,) = of_kind(extracted, ElementKind.TABLE)
    assert table.text == "Item | Cost\nTea | $1\nCake | $2"
    assert of_kind(extracted, ElementKind.PARAGRAPH)[0].text == "Prices"


def test_nested_data_table_is_flattened() -> None:
    source = page(
        "<table><tr><td>a</td><td>b</td></tr>"
        "<tr><td>c</td><td><table><tr><td>x</td><td>y</td></tr></table></td></tr></table>"
    )
    (table,) = extract(source).elements
    assert table.kind is ElementKind.TABLE
    assert table.text == "a | b\nc | x y"


def test_multi_line_cells_keep_a_data_table() -> None:
    source = page(
        "<table><tr><th>Name</th><th>Address</th></tr>"
        "<tr><td>Ann</td><td>1 Road<br>Town<br>Land</td></tr></table>"
    )
    (table,) = extract(source).elements
    assert table.kind is ElementKind.TABLE
    assert table.text == "Name | Address\nAnn | 1 Road Town Land"


def test_table_with_paragraph_breaks_is_layout() -> None:
    source = page(
        "<table><tr><td>left</td><td>one<br> <br>two</td></tr><tr><td>a</td><td>b</td></tr></table>"
    )
    extracted = extract(source)
    assert of_kind(extracted, ElementKind.TABLE) == []
    assert [el.text for el in extracted.elements] == ["left", "one", "two", "a", "b"]


def test_pre_is_code_with_language_and_whitespace() -> None:
    source = page(
        '<pre><code class="language-Python">def f():\n    return 1\n</code></pre>'
        '<div class="highlight-rust notranslate"><div class="highlight"><pre>fn x() {}</pre>'
        "</div></div><pre>plain   text</pre>"
    )
    code = of_kind(extract(source), ElementKind.CODE)
    assert [(c.text, c.language) for c in code] == [
        ("def f():\n    return 1", "python"),
        ("fn x() {}", "rust"),
        ("plain   text", None),
    ]


def test_blockquote_definition_list_and_figcaption() -> None:
    source = page(
        "<blockquote><p>Quoted.</p></blockquote><dl><dt>Term</dt><dd>Definition.</dd></dl>"
        "<figure><img src='x.png' alt='alt'><figcaption>Caption.</figcaption></figure>"
    )
    extracted = extract(source)
    assert [(el.kind, el.text) for el in extracted.elements] == [
        (ElementKind.PARAGRAPH, "Quoted."),
        (ElementKind.PARAGRAPH, "Term"),
        (ElementKind.PARAGRAPH, "Definition."),
        (ElementKind.PARAGRAPH, "Caption."),
    ]


def test_noise_is_dropped() -> None:
    source = page(
        "<script>var sentinelScript = 1;</script><style>.sentinelStyle{}</style>"
        "<header><p>sentinel-header</p></header><nav>sentinel-nav</nav>"
        "<div role='navigation'>sentinel-role-nav</div>"
        "<noscript>sentinel-noscript</noscript><template><p>sentinel-template</p></template>"
        "<p>Kept paragraph.</p><p hidden>sentinel-hidden</p>"
        "<p aria-hidden='true'>sentinel-aria</p><div style='display: none'>sentinel-display</div>"
        "<span style='VISIBILITY:hidden'>sentinel-visibility</span>"
        "<form><label>sentinel-form</label><button>sentinel-button</button></form>"
        "<aside>sentinel-aside</aside><footer>sentinel-footer</footer>"
        "<svg><text>sentinel-svg</text></svg>",
        head="<style>sentinelHeadStyle</style><script>sentinelHeadScript()</script>",
    )
    extracted = extract(source)
    assert extracted.text == "Kept paragraph."
    assert "sentinel" not in extracted.text


def test_header_inside_article_keeps_its_h1() -> None:
    source = page(
        "<header><h1>Site name sentinel</h1></header>"
        "<article><header><h1>Article Title</h1><p>By someone</p></header>"
        "<p>Article body.</p><footer>Article footer</footer></article>"
    )
    extracted = extract(source)
    assert [el.text for el in extracted.elements] == [
        "Article Title",
        "By someone",
        "Article body.",
        "Article footer",
    ]
    assert of_kind(extracted, ElementKind.HEADING)[0].level == 1


def test_main_is_preferred_over_the_rest_of_the_body() -> None:
    source = page("<div>sidebar sentinel</div><main><p>Main text.</p></main><div>more</div>")
    assert extract(source).text == "Main text."
    role_main = page("<div>outside sentinel</div><div role='main'><p>Role main.</p></div>")
    assert extract(role_main).text == "Role main."


def test_empty_main_falls_back_to_body() -> None:
    assert extract(page("<main></main><p>Body text.</p>")).text == "Body text."


def test_form_wrapping_the_whole_page_is_kept() -> None:
    source = page("<form id='aspnet'><h1>Page</h1><p>Content in a form.</p></form>")
    assert extract(source).text == "Page\n\nContent in a form."


def test_loose_text_and_double_br_paragraphs() -> None:
    source = page("<div>Loose <font>text one</font>.<br>same para<br><br>Second para.</div>")
    paragraphs = of_kind(extract(source), ElementKind.PARAGRAPH)
    assert [p.text for p in paragraphs] == ["Loose text one.\nsame para", "Second para."]


def test_layout_table_page_yields_paragraphs() -> None:
    essay = "<br><br>".join(f"Paragraph number {i} of the essay." for i in range(4))
    source = page(
        "<table><tr><td><img src='nav.gif'></td><td>"
        "<table width=435><tr><td><font size=2>January 2023<br><br>"
        f"{essay}</font></td></tr></table></td></tr></table>"
    )
    extracted = extract(source)
    assert of_kind(extracted, ElementKind.TABLE) == []
    paragraphs = [p.text for p in of_kind(extracted, ElementKind.PARAGRAPH)]
    assert paragraphs[0] == "January 2023"
    assert paragraphs[1:] == [f"Paragraph number {i} of the essay." for i in range(4)]


def test_deep_nesting_does_not_crash() -> None:
    source = page("<div>" * 1500 + "deep text" + "</div>" * 1500)
    assert "deep text" in extract(source).text


def test_cp1252_with_meta_charset() -> None:
    body = "<p>Price: \x80 5 \x93quoted\x94 caf\xe9</p>"
    data = page(body, head='<meta charset="windows-1252">').encode("latin-1")
    extracted = extract(data)
    assert extracted.text == "Price: € 5 “quoted” café"
    assert extracted.encoding == "cp1252"


def test_iso_8859_1_declared_is_read_as_cp1252() -> None:
    head = '<meta http-equiv="Content-Type" content="text/html; charset=ISO-8859-1">'
    data = page("<p>\x93smart\x94 na\xefve</p>", head=head).encode("latin-1")
    assert extract(data).text == "“smart” naïve"


def test_utf16_le_with_bom() -> None:
    source = page("<h1>Grüße</h1><p>成分 text</p>", head='<meta charset="utf-8">')
    extracted = extract(b"\xff\xfe" + source.encode("utf-16-le"))
    assert extracted.text == "Grüße\n\n成分 text"
    assert extracted.encoding == "utf-16-le"


def test_lying_meta_charset_still_decodes() -> None:
    body = "<p>Das war k\xf6stlich, sagte sie \x93laut\x94 und l\xe4chelte dabei.</p>"
    data = page(body, head='<meta charset="utf-8">').encode("latin-1")
    extracted = extract(data)
    assert "köstlich" in extracted.text
    assert "\ufffd" not in extracted.text


@pytest.mark.parametrize(
    "source",
    [
        page(""),
        page("   \n "),
        page("<script>only()</script><nav>only nav</nav>"),
        page("<div><img src='x.png'></div>"),
    ],
)
def test_empty_body_fails_with_empty(source: str) -> None:
    with pytest.raises(ExtractionFailed) as info:
        extract_bytes(source.encode(), PurePath("empty.html"), ExtractSettings())
    assert info.value.reason is FailureReason.EMPTY


def test_a_page_that_is_only_its_title_is_its_title_as_a_heading() -> None:
    extracted = extract(b"<title>Meeting with the auditors</title><body><nav>x</nav></body>")
    assert extracted.title == "Meeting with the auditors"
    assert [(e.kind, e.text) for e in extracted.elements] == [
        (ElementKind.HEADING, "Meeting with the auditors")
    ]


def test_registry_reads_xhtml_and_htm() -> None:
    for name in ("page.xhtml", "page.htm"):
        extracted = extract_bytes(page("<p>x</p>").encode(), PurePath(name), ExtractSettings())
        assert extracted.kind is DocumentKind.HTML


# --- corpus -----------------------------------------------------------------------------------

needs_corpus = pytest.mark.skipif(
    not HTML_DIR.is_dir() or not EDGE_DIR.is_dir(),
    reason=f"shared HTML corpus not found at {HTML_DIR} / {EDGE_DIR}",
)


def flat(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.corpus
@needs_corpus
@pytest.mark.parametrize(
    "name",
    [
        "example-with-scripts.html",
        "github.blog-spiceland.html",
        "lemire.me-json.html",
        "sphinx-radiomics-api.html",
        "paulgraham-ideas.html",
    ],
)
def test_corpus_script_and_nav_text_never_appears(name: str) -> None:
    path = HTML_DIR / name
    output = flat(extract_file(path, ExtractSettings()).text)
    tree = LexborHTMLParser(decode(path.read_bytes(), markup=True).text)
    leaks: list[str] = []
    for node in tree.css("script, style"):
        lines = (flat(line) for line in (node.text() or "").split("\n"))
        leaks += [line for line in lines if len(line) >= 30 and line in output]
    for node in tree.css("nav"):
        text = flat(node.text(deep=True))
        if len(text) >= 30 and text in output:
            leaks.append(text)
    assert tree.css("script")
    assert leaks == []


@pytest.mark.corpus
@needs_corpus
def test_corpus_sphinx_headings() -> None:
    extracted = extract_file(HTML_DIR / "sphinx-radiomics-api.html", ExtractSettings())
    headings = [(h.text, h.level) for h in of_kind(extracted, ElementKind.HEADING)]
    assert headings[:3] == [
        ("radiomics package", 1),
        ("Submodules", 2),
        ("radiomics.base module", 2),
    ]
    assert "¶" not in extracted.text


@pytest.mark.corpus
@needs_corpus
def test_corpus_paulgraham_layout_tables() -> None:
    extracted = extract_file(HTML_DIR / "paulgraham-ideas.html", ExtractSettings())
    assert extracted.title == "How to Get New Ideas"
    paragraphs = of_kind(extracted, ElementKind.PARAGRAPH)
    assert len(paragraphs) >= 3
    assert any(
        p.text.startswith("The way to get new ideas is to notice anomalies") for p in paragraphs
    )
    assert of_kind(extracted, ElementKind.TABLE) == []
    assert "csell" not in extracted.text


@pytest.mark.corpus
@needs_corpus
def test_corpus_sec_filing_has_text_and_tables() -> None:
    # Its speed is measured in bench/extract.py, not here.
    extracted = extract_file(HTML_DIR / "sec-10k-filing.html", ExtractSettings())
    assert "SECURITIES AND EXCHANGE COMMISSION" in extracted.text
    assert of_kind(extracted, ElementKind.TABLE)
    assert len(extracted.text) > 100_000


@pytest.mark.corpus
@needs_corpus
def test_corpus_edge_decodings() -> None:
    settings = ExtractSettings()
    mozilla = extract_file(EDGE_DIR / "mozilla-bug421271-cp1252.html", settings)
    assert "lift £825. not bad for a £2 bet." in mozilla.text
    assert mozilla.title == "BBC - 606 - A Forum Conversation"
    fake = extract_file(EDGE_DIR / "fake-html-cp1252.html", settings)
    assert "Die schöne Frau" in fake.text
    assert "15,50 €" in fake.text
    assert "El niño comió paella con ñoquis" in fake.text
    steel = extract_file(EDGE_DIR / "steelJIS-datasheet-utf-16le-bom.html", settings)
    assert steel.encoding == "utf-16-le"
    assert "成分" in steel.text
    assert steel.title is not None and steel.title.startswith("SNB22-3 - SteelJIS")


# --- page chrome beyond tags: a manual's neighbour links, share buttons, menus -------------------

TEXINFO_PAGE = """<!DOCTYPE html><html><head><title>Multiple ABIs (libffi)</title></head><body>
<div class="section-level-extent" id="Multiple-ABIs">
<div class="nav-panel"><p>
Next: <a href="Closure-API.html" accesskey="n" rel="next">The Closure API</a>,
Previous: <a href="Types.html" accesskey="p" rel="prev">Types</a>,
Up: <a href="Using-libffi.html" accesskey="u" rel="up">Using libffi</a> &nbsp;
[<a href="index.html#SEC_Contents" title="Table of contents" rel="contents">Contents</a>]
[<a href="Index.html" title="Index" rel="index">Index</a>]</p></div>
<hr><h3 class="section">2.4 Multiple ABIs</h3>
<p>A given platform may provide multiple different ABIs at once. For instance, the x86
platform has both stdcall and fastcall functions.</p>
<hr><div class="header"><p>
Previous: <a href="Closure-Example.html" accesskey="p" rel="prev">Closure Example</a>,
Up: <a href="Using-libffi.html" accesskey="u" rel="up">Using libffi</a>
&nbsp; [<a href="Index.html" title="Index" rel="index">Index</a>]</p></div>
</div></body></html>"""


def test_a_manuals_links_to_its_neighbouring_pages_are_left_out() -> None:
    extracted = extract(TEXINFO_PAGE)
    assert "Previous:" not in extracted.text and "Next:" not in extracted.text
    assert "Closure Example" not in extracted.text
    assert [e.text for e in extracted.elements] == [
        "2.4 Multiple ABIs",
        "A given platform may provide multiple different ABIs at once. For instance, the x86 "
        "platform has both stdcall and fastcall functions.",
    ]


def test_a_sentence_that_links_to_the_next_page_is_kept() -> None:
    body = (
        '<p>The closure API is described in <a rel="next" href="c.html">the next section</a>, '
        "after the types.</p>"
    )
    assert "the next section, after the types" in extract(page(body)).text


def test_share_buttons_breadcrumbs_and_menus_are_left_out() -> None:
    body = """<main><ol class="breadcrumb"><li><a href="/">Home</a></li><li>Blog</li></ol>
    <h1>Release notes</h1><p>Version 3 reads spreadsheets.</p>
    <div class="post__social-share"><a href="t">Share on Twitter</a></div>
    <ul><li><a href="/a">Problems</a></li><li><a href="/b">Classification</a></li>
    <li><a href="/c">Clustering</a></li></ul>
    <ul><li><a href="/x">Spreadsheets</a> are read sheet by sheet.</li>
    <li><a href="/y">Slides</a> are read slide by slide.</li>
    <li><a href="/z">Mail</a> keeps its attachments.</li></ul>
    <ul><li><a href="/p">Download the PDF</a></li><li><a href="/q">Read online</a></li></ul>
    </main>"""
    texts = [e.text for e in extract(page(body)).elements]
    assert texts == [
        "Release notes",
        "Version 3 reads spreadsheets.",
        "Spreadsheets are read sheet by sheet.",
        "Slides are read slide by slide.",
        "Mail keeps its attachments.",
        "Download the PDF",  # two links are not yet a menu
        "Read online",
    ]


def test_a_table_with_header_cells_names_its_header_row() -> None:
    rows = "".join(f"<tr><td>widget {n}</td><td>{n}</td></tr>" for n in range(3))
    named = extract(page(f"<table><tr><th>Item</th><th>Count</th></tr>{rows}</table>"))
    assert [e.header for e in of_kind(named, ElementKind.TABLE)] == ["Item | Count"]
    plain = extract(page(f"<table>{rows}</table>"))
    assert [e.header for e in of_kind(plain, ElementKind.TABLE)] == [None]
