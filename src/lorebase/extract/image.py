"""Images (PNG, JPEG, TIFF, WebP): the text in them, read by OCR (:mod:`lorebase.extract.ocr`).

Every frame of a TIFF is a page (a multi-page fax or scan); other files are one page (an
animated WebP: its first frame). Each page's paragraphs come in reading order with ``page``
and the ``boxes`` of their lines; the metadata's ``ocr_confidence`` holds each page's mean
line score (``"-"`` for a page where OCR found no line), and a warning counts the pages under
:data:`lorebase.extract.ocr.LOW_CONFIDENCE`. An image has no title (its file name is its path).

Before a pixel is decoded, the header's width x height is held to ``max_image_pixels``
(``too_large``), as Pillow's own decompression-bomb guard is; the EXIF orientation is applied;
a picture larger than OCR's working size is decoded reduced where the format allows (JPEG)
and scaled down; transparency is laid on white (dark text on a transparent background would
otherwise turn black on black). Text OCR cannot find is not there for lorebase: an image
without text is ``empty``, and without the ``ocr`` extra (or with ``ocr`` off) an image is
``ocr_unavailable``.
"""

from __future__ import annotations

import io
import warnings
from collections.abc import Iterator
from pathlib import PurePath
from typing import cast

from PIL import Image, ImageOps, UnidentifiedImageError

from lorebase.errors import ExtractionFailed
from lorebase.extract import ocr
from lorebase.extract.base import Extractor
from lorebase.types import ElementKind, Extracted, FailureReason

_MULTI_PAGE_FORMATS = ("TIFF",)
_ALPHA_MODES = ("RGBA", "LA", "PA", "RGBa", "La")
_ORIENTATION = 0x0112  # the EXIF tag


class ImageExtractor(Extractor):
    kind = "image"

    def extract(self, data: bytes, path: PurePath) -> Extracted:
        if not self.settings.ocr:
            raise ExtractionFailed(FailureReason.OCR_UNAVAILABLE, "OCR is turned off")
        builder = self.builder(data)
        budget = ocr.PageBudget()
        confidences: list[float | None] = []
        past_time = 0
        for number, frame in enumerate(self._pages(data), start=1):
            if number > 1:
                builder.add(ElementKind.PAGE_BREAK, "", page=number)
            if not budget.allows_another():
                past_time += 1
                continue
            page = budget.read(frame)
            del frame
            confidences.append(page.confidence)
            for paragraph in page.paragraphs:
                builder.add(
                    ElementKind.PARAGRAPH, paragraph.text, page=number, boxes=paragraph.boxes
                )
        if not any(element.text for element in builder.elements):
            raise ExtractionFailed(FailureReason.EMPTY, "OCR found no text")
        late = (f"pages_past_time_limit:{past_time}",) if past_time else ()
        return builder.build(
            page_count=len(confidences) + past_time,
            warnings=ocr.confidence_warnings(confidences) + _blank_pages(confidences) + late,
            metadata={"ocr_confidence": ocr.confidence_values(confidences)},
        )

    def _pages(self, data: bytes) -> Iterator[Image.Image]:
        """Each page decoded, upright, flattened and no larger than OCR's working size."""
        image = _open(data, self.settings.max_image_pixels)
        with image:
            frames = getattr(image, "n_frames", 1) if image.format in _MULTI_PAGE_FORMATS else 1
            for index in range(frames):
                if index:
                    image.seek(index)
                    _check_size(image.size, self.settings.max_image_pixels)
                frame = _prepared(image)
                if index == frames - 1 and frame is not image:
                    image.close()  # the decoded pixels go before OCR starts
                yield frame


def _open(data: bytes, max_pixels: int) -> Image.Image:
    """Open lazily (header only) and check the size; ``too_large`` past either guard,
    ``corrupt`` for bytes that are no image Pillow reads."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(data))
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise ExtractionFailed(FailureReason.TOO_LARGE, "image over the pixel limit") from None
    except UnidentifiedImageError:
        raise ExtractionFailed(FailureReason.CORRUPT, "not an image Pillow reads") from None
    _check_size(image.size, max_pixels)
    return image


def _check_size(size: tuple[int, int], max_pixels: int) -> None:
    width, height = size
    if width * height > max_pixels:
        raise ExtractionFailed(
            FailureReason.TOO_LARGE, f"{width}x{height} pixels, over max_image_pixels"
        )
    if min(width, height) < ocr.MIN_SIDE:
        raise ExtractionFailed(FailureReason.EMPTY, f"{width}x{height} pixels hold no text")


def _prepared(image: Image.Image) -> Image.Image:
    """The current frame decoded (reduced while decoding where the format can), turned by
    its EXIF orientation, flattened to grey or RGB and scaled to OCR's working size."""
    target = ocr.working_size(*image.size)
    if target != image.size and image.format == "JPEG":
        image.draft(None, target)  # decode at 1/2, 1/4 or 1/8 scale, still >= target
    frame = ImageOps.exif_transpose(image, in_place=False) if _turned(image) else image
    target = ocr.working_size(*frame.size)
    if target != frame.size:  # before flattening, which copies the frame once or twice
        if frame.mode in ("1", "P"):  # resized by their nearest pixel otherwise
            frame = frame.convert("RGBA" if "transparency" in frame.info else "L")
        frame = frame.resize(target, Image.Resampling.LANCZOS, reducing_gap=3.0)
    return _flattened(frame)


def _turned(image: Image.Image) -> bool:
    """Whether the EXIF orientation asks for the picture to be turned or flipped."""
    return image.getexif().get(_ORIENTATION, 1) not in (0, 1)


def _flattened(frame: Image.Image) -> Image.Image:
    """The frame as grey (``L``) or ``RGB``: transparency laid on white (dark text on a
    transparent background would turn black on black), high bit depths stretched to 8 bits,
    bilevel, palette and other colour spaces converted."""
    if frame.mode in _ALPHA_MODES or (frame.mode == "P" and "transparency" in frame.info):
        rgba = frame.convert("RGBA")
        white = Image.new("RGBA", rgba.size, "white")
        white.alpha_composite(rgba)
        return white.convert("RGB")
    if frame.mode.startswith("I;16") or frame.mode in ("I", "F"):
        return _stretched(frame)
    if frame.mode == "1":
        return frame.convert("L")
    return frame if frame.mode in ("L", "RGB") else frame.convert("RGB")


def _stretched(frame: Image.Image) -> Image.Image:
    """A high-bit-depth frame (16-bit scans, integer or float TIFFs) as 8-bit grey, its
    darkest value black and its lightest white (a plain conversion clips at 255)."""
    low, high = cast(tuple[float, float], frame.getextrema())  # one band
    span = float(high) - float(low) or 1.0
    return frame.point(lambda value: (value - low) * 255 / span).convert("L")


def _blank_pages(confidences: list[float | None]) -> tuple[str, ...]:
    """``pages_without_text:N`` for the pages of a multi-page image OCR found nothing on."""
    blank = sum(1 for value in confidences if value is None)
    return (f"pages_without_text:{blank}",) if blank and len(confidences) > 1 else ()
