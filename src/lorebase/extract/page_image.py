"""A PDF page (or an image's page) as a picture, with a passage marked where it stands: what the
document view shows beside the text, so a cited passage is seen on its page.

The page is rendered by PDFium (pypdfium2) at the width asked for, as PNG. The passage is
found in the page's text layer by its letters and digits alone (case, spacing, line breaks and
hyphens aside: the extractor joined lines and words that PDFium keeps apart): the whole
passage, or — for one that runs onto the next page or began on the one before — the longest
start or end of it the page holds. Its characters' boxes, merged per line, are drawn over the
picture in a translucent colour, turned and offset as the page is (``/Rotate``, its box). A
scanned page has no text layer: the passage is marked by
the boxes OCR gave its lines when the document was read (``regions``: fractions of the page).
An image is shown the same way (:func:`render_picture`), upright as its EXIF orientation says.
"""

from __future__ import annotations

import io
import threading
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lorebase.errors import ExtractionFailed, NotFound
from lorebase.types import FailureReason

if TYPE_CHECKING:  # PDFium and Pillow load when a page is first drawn, not with the service
    import pypdfium2 as pdfium
    from PIL import Image

MIN_WIDTH = 200
MAX_WIDTH = 2000
DEFAULT_WIDTH = 1000
MAX_PIXELS = 2000 * 3000
"""A page rendered larger than this (a long, narrow page) is scaled down to fit."""
MAX_SOURCE_PIXELS = 100_000_000
"""An image larger than this is not decoded for showing (as for reading it)."""
_PDFIUM = threading.Lock()
"""PDFium is not thread-safe, even across documents: a server renders one page at a time."""
MIN_MATCH_CHARS = 12
"""A start or end of a passage shorter than this is not taken as found on a page."""
MARK = (255, 214, 0, 110)
Box = tuple[float, float, float, float]
"""left, top, right, bottom in the picture's pixels."""


@dataclass(frozen=True, slots=True)
class PageImage:
    """One rendered page: its PNG, where it is (1-based, of ``pages``), its size in pixels and
    the boxes the passage was marked with (none: not asked for, or not found)."""

    png: bytes
    page: int
    pages: int
    width: int
    height: int
    boxes: tuple[Box, ...] = ()


def render_page(
    data: bytes,
    page: int,
    *,
    passage: str | None = None,
    regions: Sequence[Box] = (),
    width: int = DEFAULT_WIDTH,
) -> PageImage:
    """Page ``page`` (1-based) of the PDF in ``data``, ``width`` pixels wide (bounded), with
    ``passage`` marked where its text stands, else by ``regions`` (fractions of the page: OCR's
    boxes of its lines). ``NotFound`` for a page it does not have; ``ExtractionFailed`` for
    bytes PDFium cannot open (damaged, encrypted)."""
    with _PDFIUM:  # PDFium may not be entered from two threads at once
        return _render_page(data, page, passage, regions, width)


def _render_page(
    data: bytes, page: int, passage: str | None, regions: Sequence[Box], width: int
) -> PageImage:
    import pypdfium2 as pdfium

    try:
        pdf = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as error:
        reason = (
            FailureReason.ENCRYPTED if "password" in str(error).lower() else FailureReason.CORRUPT
        )
        raise ExtractionFailed(reason) from None
    try:
        pages = len(pdf)
        if not 1 <= page <= pages:
            raise NotFound(f"the document has {pages} page(s); ask for one from 1 to {pages}")
        handle = pdf[page - 1]
        try:
            return _rendered(handle, page, pages, passage, regions, width)
        finally:
            handle.close()
    finally:
        pdf.close()


def _rendered(
    handle: pdfium.PdfPage,
    page: int,
    pages: int,
    passage: str | None,
    regions: Sequence[Box],
    width: int,
) -> PageImage:
    page_width, page_height = handle.get_size()
    wanted = max(MIN_WIDTH, min(MAX_WIDTH, int(width)))
    scale = wanted / max(page_width, 1.0)
    if page_width * page_height * scale * scale > MAX_PIXELS:
        scale = (MAX_PIXELS / max(page_width * page_height, 1.0)) ** 0.5
    picture = handle.render(scale=scale).to_pil().convert("RGBA")
    boxes: list[Box] = []
    if passage:
        textpage = handle.get_textpage()
        try:
            found = locate(textpage.get_text_range(), passage)
            if found is not None:
                frame = Frame(handle.get_bbox(), handle.get_rotation() % 360, picture.width)
                boxes = _boxes(textpage, found, frame)
        finally:
            textpage.close()
    if not boxes and regions:
        boxes = scaled(regions, picture.size)
    return _image(picture, page, pages, boxes)


def render_picture(
    data: bytes,
    page: int,
    *,
    regions: Sequence[Box] = (),
    width: int = DEFAULT_WIDTH,
    max_pixels: int = MAX_SOURCE_PIXELS,
) -> PageImage:
    """Page ``page`` (1-based: a multi-page TIFF has several) of the image in ``data``,
    upright, ``width`` pixels wide (bounded), with ``regions`` (OCR's boxes, fractions of the
    page) marked. ``NotFound`` for a page it does not have; ``ExtractionFailed`` for bytes
    Pillow cannot read or an image over ``max_pixels``."""
    from PIL import Image, ImageOps, UnidentifiedImageError

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(data))
            if image.width * image.height > max_pixels:
                raise ExtractionFailed(FailureReason.TOO_LARGE, "image over the pixel limit")
            pages = getattr(image, "n_frames", 1)
            if not 1 <= page <= pages:
                raise NotFound(f"the image has {pages} page(s); ask for one from 1 to {pages}")
            image.seek(page - 1)
            if image.width * image.height > max_pixels:  # each frame has a size of its own
                raise ExtractionFailed(FailureReason.TOO_LARGE, "image over the pixel limit")
            upright = ImageOps.exif_transpose(image, in_place=False) or image
            wanted = max(MIN_WIDTH, min(MAX_WIDTH, int(width)))
            height = max(1, round(upright.height * wanted / max(upright.width, 1)))
            picture = upright.convert("RGBA").resize((wanted, height), Image.Resampling.LANCZOS)
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise ExtractionFailed(FailureReason.TOO_LARGE, "image over the pixel limit") from None
    except (UnidentifiedImageError, OSError, EOFError):
        raise ExtractionFailed(FailureReason.CORRUPT, "not an image Pillow reads") from None
    return _image(picture, page, pages, scaled(regions, picture.size))


def scaled(regions: Sequence[Box], size: tuple[int, int]) -> list[Box]:
    """Boxes given as fractions of a page, in the pixels of a picture of ``size``. Pure."""
    width, height = size
    return [(x0 * width, y0 * height, x1 * width, y1 * height) for x0, y0, x1, y1 in regions]


def _image(picture: Image.Image, page: int, pages: int, boxes: Sequence[Box]) -> PageImage:
    """The picture with ``boxes`` (pixels) tinted, as PNG."""
    from PIL import Image, ImageDraw

    if boxes:
        layer = Image.new("RGBA", picture.size, (0, 0, 0, 0))
        draw = ImageDraw.Draw(layer)
        for left, top, right, bottom in boxes:
            draw.rectangle((left - 1, top - 1, right + 1, bottom + 1), fill=MARK)
        picture = Image.alpha_composite(picture.convert("RGBA"), layer)
    out = io.BytesIO()
    picture.convert("RGB").save(out, format="PNG", optimize=False)
    return PageImage(out.getvalue(), page, pages, picture.width, picture.height, tuple(boxes))


def _letters(text: str) -> tuple[str, list[int]]:
    """The letters and digits of ``text``, case-folded, and where each stands in it. Pure."""
    kept: list[str] = []
    where: list[int] = []
    for index, char in enumerate(text):
        if char.isalnum():
            folded = char.casefold()
            kept.append(folded)
            where.extend([index] * len(folded))
    return "".join(kept), where


def locate(page_text: str, passage: str) -> tuple[int, int] | None:
    """Where ``passage`` stands in ``page_text`` as ``(first, last)`` character indices
    (inclusive), comparing letters and digits only: the whole passage, else the longest start
    of it the page holds (it runs onto the next page), else the longest end (it began on the
    one before); None when neither is :data:`MIN_MATCH_CHARS` long. Pure."""
    letters, where = _letters(page_text)
    wanted, _ = _letters(passage)
    if not letters or not wanted:
        return None
    at = letters.find(wanted)
    if at >= 0:
        return where[at], where[at + len(wanted) - 1]
    start = _longest(letters, wanted, prefix=True)
    if start is not None:
        return where[start[0]], where[start[0] + start[1] - 1]
    end = _longest(letters, wanted, prefix=False)
    if end is not None:
        return where[end[0]], where[end[0] + end[1] - 1]
    return None


def _longest(letters: str, wanted: str, *, prefix: bool) -> tuple[int, int] | None:
    """The longest start (or end) of ``wanted`` found in ``letters``: where, and how long —
    found by halving, since any shorter start of a start that is found is found too."""
    low, high, best = MIN_MATCH_CHARS, len(wanted) - 1, None
    while low <= high:
        size = (low + high) // 2
        part = wanted[:size] if prefix else wanted[-size:]
        at = letters.find(part) if prefix else letters.rfind(part)
        if at >= 0:
            best, low = (at, size), size + 1
        else:
            high = size - 1
    return best


@dataclass(frozen=True, slots=True)
class Frame:
    """How a page's own coordinates (points, from its box's bottom left, before ``/Rotate``)
    land on its picture: the page's box (left, bottom, right, top), its rotation (clockwise
    degrees, as PDFium renders it) and the picture's width in pixels."""

    bbox: tuple[float, float, float, float]
    rotation: int
    width: int

    def box(self, left: float, bottom: float, right: float, top: float) -> Box:
        """A rectangle of the page as one in the picture's pixels. Pure."""
        x0, y0, x1, y1 = self.bbox
        page_w, page_h = x1 - x0, y1 - y0
        turned = self.rotation in (90, 270)
        scale = self.width / max(page_h if turned else page_w, 1e-9)
        # Upright picture coordinates (from the top left), then turned as the picture is.
        u0, u1 = (left - x0) * scale, (right - x0) * scale
        v0, v1 = (y1 - top) * scale, (y1 - bottom) * scale
        w, h = page_w * scale, page_h * scale
        if self.rotation == 90:
            return (h - v1, u0, h - v0, u1)
        if self.rotation == 180:
            return (w - u1, h - v1, w - u0, h - v0)
        if self.rotation == 270:
            return (v0, w - u1, v1, w - u0)
        return (u0, v0, u1, v1)


def _boxes(textpage: pdfium.PdfTextPage, found: tuple[int, int], frame: Frame) -> list[Box]:
    """The boxes of characters ``found[0]..found[1]`` in the picture's pixels, one per line
    PDFium reports."""
    first, last = found
    count = textpage.count_rects(first, last - first + 1)
    return merged([frame.box(*textpage.get_rect(index)) for index in range(count)])


def merged(boxes: Sequence[Box]) -> list[Box]:
    """Boxes on the same line (overlapping vertically by more than half) joined into one. Pure."""
    out: list[Box] = []
    for box in sorted(boxes, key=lambda b: (round(b[1]), b[0])):
        if out:
            left, top, right, bottom = out[-1]
            overlap = min(bottom, box[3]) - max(top, box[1])
            if overlap > 0.5 * min(bottom - top, box[3] - box[1]):
                out[-1] = (
                    min(left, box[0]),
                    min(top, box[1]),
                    max(right, box[2]),
                    max(bottom, box[3]),
                )
                continue
        out.append(box)
    return out
