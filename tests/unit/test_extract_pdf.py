"""PDF extraction: pages, paragraphs, bookmark headings, titles, and every way a PDF fails."""

from __future__ import annotations

from pathlib import Path, PurePath

import pypdfium2 as pdfium
import pytest

from lorebase.errors import ExtractionFailed
from lorebase.extract.pdf import PdfExtractor, _paragraphs, check_expansion, clean_title
from lorebase.extract.pdf_layout import page_text
from lorebase.extract.registry import extract_bytes
from lorebase.settings import MB, ExtractSettings
from lorebase.types import ElementKind, Extracted, FailureReason
from unit.fixtures_office import (
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

DOCS = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "docs"
NO_OCR = ExtractSettings(ocr=False)
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


@pytest.mark.slow
def test_image_only_pdf_has_no_text_layer() -> None:
    error = failure(image_only_pdf(), NO_OCR)
    assert error.reason is FailureReason.NO_TEXT_LAYER
    assert error.detail is None
    # OCR reads its pages (a grey square) and finds no text either.
    error = failure(image_only_pdf())
    assert error.reason is FailureReason.NO_TEXT_LAYER
    assert error.detail == "OCR found no text"


@pytest.mark.slow
def test_garbage_font_text_is_no_usable_text_layer() -> None:
    error = failure(private_use_font_pdf(), NO_OCR)
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
    with pytest.raises(ExtractionFailed) as caught:
        extract_bytes(path.read_bytes(), path, NO_OCR)
    assert caught.value.reason is FailureReason.NO_TEXT_LAYER


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


# -- scanned pages: OCR --------------------------------------------------------------------------

SCAN_LINES = ["Minutes of the harbour board", "", "The board met on a windy Tuesday."]
SCAN_TEXT = ["Minutes of the harbour board", "The board met on a windy Tuesday."]


def scan_png(lines: list[str]) -> bytes:
    """An A4 page at 100 dpi with ``lines`` in black: a scan's picture ("" leaves a gap)."""
    import io

    from PIL import Image, ImageDraw, ImageFont

    image = Image.new("L", (827, 1169), 255)
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=30)
    for number, line in enumerate(lines):
        draw.text((80, 100 + 60 * number), line, font=font, fill=0)
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    return buffer.getvalue()


def scanned_pdf(pages: list[list[str] | str], bookmarks: dict[int, str] | None = None) -> bytes:
    """A PDF with a text page for each string and a scanned page (a picture of the lines,
    no text layer) for each list; ``bookmarks`` by page index."""
    import io

    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("Helvetica", size=11)
    for index, page in enumerate(pages):
        pdf.add_page()
        if bookmarks and index in bookmarks:
            pdf.start_section(bookmarks[index])
        if isinstance(page, str):
            pdf.multi_cell(w=0, h=6, text=page)
        else:
            pdf.image(io.BytesIO(scan_png(page)), x=0, y=0, w=210)
    return bytes(pdf.output())


@pytest.mark.slow
def test_scanned_page_is_read_by_ocr_among_text_pages() -> None:
    pages: list[list[str] | str] = [LONG, SCAN_LINES, "The last page has a text layer."]
    extracted = extract(scanned_pdf(pages, bookmarks={1: "Minutes of the harbour board"}))
    assert_invariants(extracted)
    # The bookmark is the page's heading; the paragraph that only repeats it is left out.
    assert [(e.text, e.page) for e in extracted.elements if e.kind is ElementKind.HEADING] == [
        ("Minutes of the harbour board", 2)
    ]
    assert texts(extracted) == [LONG, SCAN_TEXT[1], "The last page has a text layer."]
    assert [e.page for e in extracted.elements if e.kind is ElementKind.PARAGRAPH] == [1, 2, 3]
    (scanned,) = [e for e in extracted.elements if e.boxes]
    assert scanned.page == 2 and len(scanned.boxes) == 1
    x0, y0, x1, y1 = scanned.boxes[0]
    assert 0.05 < x0 < x1 < 0.9 and 0.1 < y0 < y1 < 0.3  # near the top left, as drawn
    assert extracted.warnings == ()
    assert extracted.metadata["ocr_pages"] == ("2",)
    confidences = extracted.metadata["ocr_confidence"]
    assert isinstance(confidences, tuple)
    (confidence,) = confidences
    assert float(confidence) > 0.9


@pytest.mark.slow
def test_scanned_pdf_in_a_worker_within_its_limits() -> None:
    from lorebase.extract.sandbox import ExtractionPool

    with ExtractionPool(ExtractSettings(workers=1)) as pool:  # 1 GB, 60 s
        extracted = pool.extract(scanned_pdf([SCAN_LINES]), PDF_PATH)
    assert texts(extracted) == SCAN_TEXT


def test_without_ocr_the_scan_keeps_no_text_layer_with_the_hint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from lorebase.extract import ocr

    monkeypatch.setattr(ocr, "_engine", None)
    monkeypatch.setitem(__import__("sys").modules, "rapidocr_onnxruntime", None)
    error = failure(scanned_pdf([SCAN_LINES]))
    assert error.reason is FailureReason.NO_TEXT_LAYER
    assert error.detail == ocr.INSTALL_HINT
    assert "pip install 'lorebase[ocr]'" in str(error)
    extracted = extract(scanned_pdf([LONG, SCAN_LINES]))
    assert texts(extracted) == [LONG]
    assert extracted.warnings == ("pages_without_text:1",)
    assert "ocr_pages" not in extracted.metadata


def test_scan_over_the_pixel_limit_is_left_out_with_a_warning() -> None:
    tight = ExtractSettings(max_image_pixels=500_000)  # the scan's picture is ~970,000
    extracted = extract(scanned_pdf([LONG, SCAN_LINES]), tight)
    assert texts(extracted) == [LONG]
    assert extracted.warnings == ("pages_without_text:1", "pages_over_image_limit:1")
    error = failure(scanned_pdf([SCAN_LINES]), tight)
    assert error.reason is FailureReason.NO_TEXT_LAYER
    assert error.detail == "scanned pages over max_image_pixels"


def test_scans_past_the_time_budget_are_left_out_with_a_warning(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from lorebase.extract import ocr

    answers = iter([True, False])  # time for the first scanned page only
    monkeypatch.setattr(ocr.PageBudget, "allows_another", lambda self: next(answers))
    extracted = extract(scanned_pdf([SCAN_LINES, LONG, SCAN_LINES]))
    assert texts(extracted) == [*SCAN_TEXT, LONG]
    assert extracted.warnings == ("pages_without_text:1", "pages_past_time_limit:1")


def test_blank_page_is_not_rendered(monkeypatch: pytest.MonkeyPatch) -> None:
    from fpdf import FPDF

    from lorebase.extract import ocr

    def no_ocr(image: object) -> None:
        raise AssertionError("a blank page went to OCR")

    monkeypatch.setattr(ocr, "read_page", no_ocr)
    pdf = FPDF()
    pdf.set_font("Helvetica", size=11)
    pdf.add_page()
    pdf.multi_cell(w=0, h=6, text=LONG)
    pdf.add_page()  # nothing on it
    extracted = extract(bytes(pdf.output()))
    assert texts(extracted) == [LONG]
    assert extracted.warnings == ("pages_without_text:1",)


@pytest.fixture(scope="module")
def scans() -> dict[str, Extracted]:
    """The scanned corpus PDFs read with OCR, each once (linn, c02-22, loremipsum: ~12 s)."""
    names = ("linn.pdf", "c02-22.pdf", "loremipsum-flat.pdf")
    return {name: read(DOCS / "pdf_scanned" / name) for name in names}


@pytest.mark.corpus
@corpus
@pytest.mark.slow
def test_corpus_scan_is_read_within_five_percent_cer(scans: dict[str, Extracted]) -> None:
    import importlib.util

    bench = Path(__file__).resolve().parents[2] / "bench" / "ocr.py"
    spec = importlib.util.spec_from_file_location("bench_ocr", bench)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    linn = scans["linn.pdf"]
    assert_invariants(linn)
    reference = (DOCS / "pdf_scanned" / "linn.groundtruth.txt").read_text(encoding="utf-8")
    assert module.character_error_rate(linn.text, reference) <= 0.05
    # The two columns are read one after the other, each paragraph with its boxes.
    assert linn.text.index("program changes!") < linn.text.index("simply use LOCATE")
    assert all(e.boxes for e in linn.elements)


@pytest.mark.corpus
@corpus
@pytest.mark.slow
def test_corpus_scans_yield_their_text(scans: dict[str, Extracted]) -> None:
    chapter = scans["c02-22.pdf"].text  # Huckleberry Finn, chapter II, with a picture
    assert "went tip-toeing along a path amongst" in chapter
    assert "THEY TIP-TOED ALONG." in chapter  # the caption
    lorem = scans["loremipsum-flat.pdf"].text
    assert "Lorem ipsum dolor sit amet, consectetur adipiscing elit." in lorem
    for extracted in scans.values():
        assert extracted.metadata["ocr_pages"] == ("1",)
        assert float(extracted.metadata["ocr_confidence"][0]) > 0.9


@pytest.mark.corpus
@corpus
@pytest.mark.slow
def test_corpus_sideways_scan_is_read_upright() -> None:
    """cardinal.pdf holds one page four ways round; its second page lies on its side."""
    source = pdfium.PdfDocument(DOCS / "pdf_scanned" / "cardinal.pdf")
    single = pdfium.PdfDocument.new()
    single.import_pages(source, [1])
    import io

    buffer = io.BytesIO()
    single.save(buffer)
    text = extract(buffer.getvalue()).text
    assert "The LinnSequencer is a state-of-the-art composition and performance tool" in text
    assert text.index("program changes!") < text.index("simply use LOCATE")
