"""The header-boundary chunker: sections, trails, bounds, boundaries, blocks and metadata."""

from __future__ import annotations

import hashlib
import itertools
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from budget import examples
from lorebase.chunk import Chunker, HeaderChunker, chunk_document, estimate_tokens
from lorebase.extract.base import DocumentBuilder
from lorebase.settings import ChunkSettings
from lorebase.types import Chunk, ContentKind, DocumentKind, Element, ElementKind, Extracted

DEFAULT = ChunkSettings()
SMALL = ChunkSettings(chunk_size=200, max_tokens=1000, overlap=40)

Item = tuple[ElementKind, str, dict[str, Any]]


def heading(text: str, level: int, **extra: Any) -> Item:
    return (ElementKind.HEADING, text, {"level": level, **extra})


def para(text: str, **extra: Any) -> Item:
    return (ElementKind.PARAGRAPH, text, extra)


def table(text: str, **extra: Any) -> Item:
    return (ElementKind.TABLE, text, extra)


def code(text: str, **extra: Any) -> Item:
    return (ElementKind.CODE, text, extra)


def page_break(page: int) -> Item:
    return (ElementKind.PAGE_BREAK, "", {"page": page})


def document(*items: Item, title: str | None = "T") -> Extracted:
    builder = DocumentBuilder(DocumentKind.MARKDOWN, repr(items).encode(), max_chars=10**9)
    for kind, text, extra in items:
        builder.add(kind, text, **extra)
    return builder.build(title=title)


def sentences(count: int, word: str = "word") -> str:
    return " ".join(f"Sentence {n} has a {word} or two in it." for n in range(count))


def by_trail(chunks: list[Chunk]) -> dict[tuple[str, ...], list[Chunk]]:
    grouped: dict[tuple[str, ...], list[Chunk]] = {}
    for chunk in chunks:
        grouped.setdefault(chunk.position.trail, []).append(chunk)
    return grouped


def test_header_chunker_is_the_chunker_behind_chunk_document() -> None:
    assert issubclass(HeaderChunker, Chunker)
    with pytest.raises(TypeError):
        Chunker()  # type: ignore[abstract]
    doc = document(heading("A", 1), para(sentences(20)))
    assert chunk_document(doc, SMALL) == HeaderChunker().chunk(doc, SMALL)


def test_trails_follow_nested_heading_levels() -> None:
    doc = document(
        para("Welcome to the handbook, read before anything else."),
        heading("Handbook", 1),
        heading("Leave policy", 2),
        para("Leave is granted by your manager."),
        heading("Vacation", 3),
        para("Ten days per year."),
        heading("Sick leave", 3),
        para("Call in before nine."),
        heading("Benefits", 2),
        para("Lunch is free."),
        heading("Appendix", 1),
        heading("Deep", 4),
        para("Skipping levels is fine."),
    )
    chunks = chunk_document(doc, DEFAULT)
    assert [(c.position.trail, c.text) for c in chunks] == [
        ((), "Welcome to the handbook, read before anything else."),
        (("Handbook", "Leave policy"), "Leave is granted by your manager."),
        (("Handbook", "Leave policy", "Vacation"), "Ten days per year."),
        (("Handbook", "Leave policy", "Sick leave"), "Call in before nine."),
        (("Handbook", "Benefits"), "Lunch is free."),
        (("Appendix", "Deep"), "Skipping levels is fine."),
    ]
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))


def test_heading_without_body_gives_no_chunk_but_stays_in_trail() -> None:
    doc = document(heading("Handbook", 1), heading("Empty", 2), heading("Inner", 3), para("x y"))
    chunks = chunk_document(doc, DEFAULT)
    assert [c.position.trail for c in chunks] == [("Handbook", "Empty", "Inner")]


def test_a_document_of_headings_only_is_one_chunk_of_its_headings() -> None:
    doc = document(
        heading("Minutes", 1, line=1, page=2),
        heading("Meeting with the auditors", 2, line=3),
        title="Minutes",
    )
    [chunk] = chunk_document(doc, DEFAULT)
    assert chunk.text == "Minutes\n\nMeeting with the auditors"
    assert chunk.position.trail == ()
    assert (chunk.position.line, chunk.position.page) == (1, 2)
    assert chunk.position.content_kind is ContentKind.PROSE
    assert chunk.embed_text == "Minutes\n" + chunk.text


def test_headings_only_rule_leaves_documents_with_body_text_alone() -> None:
    doc = document(heading("A", 1), para("body"), heading("Trailing", 1))
    assert [(c.text, c.position.trail) for c in chunk_document(doc, DEFAULT)] == [("body", ("A",))]


def test_chunks_never_span_sections() -> None:
    doc = document(
        heading("One", 1), para(sentences(30)), heading("Two", 1), para(sentences(30, "term"))
    )
    chunks = chunk_document(doc, SMALL)
    grouped = by_trail(chunks)
    assert set(grouped) == {("One",), ("Two",)}
    one_end = max(c.position.end for c in grouped[("One",)])
    assert all(c.position.start > one_end for c in grouped[("Two",)])
    assert all("Two" not in c.text and "term" not in c.text for c in grouped[("One",)])
    assert len(grouped[("One",)]) > 3


def test_chunks_respect_bounds_and_cut_at_sentence_ends() -> None:
    doc = document(para(sentences(200)))
    chunks = chunk_document(doc, DEFAULT)
    assert len(chunks) > 5
    for chunk in chunks:
        assert len(chunk.text) <= DEFAULT.chunk_size
        assert chunk.tokens == estimate_tokens(chunk.text) <= DEFAULT.max_tokens
        assert chunk.text.endswith(".")
        assert chunk.text == doc.text[chunk.position.start : chunk.position.end]


def test_paragraph_end_is_preferred_over_sentence_end() -> None:
    first = sentences(14)  # about 530 characters: past the middle of a 1000-char window
    doc = document(para(first), para(sentences(30)))
    chunks = chunk_document(doc, ChunkSettings(chunk_size=1000, overlap=0))
    assert chunks[0].text == first


def test_overlap_repeats_the_end_of_the_previous_chunk_from_a_word_start() -> None:
    doc = document(para(sentences(100)))
    chunks = chunk_document(doc, ChunkSettings(chunk_size=400, overlap=100))
    for previous, chunk in itertools.pairwise(chunks):
        assert previous.position.start < chunk.position.start < previous.position.end
        assert previous.position.end - chunk.position.start <= 100
        assert doc.text[chunk.position.start - 1] == " "
    no_overlap = chunk_document(doc, ChunkSettings(chunk_size=400, overlap=0))
    for previous, chunk in itertools.pairwise(no_overlap):
        assert chunk.position.start > previous.position.end


def test_a_giant_word_is_cut_at_the_limit() -> None:
    doc = document(para("x" * 500))
    chunks = chunk_document(doc, ChunkSettings(chunk_size=200, overlap=50))
    assert [len(c.text) for c in chunks] == [200, 200, 100]


TABLE = "\n".join(f"| row {n} | value {n} | note {n} |" for n in range(15))


def test_table_that_fits_is_kept_whole() -> None:
    doc = document(para(sentences(12)), table(TABLE), para(sentences(12)))
    chunks = chunk_document(doc, ChunkSettings(chunk_size=700, overlap=150))
    table_start = doc.text.index(TABLE)
    table_end = table_start + len(TABLE)
    assert any(c.position.start <= table_start and c.position.end >= table_end for c in chunks)
    for chunk in chunks:
        assert not table_start < chunk.position.end < table_end  # no cut inside the table
        if table_start < chunk.position.start < table_end:  # overlap repeats whole rows only
            assert doc.text[chunk.position.start - 1] == "\n" and chunk.text.startswith("| row")


def test_block_after_overlap_starts_its_own_chunk() -> None:
    # The table fits alone but not after 150 characters of overlap: the chunk starts at it.
    prose = sentences(15)
    doc = document(para(prose), table(TABLE))
    chunks = chunk_document(doc, ChunkSettings(chunk_size=len(TABLE) + 20, overlap=150))
    assert chunks[-1].text == TABLE
    assert chunks[-1].position.content_kind is ContentKind.TABLE


def test_long_table_is_split_on_row_ends() -> None:
    rows = [f"| row {n} | value {n} | a longer note for row {n} |" for n in range(60)]
    doc = document(heading("Data", 1), table("\n".join(rows)))
    chunks = chunk_document(doc, ChunkSettings(chunk_size=500, overlap=100))
    assert len(chunks) > 3
    for chunk in chunks:
        assert chunk.position.content_kind is ContentKind.TABLE
        assert chunk.text.endswith("|")
        assert chunk.position.end == len(doc.text) or doc.text[chunk.position.end] == "\n"
        assert doc.text[chunk.position.start - 1] in " \n"
    assert all(row in "".join(c.text for c in chunks) for row in rows)


def test_every_piece_of_a_long_table_begins_with_its_header_row() -> None:
    header = "Item | Type | Quantity"
    rows = [f"widget {n} | part | {n * 7}" for n in range(2, 300)]
    doc = document(
        heading("Inventory", 1), table("\n".join([header, *rows]), header=header, line=1)
    )
    config = ChunkSettings(chunk_size=400, overlap=0)
    chunks = chunk_document(doc, config)
    assert len(chunks) > 10
    assert chunks[0].text.startswith(f"{header}\nwidget 2 |")  # the header once, from the text
    for chunk in chunks:
        assert chunk.text.startswith(header + "\n") and chunk.text.count(header) == 1
        assert len(chunk.text) <= config.chunk_size and chunk.tokens <= config.max_tokens
        body = doc.text[chunk.position.start : chunk.position.end]
        assert chunk.text.endswith(body)  # offsets still point at the rows themselves
        # rows are lines: row numbers from the table's first line (the header, row 1)
        first, last = chunk.position.line, chunk.position.line_end
        assert body.split("\n")[0].startswith(f"widget {first} |") or first == 1
        assert body.split("\n")[-1].startswith(f"widget {last} |")
    assert {row for c in chunks for row in c.text.split("\n")} == {header, *rows}


def test_a_header_given_apart_from_the_rows_precedes_every_piece() -> None:
    # A sheet's run of rows after a gap: its header row stands elsewhere in the sheet.
    rows = [f"widget {n} | part | {n}" for n in range(40, 60)]
    doc = document(table("\n".join(rows), header="Item | Type | Quantity", line=40))
    chunks = chunk_document(doc, ChunkSettings(chunk_size=200, overlap=0))
    assert len(chunks) > 1
    assert all(c.text.startswith("Item | Type | Quantity\nwidget ") for c in chunks)
    assert (chunks[0].position.line, chunks[-1].position.line_end) == (40, 59)


def test_a_header_row_too_long_to_repeat_is_left_alone() -> None:
    header = " | ".join(f"column number {n}" for n in range(12))  # over a quarter of 400
    rows = [f"{n} | x" for n in range(200)]
    doc = document(table("\n".join([header, *rows]), header=header))
    chunks = chunk_document(doc, ChunkSettings(chunk_size=400, overlap=0))
    assert [c.text == doc.text[c.position.start : c.position.end] for c in chunks] == [True] * len(
        chunks
    )
    assert sum(c.text.count(header) for c in chunks) == 1


CODE = "def vacation_days(years):\n    base = 10\n    return base + min(years, 10)\n"


def test_code_is_kept_whole_with_language_and_symbol() -> None:
    doc = document(
        heading("API", 1),
        para(sentences(10)),
        code(CODE, language="python", symbol="vacation_days", line=40),
        para(sentences(10)),
    )
    chunks = chunk_document(doc, ChunkSettings(chunk_size=600, overlap=100))
    with_code = [c for c in chunks if "def vacation_days" in c.text]
    assert with_code
    for chunk in with_code:
        assert CODE.strip() in chunk.text
        assert chunk.position.language == "python"
        assert chunk.position.symbol == "vacation_days"
    alone = document(code(CODE, language="python", line=3))
    [chunk] = chunk_document(alone, DEFAULT)
    assert chunk.position.content_kind is ContentKind.CODE
    assert (
        chunk.position.language == "python"
        and chunk.position.symbol is None
        and chunk.position.line == 3
    )
    prose = [c for c in chunks if "def " not in c.text]
    assert all(
        c.position.language is None and c.position.content_kind is ContentKind.PROSE for c in prose
    )


INVOICES_PY = b"""import json

TIMEOUT = 30


def parse_invoice(raw):
    return json.loads(raw)


class RetryPolicy:
    attempts = 3


def send(invoice):
    return invoice
"""


def test_a_code_chunk_holds_one_definition_and_names_it() -> None:
    from pathlib import PurePath

    from lorebase.extract.registry import extract_bytes
    from lorebase.settings import ExtractSettings

    extracted = extract_bytes(INVOICES_PY, PurePath("invoices.py"), ExtractSettings())
    chunks = chunk_document(extracted, DEFAULT)
    assert [(c.position.symbol, c.position.line, c.text.split()[1]) for c in chunks] == [
        (None, 1, "json"),
        ("parse_invoice", 6, "parse_invoice(raw):"),
        ("RetryPolicy", 10, "RetryPolicy:"),
        ("send", 14, "send(invoice):"),
    ]
    assert all(c.position.language == "python" for c in chunks)
    assert "RetryPolicy" not in chunks[1].text


def test_long_code_splits_on_line_ends_and_keeps_indentation() -> None:
    body = "\n".join(f"    total = total + compute(item_{n}, factor={n}) / 2.0" for n in range(60))
    doc = document(code(f"def f():\n{body}", language="python"))
    chunks = chunk_document(doc, ChunkSettings(chunk_size=400, overlap=0))
    assert len(chunks) > 3
    for chunk in chunks:
        assert chunk.position.content_kind is ContentKind.CODE
        assert chunk.position.end == len(doc.text) or doc.text[chunk.position.end] == "\n"


def test_cjk_text_is_bound_by_tokens() -> None:
    text = "漢字仮名交じり文。" * 222  # 1998 characters, ideographs and kana weigh a token each
    doc = document(para(text))
    chunks = chunk_document(doc, ChunkSettings(chunk_size=1200))
    assert len(chunks) >= 7
    for chunk in chunks:
        assert chunk.tokens == estimate_tokens(chunk.text) <= DEFAULT.max_tokens
        assert len(chunk.text) <= DEFAULT.max_tokens
        assert chunk.text.endswith("。")
    covered: set[int] = set()
    for chunk in chunks:
        covered.update(range(chunk.position.start, chunk.position.end))
    assert covered == set(range(len(doc.text)))


def test_cjk_without_punctuation_is_cut_at_the_token_limit() -> None:
    doc = document(para("字" * 2000))
    chunks = chunk_document(doc, ChunkSettings(chunk_size=1200, max_tokens=320, overlap=0))
    assert [len(c.text) for c in chunks] == [320] * 6 + [80]


def test_emoji_count_two_tokens_each() -> None:
    doc = document(para(" ".join(["😀🎉"] * 400)))
    chunks = chunk_document(doc, ChunkSettings(chunk_size=1200, max_tokens=100, overlap=0))
    assert len(chunks) > 5
    for chunk in chunks:
        assert chunk.tokens <= 100
        assert chunk.tokens == estimate_tokens(chunk.text)
        assert chunk.text.startswith("😀") and chunk.text.endswith("🎉")


def test_pages_across_a_page_break() -> None:
    doc = document(
        para("First page text.", page=1),
        page_break(2),
        para("Second page text.", page=2),
        heading("Later", 1, page=2),
        para("Only on page two.", page=2),
    )
    first, second = chunk_document(doc, DEFAULT)
    assert (first.position.page, first.position.page_end) == (1, 2)
    assert first.text == "First page text.\n\nSecond page text."
    assert (second.position.page, second.position.page_end) == (2, None)
    no_pages = chunk_document(document(para("text")), DEFAULT)[0]
    assert (no_pages.position.page, no_pages.position.page_end) == (None, None)


def test_line_numbers_count_line_ends_inside_the_first_element() -> None:
    lines = [f"Line {n} of the poem goes on and on." for n in range(40)]
    doc = document(heading("Poem", 1, line=1), para("\n".join(lines), line=3))
    chunks = chunk_document(doc, ChunkSettings(chunk_size=300, overlap=0))
    assert chunks[0].position.line == 3
    for chunk in chunks:
        found = re.match(r"Line (\d+)", chunk.text)
        assert found is not None
        number = int(found.group(1))
        assert chunk.position.line == 3 + number
    assert chunk_document(document(para("no lines")), DEFAULT)[0].position.line is None


@pytest.mark.parametrize(
    ("title", "items", "expected"),
    [
        ("Guide", [heading("A", 1), heading("B", 2), para("x")], "Guide > A > B\nx"),
        (None, [heading("A", 1), heading("B", 2), para("x")], "A > B\nx"),
        ("Guide", [para("x")], "Guide\nx"),
        (None, [para("x")], "x"),
        ("Guide", [heading("Guide", 1), heading("B", 2), para("x")], "Guide > B\nx"),
    ],
)
def test_embed_text_format(title: str | None, items: list[Item], expected: str) -> None:
    [chunk] = chunk_document(document(*items, title=title), DEFAULT)
    assert chunk.embed_text == expected
    assert chunk.content_hash == hashlib.sha256(expected.encode()).hexdigest()


def test_ids_and_hashes_are_deterministic_and_depend_on_settings() -> None:
    items = (heading("A", 1), para(sentences(60)), heading("B", 1), para(sentences(40)))
    first = chunk_document(document(*items), SMALL)
    again = chunk_document(document(*items), SMALL)
    assert first == again
    assert all(re.fullmatch(r"[0-9a-f]{32}", c.id) for c in first)
    assert len({c.id for c in first}) == len(first)
    other = chunk_document(document(*items), ChunkSettings(chunk_size=200, overlap=40))
    assert [c.text for c in other] == [c.text for c in first]  # token bound does not bind
    assert not {c.id for c in other} & {c.id for c in first}
    changed = chunk_document(document(*items, para("z")), SMALL)
    assert not {c.id for c in changed} & {c.id for c in first}


def test_mixed_chunk_is_prose() -> None:
    [chunk] = chunk_document(document(para("Intro."), code("make test")), DEFAULT)
    assert chunk.position.content_kind is ContentKind.PROSE


def test_a_table_is_a_chunk_of_its_own_labelled_table() -> None:
    doc = document(
        heading("Fees", 1),
        para("Table 1. Fees."),
        table("| a | 1 |\n| b | 2 |"),
        table("| c | 3 |"),
        para("Paid yearly."),
        title=None,
    )
    chunks = chunk_document(doc, DEFAULT)
    assert [(c.text, c.position.content_kind, c.position.trail) for c in chunks] == [
        ("Table 1. Fees.", ContentKind.PROSE, ("Fees",)),
        ("| a | 1 |\n| b | 2 |", ContentKind.TABLE, ("Fees",)),
        ("| c | 3 |", ContentKind.TABLE, ("Fees",)),
        ("Paid yearly.", ContentKind.PROSE, ("Fees",)),
    ]


# --- properties over generated documents -------------------------------------------------------

ALPHABET = (
    "abcdefghijklmnopqrstuvwxyzABCXYZ0123456789.,;:!?'\"()-éèàüößçñαβγжщы漢字日本語한국어かな"
)
WORD = st.text(alphabet=ALPHABET, min_size=1, max_size=20)
WORDS = st.lists(WORD, min_size=1, max_size=120)
SEPARATOR = st.sampled_from([" ", " ", " ", " ", "\n", "  "])


@st.composite
def prose(draw: st.DrawFn) -> str:
    words = draw(WORDS)
    return "".join(word + draw(SEPARATOR) for word in words)


@st.composite
def block(draw: st.DrawFn) -> Item:
    kind = draw(st.sampled_from(["heading", "para", "para", "para", "table", "code"]))
    if kind == "heading":
        return heading(draw(WORD), draw(st.integers(1, 4)))
    if kind == "table":
        rows = draw(st.lists(st.lists(WORD, min_size=1, max_size=4), min_size=1, max_size=12))
        text = "\n".join(" | ".join(row) for row in rows)
        if draw(st.booleans()):  # a header row: the table's first, or one given apart
            header = " | ".join(draw(st.lists(WORD, min_size=1, max_size=4)))
            return table(text, header=draw(st.sampled_from([header, text.split("\n")[0]])))
        return table(text)
    if kind == "code":
        lines = draw(st.lists(prose(), min_size=1, max_size=6))
        return code("\n".join("    " * (n % 3) + line for n, line in enumerate(lines)))
    return para(" ".join(draw(st.lists(prose(), min_size=1, max_size=4))))


@st.composite
def chunk_settings(draw: st.DrawFn) -> ChunkSettings:
    """Any valid settings, biased towards small windows so sections split into many chunks."""
    size = draw(st.one_of(st.integers(200, 400), st.integers(200, 4000)))
    return ChunkSettings(
        chunk_size=size,
        max_tokens=draw(st.one_of(st.integers(32, 120), st.integers(32, 1000))),
        overlap=draw(st.integers(0, size // 2)),
    )


def reference_sections(doc: Extracted) -> list[tuple[tuple[str, ...], int, int]]:
    """(trail, body start, body end) per section with text, computed independently: headings
    open sections, and each table is a section of its own."""
    sections: list[tuple[tuple[str, ...], int, int]] = []
    trail: list[tuple[int, str]] = []
    body: list[Element] = []
    for element in [*doc.elements, None]:
        is_table = element is not None and element.kind is ElementKind.TABLE
        if body and (is_table or body[-1].kind is ElementKind.TABLE) and element is not None:
            sections.append((tuple(t for _, t in trail), body[0].start, body[-1].end))
            body = []
        if element is None or element.kind is ElementKind.HEADING:
            if body:
                sections.append((tuple(t for _, t in trail), body[0].start, body[-1].end))
            body = []
            if element is not None:
                trail = [(lv, t) for lv, t in trail if lv < element.level]
                trail.append((element.level, element.text))
        elif element.text:
            body.append(element)
    headings = [e for e in doc.elements if e.kind is ElementKind.HEADING]
    if not sections and headings:  # only headings: they are the one section
        sections.append(((), headings[0].start, headings[-1].end))
    return sections


def check_properties(doc: Extracted, config: ChunkSettings) -> None:
    """Coverage, bounds, word boundaries, determinism and offsets, per section."""
    chunks = chunk_document(doc, config)
    text = doc.text

    assert chunks == chunk_document(doc, config)  # determinism
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))

    tables = [e for e in doc.elements if e.kind is ElementKind.TABLE]
    for chunk in chunks:
        body = text[chunk.position.start : chunk.position.end]
        around = [e for e in tables if e.start <= chunk.position.start < e.end]
        header = around[0].header if around else None
        if chunk.text != body:  # a piece of a table after its header row
            assert header is not None and chunk.text == f"{header}\n{body}"
        elif header is not None and len(header) * 4 <= config.chunk_size:
            assert body.startswith(header) or estimate_tokens(header) * 4 > config.max_tokens
        assert chunk.text and not chunk.text[0].isspace() and not chunk.text[-1].isspace()
        assert len(chunk.text) <= config.chunk_size
        assert estimate_tokens(chunk.text) == chunk.tokens <= config.max_tokens
        line, line_end = chunk.position.line, chunk.position.line_end
        assert (
            (line, line_end) == (None, None)
            or line_end is None
            or (line is not None and line_end > line)
        )

    sections = reference_sections(doc)
    for trail, start, end in sections:
        mine = [c for c in chunks if start <= c.position.start < end]
        assert all(c.position.end <= end and c.position.trail == trail for c in mine)
        covered = bytearray(end - start)
        for chunk in mine:
            span = chunk.position.end - chunk.position.start
            covered[chunk.position.start - start : chunk.position.end - start] = b"\x01" * span
            assert chunk.position.start == start or text[chunk.position.start - 1].isspace()
            assert chunk.position.end == end or text[chunk.position.end].isspace()
        missing = [i for i in range(start, end) if not covered[i - start] and not text[i].isspace()]
        assert not missing
        starts = [c.position.start for c in mine]
        ends = [c.position.end for c in mine]
        assert starts == sorted(set(starts)) and ends == sorted(set(ends))
    assert sum(
        len([c for c in chunks if s <= c.position.start < e]) for _, s, e in sections
    ) == len(chunks)


@settings(max_examples=examples(150), deadline=None)
@given(items=st.lists(block(), min_size=1, max_size=14), config=chunk_settings())
def test_chunking_properties(items: list[Item], config: ChunkSettings) -> None:
    check_properties(document(*items), config)


LONG_PARAGRAPH = st.lists(WORD, min_size=40, max_size=300).map(" ".join).map(para)


@settings(max_examples=examples(40), deadline=None)
@given(
    items=st.lists(st.one_of(LONG_PARAGRAPH, block()), min_size=3, max_size=10),
    config=chunk_settings(),
)
def test_chunking_properties_on_long_sections(items: list[Item], config: ChunkSettings) -> None:
    check_properties(document(heading("Long", 1), *items), config)
