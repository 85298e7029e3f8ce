"""Images read by OCR: pages, paragraphs with boxes, confidence, orientation, transparency,
multi-page TIFF, the real images of ../shared/data/formats/images, and every way an image
fails (too large, a bomb, truncated, not an image, no text, past the time limit, no OCR).

Pictures are drawn here with Pillow's default font; OCR runs for real, on one engine per test
process (the one a worker keeps)."""

from __future__ import annotations

import io
import re
import struct
import sys
import zlib
from pathlib import Path, PurePath
from typing import Any

import numpy
import pytest
from PIL import Image, ImageDraw, ImageFont

from lorebase.errors import ExtractionFailed
from lorebase.extract import ocr
from lorebase.extract.registry import extract_bytes
from lorebase.extract.sandbox import ExtractionPool
from lorebase.settings import ExtractSettings
from lorebase.types import ElementKind, Extracted, FailureReason

pytestmark = pytest.mark.slow  # real OCR: seconds a page (not in the fast lane)

NOTICE = [
    "Harbour notice for the spring",
    "",
    "Boats leave the harbour at dawn.",
    "They return before the evening tide.",
]
NOTICE_TEXT = [
    "Harbour notice for the spring",
    "Boats leave the harbour at dawn. They return before the evening tide.",
]


def drawn(lines: list[str], *, size: int = 40, width: int = 1100, mode: str = "RGB") -> Image.Image:
    """A white picture (transparent for RGBA) with ``lines`` in black; "" leaves a gap."""
    font = ImageFont.load_default(size=size)
    background = (255, 255, 255, 0) if mode == "RGBA" else "white"
    image = Image.new(mode, (width, size * 2 * (len(lines) + 1)), background)
    draw = ImageDraw.Draw(image)
    for number, text in enumerate(lines):
        draw.text((size, size + number * size * 2), text, font=font, fill="black")
    return image


def encoded(image: Image.Image, kind: str, **options: object) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, kind, **options)
    return buffer.getvalue()


def extract(data: bytes, name: str = "picture.png", **settings: Any) -> Extracted:
    return extract_bytes(data, PurePath(name), ExtractSettings(**settings))


def failure(data: bytes, name: str = "picture.png", **settings: object) -> ExtractionFailed:
    with pytest.raises(ExtractionFailed) as caught:
        extract(data, name, **settings)
    return caught.value


def paragraphs(extracted: Extracted) -> list[str]:
    return [e.text for e in extracted.elements if e.kind is ElementKind.PARAGRAPH]


@pytest.fixture(scope="module")
def notice() -> Extracted:
    return extract(encoded(drawn(NOTICE), "PNG"))


# -- reading ------------------------------------------------------------------------------------


def test_paragraphs_with_page_and_boxes(notice: Extracted) -> None:
    assert notice.kind == "image"
    assert paragraphs(notice) == NOTICE_TEXT
    assert notice.title is None
    assert notice.page_count == 1
    for element in notice.elements:
        assert notice.text[element.start : element.end] == element.text
        assert element.page == 1
        assert element.boxes
        for x0, y0, x1, y1 in element.boxes:
            assert 0 <= x0 < x1 <= 1 and 0 <= y0 < y1 <= 1
    heading, body = notice.elements
    assert heading.boxes[0][3] < body.boxes[0][1]  # read top to bottom


def test_confidence_per_page_in_the_metadata(notice: Extracted) -> None:
    confidences = notice.metadata["ocr_confidence"]
    assert isinstance(confidences, tuple)
    (value,) = confidences
    assert re.fullmatch(r"0\.\d{3}|1\.000", value) and float(value) > 0.9
    assert notice.warnings == ()


def test_jpeg_is_turned_by_its_exif_orientation() -> None:
    # Stored turned a quarter clockwise, with the tag that tells viewers to turn it back.
    stored = drawn(NOTICE[2:]).transpose(Image.Transpose.ROTATE_270)
    exif = Image.Exif()
    exif[0x0112] = 6  # "rotate 90 CW to display"
    extracted = extract(encoded(stored, "JPEG", quality=90, exif=exif), "photo.jpg")
    assert paragraphs(extracted) == NOTICE_TEXT[1:]
    (x0, y0, x1, y1), _ = extracted.elements[0].boxes
    assert x1 - x0 > y1 - y0  # boxes in the picture as it is shown: lines lie


def test_multi_page_tiff_each_frame_a_page() -> None:
    frames = [drawn(["The first page of the fax."]), drawn(["The second page of the fax."])]
    data = encoded(frames[0], "TIFF", save_all=True, append_images=frames[1:])
    extracted = extract(data, "fax.tiff")
    assert extracted.page_count == 2
    assert [(e.kind, e.page) for e in extracted.elements] == [
        (ElementKind.PARAGRAPH, 1),
        (ElementKind.PAGE_BREAK, 2),
        (ElementKind.PARAGRAPH, 2),
    ]
    assert paragraphs(extracted) == ["The first page of the fax.", "The second page of the fax."]
    assert len(extracted.metadata["ocr_confidence"]) == 2


def test_webp_and_transparent_png() -> None:
    text = ["Dark words on a clear background"]
    assert paragraphs(extract(encoded(drawn(text), "WEBP", lossless=True), "a.webp")) == text
    # Black on transparent: flattened on white, not read as black on black.
    assert paragraphs(extract(encoded(drawn(text, mode="RGBA"), "PNG"))) == text


def test_sixteen_bit_grey_is_stretched() -> None:
    grey = numpy.asarray(drawn(["Sixteen bit scanner output"]).convert("L"))
    deep = Image.fromarray(grey.astype(numpy.uint16) * 257)
    assert deep.mode.startswith("I;16")
    data = encoded(deep, "PNG")
    assert paragraphs(extract(data)) == ["Sixteen bit scanner output"]


# -- failures -----------------------------------------------------------------------------------


def test_image_without_text_is_empty() -> None:
    error = failure(encoded(Image.new("RGB", (600, 400), (200, 220, 240)), "PNG"))
    assert error.reason is FailureReason.EMPTY
    assert error.detail == "OCR found no text"


def test_one_pixel_high_image_holds_no_text() -> None:
    error = failure(encoded(Image.new("L", (100_000, 1), 255), "PNG"))
    assert error.reason is FailureReason.EMPTY


def test_image_over_the_pixel_bound_is_too_large_before_decoding() -> None:
    error = failure(_png_header_only(8_000, 8_000))  # 64 megapixels declared, ~100 bytes
    assert error.reason is FailureReason.TOO_LARGE
    assert error.detail == "8000x8000 pixels, over max_image_pixels"
    error = failure(encoded(drawn(NOTICE), "PNG"), max_image_pixels=100_000)
    assert error.reason is FailureReason.TOO_LARGE


def test_pillow_decompression_bomb_guard_is_too_large() -> None:
    # Our bound set past Pillow's own (2 x 89.5 megapixels): Pillow's error decides.
    error = failure(_png_header_only(20_000, 20_000), max_image_pixels=10**12)
    assert error.reason is FailureReason.TOO_LARGE
    assert error.detail == "image over the pixel limit"
    # Between one and two times Pillow's bound it only warns: taken as the bomb it is.
    error = failure(_png_header_only(10_000, 10_000), max_image_pixels=10**12)
    assert error.reason is FailureReason.TOO_LARGE


def test_truncated_jpeg_is_corrupt() -> None:
    data = encoded(drawn(NOTICE), "JPEG")
    error = failure(data[: len(data) // 2], "photo.jpg")
    assert error.reason is FailureReason.CORRUPT


@pytest.mark.parametrize("name", ["notes.png", "scan.tiff", "photo.jpg", "image.webp"])
def test_not_an_image_is_corrupt(name: str) -> None:
    error = failure(b"%PDF-1.4 this is a text file with an image's name\n" * 20, name)
    assert error.reason is FailureReason.CORRUPT


def test_ocr_turned_off_or_missing_is_ocr_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    data = encoded(drawn(NOTICE[:1]), "PNG")
    error = failure(data, ocr=False)
    assert error.reason is FailureReason.OCR_UNAVAILABLE
    assert error.detail == "OCR is turned off"
    monkeypatch.setattr(ocr, "_engine", None)
    monkeypatch.setitem(sys.modules, "rapidocr_onnxruntime", None)
    error = failure(data)
    assert error.reason is FailureReason.OCR_UNAVAILABLE
    assert "pip install 'lorebase[ocr]'" in str(error)


def _png_header_only(width: int, height: int) -> bytes:
    """A PNG that declares ``width`` x ``height`` grey pixels and holds one row of data."""

    def chunk(kind: bytes, payload: bytes) -> bytes:
        crc = zlib.crc32(kind + payload)
        return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    row = zlib.compress(b"\x00" + b"\xff" * width)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", row) + chunk(b"IEND", b"")


# -- in the worker: memory and time bounds -------------------------------------------------------


def _big_notice(width: int, height: int) -> bytes:
    """A mostly white ``width`` x ``height`` grey picture: large words near the top, a few
    long lines of small print below."""
    image = Image.new("L", (width, height), 255)
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=height // 25)
    draw.text((width // 20, height // 20), "Large print survives", font=font)
    small = ImageFont.load_default(size=height // 60)
    for number in range(4):
        line = f"line {number} of the small print on a big poster " * 3
        draw.text((width // 20, height // 5 + number * height // 40), line, font=small)
    return encoded(image, "PNG", compress_level=1)


def test_fifty_megapixels_are_read_downscaled_within_the_worker_limits() -> None:
    data = _big_notice(10_000, 5_000)
    with ExtractionPool(ExtractSettings(workers=1)) as pool:  # 1 GB address space
        extracted = pool.extract(data, PurePath("poster.png"))
    assert "Large print survives" in extracted.text
    # Long lines of small print are read upright (the direction model sees a window of each).
    assert "line 3 of the small print on a big poster" in extracted.text
    error = failure(data, "poster.png", max_image_pixels=40_000_000)
    assert error.reason is FailureReason.TOO_LARGE


def test_ocr_past_the_time_limit_is_timeout_and_the_pool_goes_on() -> None:
    data = encoded(drawn(NOTICE * 4), "PNG")
    with ExtractionPool(ExtractSettings(workers=1, max_seconds=0.01)) as pool:
        with pytest.raises(ExtractionFailed) as caught:
            pool.extract(data, PurePath("notice.png"))
        assert caught.value.reason is FailureReason.TIMEOUT
        with pytest.raises(ExtractionFailed) as caught:  # a new worker takes the next file
            pool.extract(b"not an image at all, just text" * 10, PurePath("x.png"))
        assert caught.value.reason is FailureReason.CORRUPT


# -- real images ----------------------------------------------------------------------------------


def _phrases(formats: Path) -> dict[str, str]:
    """``images/<name>`` -> the phrase SOURCES.txt says is in it."""
    found: dict[str, str] = {}
    for row in (formats / "SOURCES.txt").read_text(encoding="utf-8").splitlines():
        name = row.split("\t", 1)[0]
        phrase = re.search(r'text: "([^"]+)"', row)
        if name.startswith("images/") and phrase:
            found[name] = phrase.group(1)
    return found


def _squeezed(text: str) -> str:
    return "".join(text.split())


@pytest.mark.corpus
def test_real_images_yield_their_phrase(shared_formats: Path) -> None:
    phrases = _phrases(shared_formats)
    assert len(phrases) == 3
    for name, phrase in phrases.items():
        path = shared_formats / name
        extracted = extract(path.read_bytes(), path.name)
        assert extracted.kind == "image"
        # The screenshot's recogniser drops some spaces ("Tofacilitate"): compare without.
        assert _squeezed(phrase) in _squeezed(extracted.text), name
        if "SCREENSHOT" not in name.upper():
            assert phrase in extracted.text, name
        assert all(element.boxes for element in extracted.elements)
