"""Scanned PDF pages: pages without a usable text layer, rendered and read by OCR.

A page :mod:`lorebase.extract.pdf` finds no usable text on is rendered with pdfium at
``RENDER_DPI`` (fewer dots for a page so large it would pass OCR's working size) and read by
:func:`lorebase.extract.ocr.read_page`. A page without any object is blank and not rendered.
Before rendering, the pixels of the page's images are added up: past ``max_image_pixels``
the page is not rendered (pdfium would decode every one of them) and counts as a page without
text, with a warning; so does a page there is no CPU time left for (a long scan yields the
pages read before the file's time limit, see :class:`lorebase.extract.ocr.PageBudget`, with a
warning ``pages_past_time_limit:N``). :class:`PageScans` keeps what the document's metadata
and warnings say about its scanned pages: ``ocr_pages`` (their numbers), ``ocr_confidence``
(their mean line scores) and ``low_ocr_confidence:N``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from lorebase.extract import ocr
from lorebase.extract.ocr_layout import Paragraph
from lorebase.settings import ExtractSettings
from lorebase.types import MetadataValue

if TYPE_CHECKING:
    from PIL import Image

RENDER_DPI = 300
"""Scanned pages are rendered at this resolution. On linn.pdf the character error rate is
6.6 % at 150 dpi, 2.30 % at 200 and 2.28 % at 300 (the detector sees the same ~1.3 million
pixel copy each time; the recogniser reads lines cropped from the render); 300 costs ~5 %
more CPU than 200 and keeps a margin for small print."""

_POINTS_PER_INCH = 72
_MAX_OBJECT_DEPTH = 8  # images inside form XObjects inside form XObjects...


class PageScans:
    """OCR of one document's pages that have no text layer."""

    def __init__(self, settings: ExtractSettings) -> None:
        self.settings = settings
        self._usable: bool | None = None  # known once a page needs OCR
        self.pages: list[int] = []
        self.confidences: list[float | None] = []
        self.over_limit = 0
        self.past_time = 0
        self._budget = ocr.PageBudget()

    def usable(self) -> bool:
        """Whether OCR is on and installed (asked once, on the first page that needs it)."""
        if self._usable is None:
            self._usable = self.settings.ocr and ocr.available()
        return self._usable

    def read(self, pdf: pdfium.PdfDocument, index: int) -> tuple[Paragraph, ...]:
        """The paragraphs OCR reads on page ``index``; none when OCR cannot run, the page is
        blank or over the pixel limit, or holds no text it can read."""
        if not self.usable():
            return ()
        if not self._budget.allows_another():
            self.past_time += 1
            return ()
        image = self._render(pdf, index)
        if image is None:
            return ()
        text = self._budget.read(image)
        del image
        self.pages.append(index + 1)
        self.confidences.append(text.confidence)
        return text.paragraphs

    def _render(self, pdf: pdfium.PdfDocument, index: int) -> Image.Image | None:
        try:
            page = pdf[index]
        except pdfium.PdfiumError:
            return None
        try:
            pixels = image_pixels(page)
            if pixels is None:
                return None
            if pixels > self.settings.max_image_pixels:
                self.over_limit += 1
                return None
            width, height = page.get_size()
            image: Image.Image = page.render(scale=render_scale(width, height)).to_pil()
            return image
        except pdfium.PdfiumError:
            return None
        finally:
            page.close()

    def failure_detail(self, saw_text: bool) -> str | None:
        """The detail of ``no_text_layer`` when no page gave text: what was tried."""
        if self.over_limit:
            return "scanned pages over max_image_pixels"
        if self.past_time:
            return "no time left to OCR its pages"
        if self.pages:
            return "OCR found no text"
        if self.settings.ocr and self._usable is False:
            return ocr.INSTALL_HINT
        return "no usable text layer" if saw_text else None

    def warnings(self) -> tuple[str, ...]:
        found = ocr.confidence_warnings(self.confidences)
        if self.over_limit:
            found += (f"pages_over_image_limit:{self.over_limit}",)
        if self.past_time:
            found += (f"pages_past_time_limit:{self.past_time}",)
        return found

    def metadata(self) -> dict[str, MetadataValue]:
        if not self.pages:
            return {}
        return {
            "ocr_pages": tuple(str(page) for page in self.pages),
            "ocr_confidence": ocr.confidence_values(self.confidences),
        }


def render_scale(width: float, height: float) -> float:
    """Pixels per point to render a ``width`` x ``height`` point page at: ``RENDER_DPI``, or
    less for a page that would pass OCR's working size. Pure."""
    scale = RENDER_DPI / _POINTS_PER_INCH
    area = max(width * height, 1.0)
    return min(scale, math.sqrt(ocr.WORKING_PIXELS / area))


def image_pixels(page: pdfium.PdfPage) -> int | None:
    """The pixels of the page's images (``None``: the page holds no object at all)."""
    if next(iter(page.get_objects(max_depth=1)), None) is None:
        return None
    total = 0
    for image in page.get_objects(
        filter=(pdfium_c.FPDF_PAGEOBJ_IMAGE,), max_depth=_MAX_OBJECT_DEPTH
    ):
        try:
            width, height = image.get_px_size()
        except pdfium.PdfiumError:
            continue
        total += max(width, 0) * max(height, 0)
    return total
