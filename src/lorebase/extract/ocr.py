"""OCR: the text of a picture of a page, as paragraphs in reading order, with their boxes.

The one place that runs rapidocr: PP-OCR detection, direction and recognition models shipped
inside the ``rapidocr-onnxruntime`` wheel, run by ONNX Runtime. It is an optional extra
(``pip install 'lorebase[ocr]'``), imported on the first page that needs it; its models are
loaded once per process (an extraction worker keeps them for every later file) with one ONNX
Runtime thread, since the pool already runs one worker per core.

A page goes through four steps:

1. Detection finds the text lines on a copy scaled to what the detector needs
   (:func:`detection_scale`: about 1.3 million pixels a page, small pictures enlarged), read
   in overlapping tiles down its length (:func:`tiles`; a tall picture such as a screenshot of
   a whole web page takes as many as it needs), each line kept by the tile that holds its
   centre.
2. Orientation: when most lines stand upright the page is sideways; the direction model,
   asked about the longest lines, says whether it (or an upright page) is upside down.
3. Recognition reads each line cropped from the full-resolution picture and turned upright.
   Lines read with a score under ``MIN_LINE_SCORE`` are left out.
4. Layout (:mod:`lorebase.extract.ocr_layout`, on boxes in the upright frame): columns read
   one after the other, lines grouped into paragraphs.

A paragraph's ``boxes`` are its lines' boxes as fractions of the picture as it is shown (the
frame a viewer highlights in), whatever the orientation OCR read it in.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import os
import re
import resource
import statistics
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lorebase.errors import ExtractionFailed
from lorebase.extract.ocr_layout import Line, Paragraph, Rect, join_lines, paragraphs, reading_order
from lorebase.types import Box, FailureReason

if TYPE_CHECKING:
    from numpy.typing import NDArray
    from PIL import Image

    Picture = NDArray[Any]  # height x width x 3, BGR, uint8
    Quad = NDArray[Any]  # 4 x 2 float32: top left, top right, bottom right, bottom left

INSTALL_HINT = "OCR needs the ocr extra: pip install 'lorebase[ocr]'"

MIN_LINE_SCORE = 0.5
"""Lines the recogniser reads with a lower score are left out (noise, pictures, smudges)."""
LOW_CONFIDENCE = 0.8
"""A page whose lines OCR read with a lower mean score is noted in the warnings."""
_NO_LINE = "-"
_PAGE_MARGIN = 1.5  # a page starts while 1.5 times the slowest page so far is left

# Detection: the pixels of the detector's copy of a page (a letter page: 1000 x 1290, ~115
# dpi; a picture more than _TILE_ASPECT times as tall as it is wide counts that share of its
# height), the short side small pictures are enlarged to (at most _DET_UPSCALE times), and the
# pixels of one tile: the copy is read in tiles down its length (the detector's memory grows
# with its input, ~200 bytes a pixel), overlapping by a share of their width. On linn.pdf a
# 960-pixel page reads at 3.5 % character error rate, 1290 at 2.3 %, 1600 and more no better.
DET_PIXELS = 1_290_000
_DET_TILE_PIXELS = 650_000
_DET_MIN_SIDE = 736
_DET_UPSCALE = 4.0
_TILE_ASPECT = 1.5
_TILE_OVERLAP = 0.1
MIN_SIDE = 8
"""A picture with a side shorter than this many pixels holds no readable text."""
WORKING_PIXELS = 16_000_000
"""Pictures are read at most this large (a 600 dpi letter page comes down to ~410 dpi): the
recogniser sees every line at 48 pixels high whatever the source, and memory stays bounded."""
# Orientation: a line counts as lying or standing when one side is this many times the other;
# the direction model is asked about this many of the longest.
_ELONGATED = 2.0
_DIRECTION_SAMPLE = 24
_DIRECTION_ASPECT = 4.0
# How ONNX Runtime (and the C++ library under it) says an allocation failed.
_OUT_OF_MEMORY = re.compile(r"bad_alloc|[Ff]ailed to allocate|out of memory")
_THREADS = 1
_M_ARENA_MAX = -8  # glibc's mallopt parameters
_M_MMAP_THRESHOLD = -3
_MMAP_THRESHOLD = 8 * 1024 * 1024
_ENGINE_OPTIONS: dict[str, Any] = {
    "intra_op_num_threads": _THREADS,
    "inter_op_num_threads": _THREADS,
    # The detector's own resizing only rounds to multiples of 32: detection_scale decides.
    "det_limit_type": "min",
    "det_limit_side_len": 32,
    # One line at a time: batches pad every line to the widest of them (linn.pdf: 5.2 s of
    # recognition one by one, 7.5 s in sixes, and a larger peak).
    "rec_batch_num": 1,
}


@dataclass(frozen=True, slots=True)
class PageText:
    """What OCR read on one page: its paragraphs in reading order, and the mean score of the
    lines it recognised (``None`` when it found no line at all)."""

    paragraphs: tuple[Paragraph, ...]
    confidence: float | None


# -- the engine ----------------------------------------------------------------------------------

_engine: Any = None
_engine_lock = threading.Lock()


def _import_engine() -> Any:
    """rapidocr's engine class; raises ImportError when the extra is not installed."""
    _spare_address_space()  # before numpy and OpenCV load their BLAS
    from rapidocr_onnxruntime import RapidOCR  # type: ignore[import-untyped]

    return RapidOCR


def available() -> bool:
    """Whether OCR can run here (the ``ocr`` extra imports)."""
    if _engine is not None:
        return True
    try:
        _import_engine()
    except ImportError:
        return False
    return True


def engine() -> Any:
    """This process's engine, loaded on first use; ``ocr_unavailable`` without the extra."""
    global _engine
    with _engine_lock:
        if _engine is None:
            try:
                loaded = _import_engine()(**_ENGINE_OPTIONS)
            except ImportError as exc:
                detail = INSTALL_HINT
                if not isinstance(exc, ModuleNotFoundError):  # installed, but broken
                    detail = f"the OCR engine failed to load ({type(exc).__name__})"
                raise ExtractionFailed(FailureReason.OCR_UNAVAILABLE, detail) from None
            import cv2

            cv2.setNumThreads(_THREADS)
            _engine = loaded
        return _engine


def _spare_address_space() -> None:
    """Under an address-space limit (an extraction worker's ``RLIMIT_AS``), keep what OCR
    reserves and never uses out of it: one OpenBLAS thread (its pools reserve memory per
    thread, at import: ~180 MB), one glibc malloc arena (each thread that allocates would
    reserve 64 MB more) and big blocks returned when freed. A no-op elsewhere."""
    limit, _ = resource.getrlimit(resource.RLIMIT_AS)
    if limit == resource.RLIM_INFINITY:
        return
    if "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", str(_THREADS))
    with contextlib.suppress(OSError, AttributeError):  # not glibc: nothing to spare
        libc = ctypes.CDLL(None)
        libc.mallopt(_M_ARENA_MAX, 1)
        # Big blocks (pictures, the detector's tensors) mapped apart and unmapped when freed:
        # otherwise the heap keeps their address space, and a warm worker's grows file by
        # file (+160 MB over nine files measured) towards the limit.
        libc.mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)


class PageBudget:
    """Reads pages while the file's CPU time allows: an extraction worker arms
    ``RLIMIT_CPU`` for each file, and a page is not started unless 1.5 times the slowest page
    so far (and a second) is left, so a long scan yields the pages read before the limit
    instead of a ``timeout``. Without a limit every page is read."""

    def __init__(self) -> None:
        self._slowest = 0.0

    def allows_another(self) -> bool:
        soft, _ = resource.getrlimit(resource.RLIMIT_CPU)
        if soft == resource.RLIM_INFINITY or not self._slowest:
            return True
        return soft - _cpu_seconds() > _PAGE_MARGIN * self._slowest + 1.0

    def read(self, image: Image.Image) -> PageText:
        """:func:`read_page`, timed (loading the models on the first page is not)."""
        engine()
        started = _cpu_seconds()
        try:
            return read_page(image)
        finally:
            self._slowest = max(self._slowest, _cpu_seconds() - started)


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _give_back_memory() -> None:
    """Return the detector's freed scratch memory (a few hundred MB) to the system: glibc
    keeps it otherwise, and a worker that looks that large is retired after its file, models
    and all, instead of staying warm."""
    with contextlib.suppress(OSError, AttributeError):  # not glibc
        ctypes.CDLL(None).malloc_trim(0)


# -- one page ------------------------------------------------------------------------------------


def working_size(width: int, height: int) -> tuple[int, int]:
    """The size a picture is read at: itself, or scaled down to ``WORKING_PIXELS``. Pure."""
    pixels = width * height
    if pixels <= WORKING_PIXELS:
        return width, height
    scale = math.sqrt(WORKING_PIXELS / pixels)
    return max(1, round(width * scale)), max(1, round(height * scale))


def read_page(image: Image.Image) -> PageText:
    """OCR one page (any mode: it is read as RGB, scaled to :func:`working_size`)."""
    ocr = engine()  # first: it imports what follows, or says the extra is missing
    import numpy as np

    if working_size(*image.size) != image.size:
        image = image.resize(working_size(*image.size), reducing_gap=3.0)
    if min(image.size) < MIN_SIDE:
        return PageText((), None)
    width, height = image.size
    rgb = image if image.mode == "RGB" else image.convert("RGB")
    # One copy, in the models' channel order (read-only: OpenCV only reads it).
    bgr: Picture = np.frombuffer(rgb.tobytes("raw", "BGR"), np.uint8).reshape(height, width, 3)
    del rgb
    try:
        quads = _detect(ocr, bgr)
        turns = _orientation(ocr, bgr, quads) if quads else 0
        if turns:  # detection works best on upright lines: stand the page up, detect again
            bgr = np.ascontiguousarray(np.rot90(bgr, turns))
            quads = _detect(ocr, bgr)
        read, _ = ocr.text_rec([_crop(bgr, quad) for quad in quads]) if quads else ([], 0)
    except Exception as exc:
        if _OUT_OF_MEMORY.search(str(exc)):  # ONNX Runtime's failed allocation
            raise MemoryError from None
        raise
    upright = bgr.shape[1], bgr.shape[0]
    del bgr
    lines: list[Line] = []
    scores: list[float] = []
    for quad, (raw, score) in zip(quads, read, strict=True):
        text = " ".join(str(raw).split())
        if text:
            scores.append(float(score))
        if text and score >= MIN_LINE_SCORE:
            points = [(float(x), float(y)) for x, y in quad]
            shown = [turn_point(x, y, -turns, *upright) for x, y in points]
            lines.append(
                Line(text, float(score), _bounds(points), _fractions(shown, width, height))
            )
    _give_back_memory()
    if not lines and not scores:
        return PageText((), None)
    found = tuple(
        Paragraph(join_lines([line.text for line in group]), tuple(line.box for line in group))
        for block in reading_order(lines)
        for group in paragraphs(block)
    )
    return PageText(found, statistics.fmean(scores) if scores else None)


def _detect(ocr: Any, bgr: Picture) -> list[Quad]:
    """Text line quadrilaterals in the picture's pixels (points: top left, top right, bottom
    right, bottom left), found on a scaled copy, tile by tile down a tall picture."""
    import cv2

    height, width = bgr.shape[:2]
    scale = detection_scale(width, height)
    size = (max(1, round(width * scale)), max(1, round(height * scale)))
    shrink = cv2.INTER_AREA if scale < 1 else cv2.INTER_CUBIC
    small = bgr if scale == 1 else cv2.resize(bgr, size, interpolation=shrink)
    tile = max(_DET_TILE_PIXELS // size[0], 1)
    overlap = round(_TILE_OVERLAP * size[0])
    quads: list[Quad] = []
    for start, end, keep_from, keep_to in tiles(size[1], tile, overlap):
        boxes, _ = ocr.text_det(small[start:end])
        for box in [] if boxes is None else boxes:
            quad = box.astype("float32")
            quad[:, 1] += start
            if keep_from <= float(quad[:, 1].mean()) < keep_to:
                quads.append(quad / scale)
    return quads


def _orientation(ocr: Any, bgr: Picture, quads: Sequence[Quad]) -> int:
    """Quarter turns counter-clockwise (``numpy.rot90``'s ``k``) that stand the page upright.

    Lines mostly standing mean a sideways page (1 or 3 turns), else 0 or 2; the direction
    model, shown the longest lines turned the first way, says whether they are upside down.
    """
    import numpy as np

    sides = [_sides(quad) for quad in quads]
    lying = [i for i, (w, h) in enumerate(sides) if w >= _ELONGATED * h]
    standing = [i for i, (w, h) in enumerate(sides) if h >= _ELONGATED * w]
    lying_length = sum(sides[i][0] for i in lying)
    standing_length = sum(sides[i][1] for i in standing)
    if not lying and not standing:
        return 0
    base, chosen = (1, standing) if standing_length > lying_length else (0, lying)
    chosen = sorted(chosen, key=lambda i: -max(sides[i]))[:_DIRECTION_SAMPLE]
    sample = [_window(np.rot90(_crop(bgr, quads[i]), base)) for i in chosen]
    _, labels, _ = ocr.text_cls(sample)
    flipped = sum(float(score) for label, score in labels if "180" in str(label))
    upright = sum(float(score) for label, score in labels if "180" not in str(label))
    return base + 2 if flipped > upright else base


def _window(line: Picture) -> Picture:
    """The middle of a lying line, ``_DIRECTION_ASPECT`` times as wide as it is high: the
    direction model sees 48 x 192 pixels, and a whole long line squeezed into them is a blur
    it judges at random."""
    import numpy as np

    height, width = line.shape[:2]
    keep = min(width, round(_DIRECTION_ASPECT * height))
    start = (width - keep) // 2
    return np.ascontiguousarray(line[:, start : start + keep])


def _sides(quad: Quad) -> tuple[float, float]:
    """Width and height of a detected line's quadrilateral."""
    width = max(_distance(quad[0], quad[1]), _distance(quad[3], quad[2]))
    height = max(_distance(quad[0], quad[3]), _distance(quad[1], quad[2]))
    return width, height


def _distance(a: Any, b: Any) -> float:
    return math.hypot(float(a[0]) - float(b[0]), float(a[1]) - float(b[1]))


def _crop(bgr: Picture, quad: Quad) -> Picture:
    """The line's quadrilateral straightened into a rectangle, as it lies in the picture."""
    import cv2
    import numpy as np

    width, height = (max(1, round(side)) for side in _sides(quad))
    target = np.array([[0, 0], [width, 0], [width, height], [0, height]], dtype="float32")
    matrix = cv2.getPerspectiveTransform(quad.astype("float32"), target)
    flags = cv2.INTER_CUBIC
    crop: Picture = cv2.warpPerspective(
        bgr, matrix, (width, height), flags=flags, borderMode=cv2.BORDER_REPLICATE
    )
    return crop


def confidence_values(confidences: Sequence[float | None]) -> tuple[str, ...]:
    """Per-page mean line scores as metadata: three decimals, ``"-"`` where OCR found no
    line. Pure."""
    return tuple(_NO_LINE if value is None else f"{value:.3f}" for value in confidences)


def confidence_warnings(confidences: Sequence[float | None]) -> tuple[str, ...]:
    """``low_ocr_confidence:N`` when N pages were read with a mean score under
    ``LOW_CONFIDENCE``. Pure."""
    low = sum(1 for value in confidences if value is not None and value < LOW_CONFIDENCE)
    return (f"low_ocr_confidence:{low}",) if low else ()


# -- geometry (pure) -----------------------------------------------------------------------------


def detection_scale(width: int, height: int) -> float:
    """How much to scale a picture for the detector: to ``DET_PIXELS`` pixels (a picture
    more than ``_TILE_ASPECT`` times as tall as wide, read in tiles down its length: each
    tile), a small picture enlarged until its short side reaches ``_DET_MIN_SIDE`` (at most
    ``_DET_UPSCALE`` times) but never past that. Pure.

    Tiles only run down: a text line across a tile's edge would be read twice, in pieces.
    """
    short = min(width, height)
    covered = width * min(height, width * _TILE_ASPECT)
    fit = math.sqrt(DET_PIXELS / max(covered, 1))
    enlarge = min(_DET_MIN_SIDE / max(short, 1), _DET_UPSCALE)
    return min(max(1.0, enlarge), fit)


def tiles(length: int, size: int, overlap: int) -> list[tuple[int, int, int, int]]:
    """Overlapping pieces ``(start, end, keep_from, keep_to)`` of ``length`` pixels, each at
    most ``size`` long; a line belongs to the piece whose keep range holds its centre (the
    middle of each overlap divides them), so a line cut by one piece's edge is kept whole
    from the next. Pure."""
    if length <= size:
        return [(0, length, 0, length)]
    overlap = min(overlap, size // 2)
    step = size - overlap
    count = math.ceil((length - overlap) / step)
    starts = [min(i * step, length - size) for i in range(count)]
    bounds = [0, *((starts[i + 1] + starts[i] + size) // 2 for i in range(count - 1)), length]
    return [(s, s + size, bounds[i], bounds[i + 1]) for i, s in enumerate(starts)]


def turn_point(x: float, y: float, turns: int, width: float, height: float) -> tuple[float, float]:
    """Where a point of a ``width`` x ``height`` picture lands once the picture is turned a
    quarter counter-clockwise ``turns`` times (as ``numpy.rot90``). Pure."""
    turns %= 4
    if turns == 1:
        return y, width - x
    if turns == 2:
        return width - x, height - y
    if turns == 3:
        return height - y, x
    return x, y


def _bounds(points: Sequence[tuple[float, float]]) -> Rect:
    xs = [x for x, _ in points]
    ys = [y for _, y in points]
    return min(xs), min(ys), max(xs), max(ys)


def _fractions(points: Sequence[tuple[float, float]], width: int, height: int) -> Box:
    x0, y0, x1, y1 = _bounds(points)
    return (
        round(max(0.0, x0 / width), 4),
        round(max(0.0, y0 / height), 4),
        round(min(1.0, x1 / width), 4),
        round(min(1.0, y1 / height), 4),
    )
