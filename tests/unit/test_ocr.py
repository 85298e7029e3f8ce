"""OCR: the engine (lazy, cached, missing), page geometry, reading order and paragraphs, and
the character error rate the benchmark reports. Real OCR runs on small pictures drawn here;
the engine is loaded once per test session (once per process, as in a worker)."""

from __future__ import annotations

import importlib.util
import resource
import sys
from pathlib import Path
from types import ModuleType

import pytest
from PIL import Image, ImageDraw, ImageFont

from lorebase.errors import ExtractionFailed
from lorebase.extract import ocr
from lorebase.extract.ocr_layout import Line, join_lines, paragraphs, reading_order
from lorebase.types import FailureReason

pytestmark = pytest.mark.slow  # real OCR: seconds a page (not in the fast lane)

BENCH = Path(__file__).resolve().parents[2] / "bench" / "ocr.py"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_ocr", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bench = _bench()


def drawn(lines: list[str], *, size: int = 40, width: int = 1100) -> Image.Image:
    """White picture with ``lines`` in black, Pillow's default font; "" leaves a gap."""
    font = ImageFont.load_default(size=size)
    image = Image.new("RGB", (width, size * 2 * (len(lines) + 1)), "white")
    draw = ImageDraw.Draw(image)
    for number, line in enumerate(lines):
        draw.text((size, size + number * size * 2), line, font=font, fill="black")
    return image


def line(text: str, x0: float, y0: float, x1: float, y1: float) -> Line:
    return Line(text, 0.99, (x0, y0, x1, y1))


# -- the character error rate -------------------------------------------------------------------


def _reference_distance(a: str, b: str) -> int:
    previous = list(range(len(b) + 1))
    for i, char in enumerate(a, 1):
        current = [i]
        for j, other in enumerate(b, 1):
            current.append(
                min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (char != other))
            )
        previous = current
    return previous[-1]


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("", ""),
        ("", "abc"),
        ("kitten", "sitting"),
        ("flaw", "lawn"),
        ("abc", "abc"),
        ("intention", "execution"),
        ("a b\nc", "ab c"),
        ("ü€x", "xü"),
    ],
)
def test_levenshtein_matches_the_textbook_table(a: str, b: str) -> None:
    assert bench.levenshtein(a, b) == _reference_distance(a, b)


def test_character_error_rate_normalises_whitespace() -> None:
    assert bench.character_error_rate("The  quick\nbrown fox", "The quick brown fox") == 0
    assert bench.character_error_rate("The quick brown fax", " The quick brown fox ") == 1 / 19
    assert bench.character_error_rate("anything", "") == 8


# -- the engine ---------------------------------------------------------------------------------


def test_engine_is_loaded_once_per_process() -> None:
    assert ocr.available()
    assert ocr.engine() is ocr.engine()


def test_missing_extra_says_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ocr, "_engine", None)
    monkeypatch.setitem(sys.modules, "rapidocr_onnxruntime", None)  # import fails
    assert not ocr.available()
    with pytest.raises(ExtractionFailed) as caught:
        ocr.engine()
    assert caught.value.reason is FailureReason.OCR_UNAVAILABLE
    assert caught.value.detail == ocr.INSTALL_HINT
    assert "pip install 'lorebase[ocr]'" in str(caught.value)


def test_a_page_is_read_in_paragraphs_with_boxes() -> None:
    page = ocr.read_page(
        drawn(
            [
                "Shipping schedule for the spring",
                "",
                "Boats leave the harbour at dawn.",
                "They return before the evening tide.",
            ]
        )
    )
    texts = [paragraph.text for paragraph in page.paragraphs]
    assert texts == [
        "Shipping schedule for the spring",
        "Boats leave the harbour at dawn. They return before the evening tide.",
    ]
    assert [len(paragraph.boxes) for paragraph in page.paragraphs] == [1, 2]
    first, second = page.paragraphs[1].boxes
    assert 0 <= first[0] < first[2] <= 1 and 0 <= first[1] < first[3] <= 1
    assert first[3] <= second[1] + 0.01  # the second line below the first
    assert page.confidence is not None and page.confidence > 0.9


@pytest.mark.parametrize("turn", [Image.Transpose.ROTATE_90, Image.Transpose.ROTATE_180])
def test_a_turned_page_is_read_upright_with_boxes_where_the_text_stands(
    turn: Image.Transpose,
) -> None:
    upright = drawn(["Turned pages are read upright", "by the direction model too."], width=1000)
    page = ocr.read_page(upright.transpose(turn))
    assert " ".join(p.text for p in page.paragraphs) == (
        "Turned pages are read upright by the direction model too."
    )
    (x0, y0, x1, y1), _ = page.paragraphs[0].boxes
    if turn is Image.Transpose.ROTATE_90:  # counter-clockwise: lines run bottom to top
        assert y1 - y0 > x1 - x0 and x0 < 0.5
    else:  # upside down: the first line is at the bottom
        assert x1 - x0 > y1 - y0 and y0 > 0.5


def test_a_picture_without_text_has_no_paragraphs() -> None:
    page = ocr.read_page(Image.new("RGB", (400, 300), "white"))
    assert page == ocr.PageText((), None)


# -- geometry ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("length", "size", "overlap"),
    [(500, 640, 100), (1290, 640, 100), (40_000, 862, 75), (641, 640, 300)],
)
def test_tiles_cover_the_length_once(length: int, size: int, overlap: int) -> None:
    pieces = ocr.tiles(length, size, overlap)
    assert pieces[0][2] == 0 and pieces[-1][3] == length
    for (start, end, keep_from, keep_to), following in zip(
        pieces, [*pieces[1:], None], strict=True
    ):
        assert 0 <= start <= keep_from < keep_to <= end <= length and end - start <= size
        if following is not None:
            assert following[2] == keep_to  # keep ranges meet
            assert keep_to - following[0] >= min(overlap, size // 2) // 2 - 1
            assert end - keep_to >= min(overlap, size // 2) // 2 - 1


def test_detection_scale() -> None:
    # A letter page at 300 dpi comes down to about 1.3 million pixels.
    scale = ocr.detection_scale(2550, 3300)
    assert 1.2e6 < 2550 * 3300 * scale**2 <= ocr.DET_PIXELS
    # A small screenshot is enlarged: to the detector's pixels, at most four times.
    assert ocr.detection_scale(700, 130) == pytest.approx((ocr.DET_PIXELS / 700 / 130) ** 0.5)
    assert ocr.detection_scale(200, 40) == 4.0
    assert ocr.detection_scale(800, 1000) == 1.0  # short side past 736: as it is
    # A tall screenshot keeps its width's scale; it is read in tiles down its length.
    assert ocr.detection_scale(1280, 30_000) == ocr.detection_scale(1280, 1920)


@pytest.mark.parametrize("turns", [0, 1, 2, 3])
def test_turn_point_and_back(turns: int) -> None:
    width, height = 300.0, 200.0
    x, y = ocr.turn_point(30, 50, turns, width, height)
    turned = (height, width) if turns % 2 else (width, height)
    assert 0 <= x <= turned[0] and 0 <= y <= turned[1]
    assert ocr.turn_point(x, y, -turns, *turned) == (30, 50)


def test_working_size() -> None:
    assert ocr.working_size(2550, 3300) == (2550, 3300)
    width, height = ocr.working_size(10_000, 5_000)
    assert width * height <= ocr.WORKING_PIXELS * 1.001 and abs(width - 2 * height) <= 1


def test_confidences_as_metadata_and_warnings() -> None:
    values = [0.98765, None, 0.5]
    assert ocr.confidence_values(values) == ("0.988", "-", "0.500")
    assert ocr.confidence_warnings(values) == ("low_ocr_confidence:1",)
    assert ocr.confidence_warnings([0.95]) == ()


def test_page_budget_stops_before_the_time_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = iter([100.0, 130.0, 130.0])  # a page takes 30 s; then 130 s are used
    monkeypatch.setattr(ocr, "_cpu_seconds", lambda: next(clock))
    monkeypatch.setattr(ocr, "read_page", lambda image: ocr.PageText((), None))
    monkeypatch.setattr(resource, "getrlimit", lambda which: (160, resource.RLIM_INFINITY))
    budget = ocr.PageBudget()
    assert budget.allows_another()  # nothing known yet
    budget.read(Image.new("L", (10, 10)))
    assert not budget.allows_another()  # 30 s left, 45 s needed


def test_page_budget_without_a_limit_reads_every_page(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(resource, "getrlimit", lambda which: (resource.RLIM_INFINITY,) * 2)
    budget = ocr.PageBudget()
    monkeypatch.setattr(ocr, "read_page", lambda image: ocr.PageText((), None))
    budget.read(Image.new("L", (10, 10)))
    assert budget.allows_another()


# -- reading order -------------------------------------------------------------------------------


def _column(x0: float, x1: float, top: float, count: int, name: str) -> list[Line]:
    return [line(f"{name} {n}", x0, top + 40 * n, x1, top + 40 * n + 30) for n in range(count)]


def test_two_columns_between_full_width_lines() -> None:
    title = line("A title across both columns", 100, 0, 900, 40)
    left = _column(100, 480, 100, 6, "left")
    right = _column(520, 900, 100, 6, "right")
    closing = line("Closing words across the whole width of the page", 100, 400, 900, 430)
    lines = [*right, closing, *left, title]  # any order in
    order = [item.text for block in reading_order(lines) for item in block]
    assert order == [
        title.text,
        *(item.text for item in left),
        *(item.text for item in right),
        closing.text,
    ]


def test_a_heading_below_both_columns_is_read_after_them() -> None:
    left = _column(100, 480, 0, 8, "left")
    right = _column(520, 900, 0, 5, "right")
    heading = line("Further notes", 100, 400, 300, 430)  # left side, after a gap
    order = [item.text for block in reading_order([*left, *right, heading]) for item in block]
    assert order[-1] == "Further notes"
    assert order.index("left 7") < order.index("right 0")


def test_a_form_of_short_pieces_is_read_row_by_row() -> None:
    rows = []
    for n in range(6):
        rows += [
            line(f"Label {n}:", 100, 50 * n, 220, 50 * n + 30),
            line(f"value {n}", 600, 50 * n, 700, 50 * n + 30),
        ]
    order = [item.text for block in reading_order(rows) for item in block]
    assert order[:4] == ["Label 0:", "value 0", "Label 1:", "value 1"]


def test_a_table_of_figures_is_not_read_as_columns() -> None:
    rows = []
    for n in range(6):
        rows += [
            line(f"{1000 + n} {2000 + n} {3000 + n}", 100, 50 * n, 420, 50 * n + 30),
            line(f"{4000 + n} {5000 + n} {6000 + n}", 500, 50 * n, 820, 50 * n + 30),
        ]
    order = [item.text for block in reading_order(rows) for item in block]
    assert order[:2] == ["1000 2000 3000", "4000 5000 6000"]


def test_paragraphs_by_gaps_indents_markers_and_heights() -> None:
    block = [
        line("A Heading In Large Type", 100, 0, 600, 60),
        line("The first paragraph runs over", 100, 80, 900, 110),
        line("two full lines and ends here.", 100, 115, 700, 145),
        line("An indented paragraph starts here", 140, 150, 900, 180),
        line("and goes on at the margin.", 100, 185, 600, 215),
        line("After a gap, a new paragraph.", 100, 280, 700, 310),
        line("• a bullet item that wraps onto", 100, 315, 900, 345),
        line("a hanging indent", 130, 350, 500, 380),
        line("• a second bullet", 100, 385, 500, 415),
    ]
    grouped = [[item.text for item in group] for group in paragraphs(block)]
    assert grouped == [
        ["A Heading In Large Type"],
        ["The first paragraph runs over", "two full lines and ends here."],
        ["An indented paragraph starts here", "and goes on at the margin."],
        ["After a gap, a new paragraph."],
        ["• a bullet item that wraps onto", "a hanging indent"],
        ["• a second bullet"],
    ]


def test_lines_side_by_side_are_one_row_left_to_right() -> None:
    lines = [line("world", 300, 2, 400, 32), line("hello", 100, 0, 200, 30)]
    assert [item.text for block in reading_order(lines) for item in block] == ["hello", "world"]


def test_join_lines() -> None:
    assert join_lines(["We need more infor-", "mation on the Jean-", "Paul case."]) == (
        "We need more information on the Jean-Paul case."
    )
    assert join_lines(["日本語の", "文章です"]) == "日本語の文章です"
    assert join_lines([]) == ""


def test_direction_model_sees_a_window_of_a_long_line() -> None:
    """A whole long line squeezed into the model's 48 x 192 input reads as noise (a poster of
    thirty long lines came out upside down): it is shown the line's middle, 4:1."""
    import numpy

    long_line = numpy.zeros((40, 2000, 3), dtype=numpy.uint8)
    long_line[:, 1000] = 255
    window = ocr._window(long_line)
    assert window.shape == (40, 160, 3)
    assert window[:, 80].max() == 255  # the middle
    short = numpy.zeros((40, 100, 3), dtype=numpy.uint8)
    assert ocr._window(short).shape == (40, 100, 3)
