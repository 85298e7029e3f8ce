"""Column-aware reading order for a PDF page.

pdfium reads a page's text line by line across the whole width, so a multi-column page comes
out with each row of the columns run together. This module finds the columns and reads them
one at a time, with ``get_text_bounded`` per region.

It works on pdfium's text rectangles (one per text object, far cheaper than character boxes):

1. Rectangles narrower than 60% of the text width are projected onto the x axis; a gutter is
   an x interval inside the text area that they cover over at most 40% of the text height, at
   least 1.5% of the page wide. Wide rectangles are left out because they are either lines
   that really span the columns (titles, headers) or rows that pdfium merged across columns
   when their baselines align.
2. Columns must be at least 15% of the text width, there are at most four, and each must hold
   text over a fair share of the height; otherwise (ragged edges, tables with many narrow
   columns) the page is read whole, as before.
3. One read of each gutter's middle strip tells whether any line really crosses it; when
   lines do, the rectangles crossing it are probed one by one to place them. Lines crossing a
   gutter become full-width bands; if they fill too much of the height it is no gutter.
4. The page is read top to bottom: each full-width band whole, and between bands each column
   left to right. Band boundaries sit in gaps between rectangles, so no character is read
   twice (pdfium takes every character whose box overlaps the region).
5. A column whose text is mostly digits means a table, not columns: the page is read whole.

Before that, a line-number gutter (court transcripts, pleading paper: ``1`` to ``25`` down the
left margin) is left out: at least five rectangles in the left quarter of the page, each a bare
number of up to three digits, consecutive from the top down, stacked in one column, with all
other text beside them to their right. The band of the page they span is read from the right
of the numbers; what lies above and below it is read whole width, as usual.
"""

from __future__ import annotations

import ctypes

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

Rect = tuple[float, float, float, float]  # left, bottom, right, top

_WIDE = 0.6  # share of the text width from which a rectangle counts as wide
_MAX_COVER = 0.4  # share of the text height a gutter may be crossed over (or spanned)...
_GUTTER_COVER = 0.3  # ... and share of the typical (80th percentile) cover across the text
_TALL = 3.0  # rectangles taller than this many median heights (vertical text) are left out
_MIN_GUTTER = 0.015  # share of the page width
_MIN_COLUMN = 0.15  # share of the text width
_MIN_COLUMN_TEXT = 0.5  # share of the typical cover a column's text must reach (median x)
_MAX_COLUMNS = 4
_CORE = 0.05  # a gutter proper is covered at most this share of the height above its minimum
_PROBE = 2.0  # half-width of the strip probed in a gutter's middle, in points
_MAX_DIGITS = 0.5  # a column with a larger share of digits among its characters is a table
_MIN_DIGIT_CHARS = 20  # ... judged only once it has this many letters and digits
_MIN_LINE_NUMBERS = 5  # a line-number gutter holds at least this many numbers...
_MAX_NUMBER_DIGITS = 3  # ... each of at most this many digits...
_NUMBERS_ZONE = 0.25  # ... all within this share of the page width from its left edge


def page_text(textpage: pdfium.PdfTextPage, bbox: Rect) -> str:
    """The page's text in reading order: column by column when the page has columns, without
    a margin of line numbers."""
    rects = _rects(textpage, bbox)
    gutter = _line_numbers(textpage, rects, bbox)
    if gutter is None:
        return _region_text(textpage, bbox, rects)
    right, low, high = gutter
    regions = (
        (bbox[0], high, bbox[2], bbox[3]),
        (right, low, bbox[2], high),
        (bbox[0], bbox[1], bbox[2], low),
    )
    parts = (_region_text(textpage, region, _rects(textpage, region)) for region in regions)
    return "\r\n".join(part for part in parts if part.strip())


def _region_text(textpage: pdfium.PdfTextPage, bbox: Rect, rects: list[Rect]) -> str:
    """The text of one region of the page (the whole page, usually) in reading order."""
    if bbox[3] <= bbox[1] or bbox[2] <= bbox[0]:
        return ""
    layout = _layout(textpage, rects, bbox) if len(rects) >= 8 else None
    if layout is None:
        return str(textpage.get_text_bounded(*bbox))
    gutters, regions = layout
    edges = [bbox[0], *((left + right) / 2 for left, right in gutters), bbox[2]]
    parts: list[str] = []
    columns: list[str] = [""] * (len(edges) - 1)
    for bottom, top, split in regions:
        if not split:
            parts.append(textpage.get_text_bounded(bbox[0], bottom, bbox[2], top))
            continue
        for i in range(len(columns)):
            parts.append(textpage.get_text_bounded(edges[i], bottom, edges[i + 1], top))
            columns[i] += parts[-1]
    if any(_mostly_digits(column) for column in columns):
        return str(textpage.get_text_bounded(*bbox))
    return "\r\n".join(part for part in parts if part.strip())


def _line_numbers(
    textpage: pdfium.PdfTextPage, rects: list[Rect], bbox: Rect
) -> tuple[float, float, float] | None:
    """A margin of line numbers as (its right edge, the bottom and top of the band it spans,
    moved into gaps between lines), or ``None``."""
    zone = bbox[0] + _NUMBERS_ZONE * (bbox[2] - bbox[0])
    numbers: list[tuple[int, Rect]] = []
    for rect in rects:
        if rect[2] <= zone and rect[2] - rect[0] <= _MAX_NUMBER_DIGITS * (rect[3] - rect[1]):
            text = textpage.get_text_bounded(*rect).strip()
            if text.isdigit() and len(text) <= _MAX_NUMBER_DIGITS:
                numbers.append((int(text), rect))
    if len(numbers) < _MIN_LINE_NUMBERS:
        return None
    numbers.sort(key=lambda number: -number[1][3])  # top down
    values = [value for value, _ in numbers]
    if values != list(range(values[0], values[0] + len(values))):
        return None
    boxes = [rect for _, rect in numbers]
    right = max(rect[2] for rect in boxes)
    if max(rect[0] for rect in boxes) > min(rect[2] for rect in boxes):
        return None  # not stacked in one column
    low, high = boxes[-1][1], boxes[0][3]
    for rect in rects:
        if rect not in boxes and low <= (rect[1] + rect[3]) / 2 <= high and rect[0] < right:
            return None  # text beside the numbers on their left: a table, not a margin
    spans = sorted((rect[1], rect[3]) for rect in rects)
    return right, _gap_below(spans, low), _gap_above(spans, high)


def _rects(textpage: pdfium.PdfTextPage, bbox: Rect) -> list[Rect]:
    """The page's text rectangles inside its box, read with the raw API (reused buffers)."""
    raw = textpage.raw
    count = pdfium_c.FPDFText_CountRects(raw, 0, -1)
    values = [ctypes.c_double() for _ in range(4)]
    left, top, right, bottom = (ctypes.byref(value) for value in values)
    get = pdfium_c.FPDFText_GetRect
    rects: list[Rect] = []
    x0, y0, x1, y1 = bbox
    for index in range(max(count, 0)):
        if not get(raw, index, left, top, right, bottom):
            continue
        rl, rt, rr, rb = (value.value for value in values)
        if rr > rl and rt > rb and rl >= x0 - 1 and rr <= x1 + 1 and rb >= y0 - 1 and rt <= y1 + 1:
            rects.append((rl, rb, rr, rt))
    return rects


def _layout(
    textpage: pdfium.PdfTextPage, rects: list[Rect], bbox: Rect
) -> tuple[list[tuple[float, float]], list[tuple[float, float, bool]]] | None:
    """Gutters and the page's bands (bottom, top, split into columns) top down, or ``None``."""
    heights = sorted(rect[3] - rect[1] for rect in rects)
    tall = _TALL * heights[len(heights) // 2]
    rects = [rect for rect in rects if rect[3] - rect[1] <= max(tall, rect[2] - rect[0])]
    if not rects:
        return None
    left = min(rect[0] for rect in rects)
    right = max(rect[2] for rect in rects)
    low = min(rect[1] for rect in rects)
    high = max(rect[3] for rect in rects)
    width, height = right - left, high - low
    if width <= 0 or height <= 0:
        return None
    gutters = _gutters(rects, left, right, width, height, bbox[2] - bbox[0])
    if not gutters:
        return None
    spanning: list[tuple[float, float]] = []
    for gutter in gutters:
        found = _spanning(textpage, rects, gutter, low, high, height)
        if found is None:
            return None
        spanning.extend(found)
    if sum(top - bottom for bottom, top in _merge(spanning)) > _MAX_COVER * height:
        return None
    return gutters, _bands(rects, spanning, bbox)


def _gutters(
    rects: list[Rect], left: float, right: float, width: float, height: float, page: float
) -> list[tuple[float, float]] | None:
    """Gutter x intervals over the narrow rectangles, or ``None`` when they make no columns."""
    origin = int(left)
    size = int(right) - origin + 2
    delta = [0.0] * (size + 1)
    for rl, rb, rr, rt in rects:
        if rr - rl < _WIDE * width:
            delta[int(rl) - origin] += rt - rb
            delta[min(int(rr) - origin + 1, size)] -= rt - rb
    cover: list[float] = []
    running = 0.0
    for step in delta[:size]:
        running += step
        cover.append(running)
    inside = sorted(cover)
    limit = min(_MAX_COVER * height, _GUTTER_COVER * inside[int(len(inside) * 0.8)])
    gutters: list[tuple[float, float]] = []
    start = None
    for x, value in enumerate(cover):
        if value <= limit and start is None:
            start = x
        elif value > limit and start is not None:
            if start > 0:
                core = _core(cover, start, x, height)
                if core[1] - core[0] >= _MIN_GUTTER * page:
                    gutters.append((origin + core[0], origin + core[1]))
            start = None
    if not gutters or len(gutters) >= _MAX_COLUMNS:
        return None
    edges = [left, *(x for gutter in gutters for x in gutter), right]
    for i in range(0, len(edges), 2):
        column = cover[int(edges[i]) - origin : int(edges[i + 1]) - origin]
        if edges[i + 1] - edges[i] < _MIN_COLUMN * width or not column:
            return None
        if sorted(column)[len(column) // 2] < _MIN_COLUMN_TEXT * inside[int(len(inside) * 0.8)]:
            return None
    return gutters


def _core(cover: list[float], start: int, end: int, height: float) -> tuple[int, int]:
    """The longest stretch of ``cover[start:end]`` near its minimum: the gutter proper, not
    the ragged line ends beside it."""
    floor = min(cover[start:end]) + _CORE * height
    best = (start, start)
    run = None
    for x in range(start, end + 1):
        if x < end and cover[x] <= floor:
            run = x if run is None else run
        elif run is not None:
            best = max(best, (run, x), key=lambda span: span[1] - span[0])
            run = None
    return best


def _spanning(
    textpage: pdfium.PdfTextPage,
    rects: list[Rect],
    gutter: tuple[float, float],
    low: float,
    high: float,
    height: float,
) -> list[tuple[float, float]] | None:
    """The y intervals of lines that cross the gutter (text in its middle strip).

    One read of the strip over the whole height says how many lines cross; ``None`` when they
    would fill too much of the height. Only then are the crossing rectangles probed, top down,
    until that many are found.
    """
    middle = (gutter[0] + gutter[1]) / 2
    strip = textpage.get_text_bounded(middle - _PROBE, low, middle + _PROBE, high)
    lines = sum(1 for line in strip.splitlines() if line.strip())
    if not lines:
        return []
    crossing = sorted(
        (rect for rect in rects if rect[0] < middle - _PROBE and rect[2] > middle + _PROBE),
        key=lambda rect: -rect[3],
    )
    heights = sorted(rect[3] - rect[1] for rect in rects)
    if lines * heights[len(heights) // 2] > _MAX_COVER * height:
        return None
    found: list[tuple[float, float]] = []
    for _, bottom, _, top in crossing:
        if len(found) >= lines:
            break
        probe = textpage.get_text_bounded(middle - _PROBE, bottom, middle + _PROBE, top)
        if probe.strip():
            found.append((bottom, top))
    return found


def _merge(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    merged: list[tuple[float, float]] = []
    for bottom, top in sorted(intervals):
        if merged and bottom <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], top))
        else:
            merged.append((bottom, top))
    return merged


def _bands(
    rects: list[Rect], spanning: list[tuple[float, float]], bbox: Rect
) -> list[tuple[float, float, bool]]:
    """Split the page's height into full-width bands around the spanning lines and column
    bands between them, top down. Boundaries are moved into gaps between rectangles."""
    spans = sorted((rect[1], rect[3]) for rect in rects)
    widened = _merge([(_gap_below(spans, b), _gap_above(spans, t)) for b, t in spanning])
    bands: list[tuple[float, float, bool]] = []
    cursor = bbox[3]
    for bottom, top in reversed(widened):
        if top < cursor:
            bands.append((top, cursor, True))
        bands.append((bottom, min(top, cursor), False))
        cursor = bottom
    if cursor > bbox[1]:
        bands.append((bbox[1], cursor, True))
    return bands


def _gap_above(spans: list[tuple[float, float]], y: float) -> float:
    """The lowest y at or above ``y`` that no rectangle straddles."""
    moved = True
    while moved:
        moved = False
        for bottom, top in spans:
            if bottom < y < top:
                y, moved = top, True
    return y


def _gap_below(spans: list[tuple[float, float]], y: float) -> float:
    """The highest y at or below ``y`` that no rectangle straddles."""
    moved = True
    while moved:
        moved = False
        for bottom, top in spans:
            if bottom < y < top:
                y, moved = bottom, True
    return y


def _mostly_digits(text: str) -> bool:
    chars = [char for char in text if char.isalnum()]
    return len(chars) >= _MIN_DIGIT_CHARS and sum(
        char.isdigit() for char in chars
    ) > _MAX_DIGITS * len(chars)
