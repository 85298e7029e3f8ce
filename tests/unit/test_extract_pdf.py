"""PDF extraction: pages, paragraphs, bookmark headings, titles, and every way a PDF fails."""

from __future__ import annotations

from pathlib import Path, PurePath

import pypdfium2 as pdfium
import pytest
from fixtures_office import (
    CORPUS_REASON,
    bomb_pdf,
    columns_pdf,
    encrypted_pdf,
    handmade_pdf,
    image_only_pdf,
    line_numbered_pdf,
    pageless_pdf,
    private_use_font_pdf,
    text_pdf,
    text_stream,
)

from lorebase.errors import ExtractionFailed
from lorebase.extract.pdf import PdfExtractor, _paragraphs, check_expansion, clean_title
from lorebase.extract.pdf_layout import page_text
from lorebase.extract.registry import extract_bytes
from lorebase.settings import MB, ExtractSettings
from lorebase.types import ElementKind, Extracted, FailureReason

DOCS = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "docs"
PDF_PATH = PurePath("doc.pdf")
LONG = (
    "Retrieval systems split long documents into passages before they index them, and every "
    "passage keeps the page it came from so that an answer can cite it."
)


def extract(data: bytes, settings: ExtractSettings | None = None) -> Extracted:
    return extract_bytes(data, PDF_PATH, settings or ExtractSettings())


def failure(data: bytes, settings: ExtractSettings | None = None) -> ExtractionFailed:
    with pytest.raises(ExtractionFailed) as caught:
        extract(data, settings)
    return caught.value


def assert_invariants(extracted: Extracted) -> None:
    assert extracted.page_count is not None
    for element in extracted.elements:
        assert extracted.text[element.start : element.end] == element.text
        assert element.page is not None
        assert 1 <= element.page <= extracted.page_count


def texts(extracted: Extracted, kind: ElementKind = ElementKind.PARAGRAPH) -> list[str]:
    return [element.text for element in extracted.elements if element.kind is kind]


# -- reading -------------------------------------------------------------------------------------


def test_pages_paragraphs_and_page_breaks() -> None:
    data = text_pdf([[LONG, "A second paragraph on page one."], ["Page two stands alone."]])
    extracted = extract(data)
    assert_invariants(extracted)
    assert extracted.page_count == 2
    kinds = [element.kind for element in extracted.elements]
    assert kinds.count(ElementKind.PAGE_BREAK) == 1
    assert texts(extracted) == [LONG, "A second paragraph on page one.", "Page two stands alone."]
    assert [element.page for element in extracted.elements] == [1, 1, 2, 2]
    assert extracted.warnings == ()


def test_hyphenated_line_ends_are_joined_only_before_lowercase() -> None:
    data = text_pdf([["We need more infor-\nmation on the Jean-\nPaul case today."]])
    assert texts(extract(data)) == ["We need more information on the Jean-Paul case today."]


def test_bookmarks_become_headings_on_their_page() -> None:
    sections = [(0, 0, "Getting Started"), (1, 1, "Installing the Tool")]
    extracted = extract(text_pdf([[LONG], [LONG]], sections=sections))
    assert_invariants(extracted)
    headings = [
        (element.text, element.level, element.page)
        for element in extracted.elements
        if element.kind is ElementKind.HEADING
    ]
    assert headings == [("Getting Started", 1, 1), ("Installing the Tool", 2, 2)]
    # The heading replaces its line on the page instead of repeating it as a paragraph.
    assert "Getting Started" not in texts(extracted)


def test_title_from_metadata() -> None:
    assert extract(text_pdf([[LONG]], title="Annual Report 2024")).title == "Annual Report 2024"
    assert extract(text_pdf([[LONG]], title="Untitled")).title is None
    assert extract(text_pdf([[LONG]])).title is None


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("A Field Guide", "A Field Guide"),
        ("Microsoft Word - Annual Report.doc", "Annual Report"),
        ("Microsoft Word - report_v2.doc", None),
        ("10811.exe", None),
        ("loremipsum.jpg", None),
        ("untitled", None),
        ("  ", None),
        (None, None),
        ("---", None),
    ],
)
def test_clean_title(raw: str | None, expected: str | None) -> None:
    assert clean_title(raw) == expected


def test_empty_user_password_is_read() -> None:
    assert texts(extract(encrypted_pdf(""))) == ["Protected words live on this page."]


def test_text_size_limit_applies() -> None:
    error = failure(text_pdf([[LONG]]), ExtractSettings(max_text_chars=50))
    assert error.reason is FailureReason.TOO_LARGE


def test_paragraphs_by_blank_lines_when_the_page_has_them() -> None:
    lines = ["", "one a", "one b", "", "", "two", ""]
    assert _paragraphs(lines) == [["one a", "one b"], ["two"]]


def test_paragraphs_by_layout_without_blank_lines() -> None:
    full = " ".join(["Words"] * 10)
    lines = [full, full, "ends here.", full, full + ".", "Short Title", full, "last words"]
    assert _paragraphs(lines) == [
        [full, full, "ends here."],
        [full, full + "."],
        ["Short Title"],
        [full, "last words"],
    ]


# -- failures ------------------------------------------------------------------------------------


def test_user_password_means_encrypted() -> None:
    assert failure(encrypted_pdf("secret")).reason is FailureReason.ENCRYPTED


def test_image_only_pdf_has_no_text_layer() -> None:
    error = failure(image_only_pdf())
    assert error.reason is FailureReason.NO_TEXT_LAYER
    assert error.detail is None


def test_garbage_font_text_is_no_usable_text_layer() -> None:
    error = failure(private_use_font_pdf())
    assert error.reason is FailureReason.NO_TEXT_LAYER
    assert error.detail == "no usable text layer"


def test_garbage_pages_are_skipped_with_a_warning() -> None:
    extracted = extract(private_use_font_pdf(good_pages=2))
    assert_invariants(extracted)
    assert extracted.page_count == 3
    assert extracted.warnings == ("pages_without_text:1",)
    assert texts(extracted) == ["Readable words on a good page."] * 2


@pytest.mark.parametrize(
    "data",
    [b"%PDF-1.4\nthis is not a pdf at all\n%%EOF", b"\x00\x01garbage" * 50],
    ids=["header-only", "garbage"],
)
def test_unreadable_bytes_are_corrupt(data: bytes) -> None:
    assert failure(data).reason is FailureReason.CORRUPT


def test_truncated_pdf_is_corrupt() -> None:
    data = text_pdf([[LONG]] * 3)
    assert failure(data[: len(data) // 2]).reason is FailureReason.CORRUPT


def test_pdf_without_pages_is_corrupt() -> None:
    assert failure(pageless_pdf()).reason is FailureReason.CORRUPT


def test_handmade_pdf_reads() -> None:
    extracted = extract(handmade_pdf([text_stream(b"Plain words"), text_stream(b"More words")]))
    assert texts(extracted) == ["Plain words", "More words"]
    assert extracted.page_count == 2


# -- decompression bombs -------------------------------------------------------------------------


@pytest.mark.parametrize("layers", [1, 2])
def test_decompression_bomb_is_too_large(layers: int) -> None:
    data = bomb_pdf(20 * MB, flate_layers=layers)
    assert len(data) < 64 * 1024
    error = failure(data, ExtractSettings(max_expanded_bytes=5 * MB))
    assert error.reason is FailureReason.TOO_LARGE
    assert error.detail == "expands past the limit"


def test_bomb_under_the_default_limit_is_read() -> None:
    extracted = PdfExtractor(ExtractSettings()).extract(bomb_pdf(20 * MB), PDF_PATH)
    assert texts(extracted) == ["Bomb page text"]


def test_expansion_check_counts_only_inflated_bytes() -> None:
    data = bomb_pdf(2 * MB)
    check_expansion(data, 3 * MB)
    with pytest.raises(ExtractionFailed):
        check_expansion(data, 1 * MB)


# -- corpus --------------------------------------------------------------------------------------

corpus = pytest.mark.skipif(not DOCS.is_dir(), reason=CORPUS_REASON)


def corpus_files(folder: str, pattern: str = "*.pdf") -> list[Path]:
    return sorted((DOCS / folder).glob(pattern)) if DOCS.is_dir() else []


def read(path: Path) -> Extracted:
    return extract_bytes(path.read_bytes(), path, ExtractSettings())


def read_failure(path: Path) -> ExtractionFailed:
    with pytest.raises(ExtractionFailed) as caught:
        read(path)
    return caught.value


@pytest.mark.corpus
@corpus
@pytest.mark.parametrize("path", corpus_files("pdf"), ids=lambda path: path.name)
def test_corpus_pdfs_yield_text(path: Path) -> None:
    extracted = read(path)
    assert_invariants(extracted)
    assert len(extracted.text) > 500
    assert extracted.warnings == ()


@pytest.mark.corpus
@corpus
@pytest.mark.parametrize("path", corpus_files("pdf_scanned"), ids=lambda path: path.name)
def test_corpus_scans_have_no_text_layer(path: Path) -> None:
    assert read_failure(path).reason is FailureReason.NO_TEXT_LAYER


@pytest.mark.corpus
@corpus
@pytest.mark.parametrize(
    "path", corpus_files("pdf_encrypted", "*_pw-*.pdf"), ids=lambda path: path.name
)
def test_corpus_password_pdfs_are_encrypted(path: Path) -> None:
    assert read_failure(path).reason is FailureReason.ENCRYPTED


@pytest.mark.corpus
@corpus
@pytest.mark.parametrize(
    "path", corpus_files("pdf_encrypted", "*_empty-user-pw.pdf"), ids=lambda path: path.name
)
def test_corpus_empty_user_password_pdfs_are_read(path: Path) -> None:
    extracted = read(path)
    assert_invariants(extracted)
    assert len(extracted.text) > 1000


@pytest.mark.corpus
@corpus
def test_corpus_broken_pdfs() -> None:
    broken = DOCS / "pdf_broken"
    assert read_failure(broken / "empty.pdf").reason is FailureReason.EMPTY
    assert read_failure(broken / "invalid.pdf").reason is FailureReason.CORRUPT
    # The cross-reference table is damaged; pdfium rebuilds it and the text is all there.
    assert "Beautiful is better" in read(broken / "zen_of_python_corrupted.pdf").text
    # Malformed objects; pdfium recovers the one line of text on its only page.
    malformed = read(broken / "malformed-from-issue-932.pdf")
    assert malformed.page_count == 1
    assert "2021" in malformed.text


@pytest.mark.corpus
@corpus
def test_corpus_mojibake_slides_read_with_pdfium() -> None:
    """pdfminer reads these Japanese slides as garbage; pdfium maps their fonts correctly,
    so the garbage rule keeps every page."""
    extracted = read(DOCS / "pdf_broken" / "nlp2004slides-mojibake.pdf")
    assert_invariants(extracted)
    assert extracted.page_count == 31
    assert extracted.warnings == ()
    assert "固有表現" in extracted.text


@pytest.mark.corpus
@corpus
def test_corpus_bookmark_heading_and_title() -> None:
    paper = read(DOCS / "pdf" / "layout-parser-paper-2p.pdf")
    first = paper.elements[0]
    assert first.kind is ElementKind.HEADING
    assert (first.level, first.page) == (1, 1)
    assert first.text.startswith("LayoutParser: A Unified Toolkit")
    assert read(DOCS / "pdf" / "irs-f1040nr-form.pdf").title == "2007 Form 1040NR"
    assert read(DOCS / "pdf" / "scotus-transcript-p1.pdf").title is None  # "10811.exe"


# -- columns -------------------------------------------------------------------------------------


def _column(name: str, count: int = 30) -> list[str]:
    """Lines of numbered sentences, each sentence broken over two lines."""
    lines: list[str] = []
    for number in range(1, count // 2 + 1):
        lines += [f"{name} sentence number {number} starts", f"here and ends here {number}."]
    return lines


def test_two_columns_are_read_one_after_the_other() -> None:
    data = columns_pdf([_column("Alpha"), _column("Beta")], heading="A Heading Across Both")
    extracted = extract(data)
    assert_invariants(extracted)
    text = extracted.text
    assert text.index("A Heading Across Both") < text.index("Alpha sentence number 1 ")
    assert text.rindex("Alpha") < text.index("Beta")
    for line in text.splitlines():
        assert not ("Alpha" in line and "Beta" in line)
    for name in ("Alpha", "Beta"):
        assert f"{name} sentence number 7 starts here and ends here 7." in text


def test_single_column_is_unchanged() -> None:
    data = text_pdf([[LONG, "A second paragraph on page one.", LONG]])
    textpage = pdfium.PdfDocument(data)[0].get_textpage()
    assert page_text(textpage, (0, 0, 595, 842)) == textpage.get_text_bounded()


def test_number_grid_is_not_split_into_columns() -> None:
    grid = [
        [" ".join(f"{row * 7 + col + k:,}" for k in range(990, 996)) for row in range(40)]
        for col in range(2)
    ]
    data = columns_pdf(grid)
    textpage = pdfium.PdfDocument(data)[0].get_textpage()
    assert page_text(textpage, (0, 0, 595, 842)) == textpage.get_text_bounded()


TRANSCRIPT = [
    "Q. Where were you on the night of the audit?"
    if n % 5 == 0
    else f"the witness stated that invoice {n * 7} was paid on time and in full before the hearing"
    for n in range(1, 26)
]


@pytest.mark.parametrize("numbers_first", [False, True])
def test_margin_line_numbers_are_left_out(numbers_first: bool) -> None:
    extracted = extract(
        line_numbered_pdf([TRANSCRIPT, TRANSCRIPT[:12]], numbers_first=numbers_first)
    )
    assert_invariants(extracted)
    text = extracted.text
    assert text.startswith("Official transcript the witness stated that invoice 7 was")
    for element in extracted.elements:  # no paragraph opens with a line number
        first = element.text.split()[0] if element.text else ""
        assert not first.isdigit() or element.text == str(element.page)  # the page number
    for line in TRANSCRIPT:
        assert line in text
    assert text.count("Q. Where were you") == 7  # five on page one, two on page two
    pages = [element.page for element in extracted.elements if "invoice 84 " in element.text]
    assert pages == [1, 2]


def test_numbers_with_text_on_their_left_are_kept() -> None:
    data = line_numbered_pdf([TRANSCRIPT[:10]], left_text="Row")
    text = extract(data).text
    assert all(str(n) in text.split() for n in range(1, 11))


def test_numbered_list_items_are_not_a_gutter() -> None:
    data = text_pdf([[f"{n}. Step number {n} of the procedure." for n in range(1, 9)]])
    assert all(f"{n}. Step number {n}" in extract(data).text for n in range(1, 9))


def _page_text(path: Path, index: int) -> str:
    pdf = pdfium.PdfDocument(path)
    page = pdf[index]
    return " ".join(page_text(page.get_textpage(), page.get_bbox()).split())


@corpus
def test_corpus_columns_read_in_order() -> None:
    irs = _page_text(DOCS / "pdf" / "irs-i1040nr-instructions.pdf", 3)
    assert (
        "Note. If you are claiming a reduced rate of, or exemption from, tax based on a tax "
        "treaty, you must generally be a resident of the particular treaty country" in irs
    )
    assert "You can have the refund deposited in one or more accounts." in irs
    paper = _page_text(DOCS / "pdf" / "naacl06-shinyama-paper.pdf", 1)
    assert "In Unrestricted Relation Discovery, the discovery process (i.e. creating new " in paper


@corpus
def test_corpus_transcript_line_numbers_are_left_out() -> None:
    text = _page_text(DOCS / "pdf" / "scotus-transcript-p1.pdf", 0)
    assert text.startswith("Official - Subject to Final Review IN THE SUPREME COURT")
    assert " 2 3 4 " not in text
    assert "on behalf of the Petitioner." in text
