"""A PDF page as a picture with a passage marked: found by its letters whatever the spacing,
line breaks and hyphens; the start or end of a passage running over a page boundary; pages out
of range and damaged files refused."""

from __future__ import annotations

import io
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from PIL import Image

from lorebase.errors import ExtractionFailed, NotFound
from lorebase.extract.page_image import (
    MAX_WIDTH,
    MIN_MATCH_CHARS,
    locate,
    merged,
    render_page,
    render_picture,
    scaled,
)
from unit.fixtures_office import encrypted_pdf, text_pdf

PAGES = [
    ["The travel budget for the whole year is set by the board in March.", "Leave is granted."],
    ["Expenses are paid within thirty days of the claim.", "Receipts are kept for ten years."],
]


def test_a_passage_is_found_whatever_its_spacing_and_case() -> None:
    page = "The travel bud-\r\nget for the whole\r\nyear is set."
    first, last = locate(page, "travel budget for the WHOLE year") or (0, 0)
    assert page[first : last + 1] == "travel bud-\r\nget for the whole\r\nyear"


def test_a_passage_running_over_the_page_is_found_by_its_start_or_end() -> None:
    page = "Intro words here. The passage begins on this page and"
    passage = "The passage begins on this page and ends on the next one, far away."
    first, last = locate(page, passage) or (0, 0)
    assert page[first : last + 1] == "The passage begins on this page and"
    page = "ends on the next one, far away. Then other words."
    first, last = locate(page, passage) or (0, 0)
    assert page[first : last + 1] == "ends on the next one, far away"
    assert locate("nothing alike at all", passage) is None
    assert locate("", passage) is None and locate("text", "") is None


@given(st.text(alphabet="abc xyz-\n", min_size=MIN_MATCH_CHARS, max_size=80))
def test_a_passage_the_page_holds_is_found_in_full(passage: str) -> None:
    letters = "".join(c for c in passage if c.isalnum())
    page = f"before {passage} after"
    found = locate(page, passage)
    if not letters:
        assert found is None
        return
    assert found is not None
    marked = "".join(c for c in page[found[0] : found[1] + 1] if c.isalnum())
    assert marked == letters


def test_boxes_on_one_line_are_merged() -> None:
    assert merged([(0, 0, 10, 10), (12, 1, 20, 10), (0, 20, 5, 30)]) == [
        (0, 0, 20, 10),
        (0, 20, 5, 30),
    ]


def _picture(png: bytes) -> Image.Image:
    return Image.open(io.BytesIO(png))


def test_a_page_is_rendered_with_its_passage_marked() -> None:
    data = text_pdf(PAGES)
    plain = render_page(data, 2, width=600)
    assert (plain.page, plain.pages, plain.width) == (2, 2, 600) and plain.boxes == ()
    marked = render_page(data, 2, passage="paid within thirty days of the claim", width=600)
    assert len(marked.boxes) == 1
    left, top, right, bottom = marked.boxes[0]
    assert 0 <= left < right <= 600 and 0 <= top < bottom <= marked.height
    assert marked.png != plain.png
    picture = _picture(marked.png)
    assert picture.size == (marked.width, marked.height)
    # The marked area is tinted: a pixel in the middle of the box is no longer white or black.
    pixel = picture.convert("RGB").getpixel((int(left + 2), int((top + bottom) / 2)))
    assert isinstance(pixel, tuple)
    red, green, blue = pixel
    assert blue < red and blue < green
    assert render_page(data, 1, passage="paid within thirty days").boxes == ()
    assert render_page(data, 1, width=10**6).width == MAX_WIDTH


def test_pages_out_of_range_and_unreadable_files_are_refused() -> None:
    data = text_pdf(PAGES)
    for page in (0, 3, -1):
        with pytest.raises(NotFound, match="has 2 page"):
            render_page(data, page)
    with pytest.raises(ExtractionFailed):
        render_page(b"%PDF-1.7 truncated", 1)
    with pytest.raises(ExtractionFailed):
        render_page(encrypted_pdf("secret"), 1)


def _png(size: tuple[int, int], **options: Any) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, "white").save(out, "PNG", **options)
    return out.getvalue()


def test_a_scanned_page_is_marked_by_the_boxes_ocr_gave() -> None:
    from unit.fixtures_office import image_only_pdf

    data = image_only_pdf(2)
    marked = render_page(data, 1, passage="words no text layer has", regions=[(0.1, 0.2, 0.5, 0.3)])
    assert len(marked.boxes) == 1
    assert marked.boxes[0] == pytest.approx(
        (0.1 * marked.width, 0.2 * marked.height, 0.5 * marked.width, 0.3 * marked.height)
    )


def test_an_image_is_shown_upright_with_its_regions_marked() -> None:
    shown = render_picture(_png((400, 200)), 1, regions=[(0.0, 0.0, 0.5, 0.5)], width=800)
    assert (shown.width, shown.height, shown.pages) == (800, 400, 1)
    assert shown.boxes == ((0.0, 0.0, 400.0, 200.0),)
    pixel = _picture(shown.png).convert("RGB").getpixel((100, 100))
    assert isinstance(pixel, tuple) and pixel[2] < pixel[0]  # tinted
    # EXIF orientation 6: the picture is turned a quarter, as a phone took it.
    exif = Image.Exif()
    exif[0x0112] = 6
    out = io.BytesIO()
    Image.new("RGB", (400, 200), "white").save(out, "JPEG", exif=exif)
    turned = render_picture(out.getvalue(), 1, width=400)
    assert (turned.width, turned.height) == (400, 800)


def test_an_images_missing_page_or_bad_bytes_are_refused() -> None:
    with pytest.raises(NotFound, match="has 1 page"):
        render_picture(_png((300, 300)), 2)
    with pytest.raises(ExtractionFailed):
        render_picture(b"not an image at all", 1)
    with pytest.raises(ExtractionFailed):
        render_picture(_png((300, 300)), 1, max_pixels=1000)


def test_fractions_become_pixels() -> None:
    assert scaled([(0.25, 0.5, 0.75, 1.0)], (200, 100)) == [(50.0, 50.0, 150.0, 100.0)]


@pytest.mark.parametrize("rotation", [90, 180, 270])
def test_a_passage_on_a_turned_page_is_marked_over_its_text(rotation: int) -> None:
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(text_pdf(PAGES))
    pdf[1].set_rotation(rotation)
    out = io.BytesIO()
    pdf.save(out)
    data = out.getvalue()
    marked = render_page(data, 2, passage="paid within thirty days of the claim", width=600)
    plain = _picture(render_page(data, 2, width=600).png).convert("L")
    assert len(marked.boxes) == 1
    left, top, right, bottom = marked.boxes[0]
    assert 0 <= left < right <= marked.width and 0 <= top < bottom <= marked.height
    darkest, _ = plain.crop((int(left), int(top), int(right) + 1, int(bottom) + 1)).getextrema()
    assert isinstance(darkest, int) and darkest < 100  # the words are under the mark, not beside it
