"""Layout of OCR lines: reading order and paragraphs (pure functions on boxes).

The recogniser gives lines with boxes; a page's columns are found from the gaps no narrow line
crosses (:func:`reading_order`): a stretch of lines that stand in two or more columns is read
column by column, lines crossing a gutter are read whole, between them. Within a block, lines
are grouped into paragraphs by their vertical gaps, left edges, heights and list markers
(:func:`paragraphs`), and a paragraph's lines are joined into one text (:func:`join_lines`).
Boxes are in pixels of the upright page, y downwards.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

from lorebase.types import Box

# Layout, in units of the median line height (h) or shares of the block's width.
_WIDE = 0.6  # lines wider than this share of the text width may span columns
_GUTTER_CROSSINGS = 0.15  # share of the narrow lines that may cross a gutter
_REACH = 0.5  # h: how far past a gutter a line must reach on both sides to cross it
_MIN_GUTTER = 0.15  # h
_BOX_MARGIN = 0.15  # h: what the detector adds around the ink on each side (median ~0.1)
_MIN_FULLNESS = 0.5  # share of its column's width a column's median line fills
_MIN_COLUMN = 0.15  # share of the text width
_MIN_COLUMN_LINES = 3
_MAX_COLUMNS = 4
_MAX_DIGITS = 0.5  # a column with more digits than this among its characters is a table
_PARAGRAPH_GAP = 0.6  # h more than the block's usual gap between lines
_RELIABLE_GAPS = 3
_FEW_LINES_GAP = 0.5  # h
_MARGIN_SHIFT = 0.6  # h
_HEIGHT_CHANGE = 1.3
_SHORT_LINE = 0.15  # share of the block's width left free at the end of a closing line
_VERY_SHORT_LINE = 0.5
_SENTENCE_END = re.compile(r"[.!?:;。！？…][\"'”’)\]]*$")
_LIST_MARKER = re.compile(r"^(?:[•·▪◦●○■□➢►\-–—*]|\(?\d{1,3}[.)]|\(?[a-zA-Z][.)])(?:\s|$)")

Rect = tuple[float, float, float, float]
"""``(x0, y0, x1, y1)`` in pixels, y downwards."""


@dataclass(frozen=True, slots=True)
class Line:
    """One recognised line: its text and score, its rectangle in the upright frame (where
    layout is judged) and its box as fractions of the picture as shown."""

    text: str
    score: float
    rect: Rect
    box: Box = (0.0, 0.0, 0.0, 0.0)


@dataclass(frozen=True, slots=True)
class Paragraph:
    """Lines read as one paragraph: their joined text and their boxes (as :class:`Line`)."""

    text: str
    boxes: tuple[Box, ...]


def reading_order(lines: Sequence[Line]) -> list[list[Line]]:
    """The lines as blocks in reading order, top to bottom. Where the page has columns, a
    stretch of lines that cross no gutter and stand in two or more columns is read column by
    column; lines crossing a gutter, and lines on one side only (the end of a bullet beside
    nothing), are read in the flow between such stretches. A column's first or last lines
    that stand above or below all the others, after a paragraph gap (a heading over one
    column, a section's title below both), are read before or after the stretch. Pure."""
    if not lines:
        return []
    ordered = sorted(lines, key=lambda line: (line.rect[1], line.rect[0]))
    gutters = _gutters(ordered)
    stretches: list[tuple[bool, list[Line]]] = []  # (crosses no gutter, lines)
    for line in ordered:
        inside = not any(_crosses(line, gutter) for gutter in gutters)
        if stretches and stretches[-1][0] == inside:
            stretches[-1][1].append(line)
        else:
            stretches.append((inside, [line]))
    blocks: list[list[Line]] = []
    flow: list[Line] = []
    for inside, stretch in stretches:
        columns = _columns(stretch, gutters) if inside else []
        if len(columns) < 2:
            flow.extend(stretch)
            continue
        leading, columns, trailing = _tails(columns)
        flow.extend(leading)
        if flow:
            blocks.append(_rows(flow))
        blocks.extend(_rows(column) for column in columns if column)
        flow = trailing
    if flow:
        blocks.append(_rows(flow))
    return blocks


def _crosses(line: Line, gutter: float) -> bool:
    """Whether a line reaches well across a gutter (a speck of dirt at its end does not)."""
    low, high = _core(line)
    reach = _REACH * (line.rect[3] - line.rect[1])
    return low < gutter - reach and high > gutter + reach


def _columns(lines: list[Line], gutters: Sequence[float]) -> list[list[Line]]:
    """The lines of a stretch in its columns, left to right (empty columns left out), each
    top to bottom."""
    columns: list[list[Line]] = [[] for _ in range(len(gutters) + 1)]
    for line in lines:
        middle = (line.rect[0] + line.rect[2]) / 2
        columns[sum(1 for gutter in gutters if gutter < middle)].append(line)
    return [column for column in columns if column]


def _tails(columns: list[list[Line]]) -> tuple[list[Line], list[list[Line]], list[Line]]:
    """Split off each column's first lines that stand above every other column and its last
    lines below every other column, where a paragraph gap parts them from the rest."""
    leading: list[Line] = []
    trailing: list[Line] = []
    kept: list[list[Line]] = []
    for index, column in enumerate(columns):
        others = [line for i, other in enumerate(columns) if i != index for line in other]
        top = min(line.rect[1] for line in others)
        bottom = max(line.rect[3] for line in others)
        usual, height = _spacing(column)
        first, last = 0, len(column)
        for k in range(1, len(column)):
            if _middle(column[k - 1]) >= top:
                break
            if column[k].rect[1] - column[k - 1].rect[3] > usual + _PARAGRAPH_GAP * height:
                first = k
        for k in range(len(column) - 1, first, -1):
            if _middle(column[k]) <= bottom:
                break
            if column[k].rect[1] - column[k - 1].rect[3] > usual + _PARAGRAPH_GAP * height:
                last = k
        leading += column[:first]
        trailing += column[last:]
        kept.append(column[first:last])
    return leading, kept, trailing


def _middle(line: Line) -> float:
    return (line.rect[1] + line.rect[3]) / 2


def _spacing(lines: Sequence[Line]) -> tuple[float, float]:
    """The usual gap between consecutive lines and their median height. Between fewer than
    four lines the median says little (two lines: their one gap, however wide), so it counts
    for at most ``_FEW_LINES_GAP`` heights: about what single-spaced lines leave."""
    height = statistics.median(line.rect[3] - line.rect[1] for line in lines)
    gaps = [b.rect[1] - a.rect[3] for a, b in pairwise(lines)]
    usual = statistics.median(gaps) if gaps else 0.0
    if len(gaps) < _RELIABLE_GAPS:
        usual = min(usual, _FEW_LINES_GAP * height)
    return usual, height


def _rows(lines: list[Line]) -> list[Line]:
    """Lines top to bottom; lines side by side on one row (their middles within each other's
    height) left to right."""
    ordered = sorted(lines, key=lambda line: line.rect[1])
    rows: list[list[Line]] = []
    for line in ordered:
        middle = (line.rect[1] + line.rect[3]) / 2
        if rows and any(other.rect[1] < middle < other.rect[3] for other in rows[-1]):
            rows[-1].append(line)
        else:
            rows.append([line])
    return [line for row in rows for line in sorted(row, key=lambda line: line.rect[0])]


def _gutters(lines: Sequence[Line]) -> list[float]:
    """The x of each gap between columns: a run of x that at most a few narrow lines cross,
    inside the text, wide enough, with enough text on both sides; none when the page has
    no columns (or more than ``_MAX_COLUMNS``, or one whose lines fill less than half its
    width — labels and values of a form, cells of a table — or a column of figures)."""
    left = min(line.rect[0] for line in lines)
    right = max(line.rect[2] for line in lines)
    width = right - left
    height = statistics.median(line.rect[3] - line.rect[1] for line in lines)
    narrow = [line for line in lines if line.rect[2] - line.rect[0] < _WIDE * width]
    if width <= 0 or len(narrow) < 2 * _MIN_COLUMN_LINES:
        return []
    allowed = int(_GUTTER_CROSSINGS * len(narrow))
    spans = [_core(line) for line in narrow]
    edges = sorted({left, right, *(x for span in spans for x in span)})
    gutters: list[float] = []
    run: list[tuple[int, float, float]] = []  # (crossings, x0, x1) of the current run
    for x0, x1 in pairwise(edges):
        middle = (x0 + x1) / 2
        crossing = sum(1 for a, b in spans if a < middle < b)
        if crossing <= allowed:
            run.append((crossing, x0, x1))
            continue
        if run and run[0][1] > left and x0 - run[0][1] >= _MIN_GUTTER * height:
            gutters.append(_clearest(run))
        run = []
    edges_x = [left, *gutters, right]
    columns = [
        [line for line in narrow if a <= (line.rect[0] + line.rect[2]) / 2 < b]
        for a, b in pairwise(edges_x)
    ]
    if not gutters or len(columns) > _MAX_COLUMNS:
        return []
    for (a, b), column in zip(pairwise(edges_x), columns, strict=True):
        if b - a < _MIN_COLUMN * width or len(column) < _MIN_COLUMN_LINES:
            return []
        fill = statistics.median(line.rect[2] - line.rect[0] for line in column)
        if fill < _MIN_FULLNESS * (b - a):  # short pieces side by side: a form, a table
            return []
        if _mostly_digits("".join(line.text for line in column)):
            return []
    return gutters


def _clearest(run: list[tuple[int, float, float]]) -> float:
    """Where a gutter stands within its run: the middle of the widest stretch that the
    fewest lines cross."""
    fewest = min(crossing for crossing, _, _ in run)
    _, x0, x1 = max((piece for piece in run if piece[0] == fewest), key=lambda p: p[2] - p[1])
    return (x0 + x1) / 2


def _core(line: Line) -> tuple[float, float]:
    """The line's ink from left to right: the detector draws its boxes a margin wider than
    the text (about a third of their height each side), wide enough to close a gutter."""
    margin = _BOX_MARGIN * (line.rect[3] - line.rect[1])
    return line.rect[0] + margin, max(line.rect[0] + margin, line.rect[2] - margin)


def _mostly_digits(text: str) -> bool:
    characters = [char for char in text if char.isalnum()]
    return bool(characters) and sum(char.isdigit() for char in characters) > _MAX_DIGITS * len(
        characters
    )


def paragraphs(block: Sequence[Line]) -> list[list[Line]]:
    """Group a block's lines (in reading order) into paragraphs. A line starts a new one
    after a gap clearly wider than the block's usual gap, when its height changes (a title),
    when it starts with a list marker, when its left edge leaves the margin the paragraph's
    lines after the first keep (a first-line indent or a hanging indent both stay), and after
    a line that ends a sentence well short of the block's right edge, or that is very short.
    Pure."""
    if not block:
        return []
    left = min(line.rect[0] for line in block)
    right = max(line.rect[2] for line in block)
    width = max(right - left, 1.0)
    usual, height = _spacing(block)
    groups: list[list[Line]] = [[block[0]]]
    for line in block[1:]:
        current = groups[-1]
        if _starts_paragraph(current, line, usual, height, right, width):
            groups.append([line])
        else:
            current.append(line)
    return groups


def _starts_paragraph(
    current: list[Line], line: Line, usual: float, height: float, right: float, width: float
) -> bool:
    previous = current[-1]
    if previous.rect[1] < _middle(line) < previous.rect[3]:
        return False  # beside it on the same row
    gap = line.rect[1] - previous.rect[3]
    if gap > usual + _PARAGRAPH_GAP * height:
        return True
    tall, short = sorted((_height(previous), _height(line)), reverse=True)
    if tall > _HEIGHT_CHANGE * max(short, 1.0):
        return True
    if _LIST_MARKER.match(line.text):
        return True
    shift = _MARGIN_SHIFT * height
    if len(current) >= 2 and abs(line.rect[0] - current[1].rect[0]) > shift:
        return True  # off the margin the paragraph's lines keep
    ends_short = previous.rect[2] < right - _SHORT_LINE * width
    if line.rect[0] > previous.rect[0] + shift and ends_short:
        return not _LIST_MARKER.match(previous.text)  # an indent after a short line
    previous_width = previous.rect[2] - previous.rect[0]
    if previous_width < _VERY_SHORT_LINE * width and not line.text[:1].islower():
        return True
    return ends_short and _SENTENCE_END.search(previous.text) is not None


def _height(line: Line) -> float:
    return line.rect[3] - line.rect[1]


def join_lines(lines: Sequence[str]) -> str:
    """A paragraph's lines joined by spaces; a word hyphenated across a line end is joined
    (without its hyphen when it goes on in lowercase); CJK lines join without a space. Pure."""
    text = lines[0] if lines else ""
    for line in lines[1:]:
        if len(text) > 1 and text[-1] in "-\u00ad" and text[-2].isalpha():
            text = (text[:-1] if line[:1].islower() or text[-1] == "\u00ad" else text) + line
        elif text and line and _is_cjk(text[-1]) and _is_cjk(line[0]):
            text += line
        else:
            text += " " + line
    return text


def _is_cjk(char: str) -> bool:
    return "\u2e80" <= char <= "\u9fff" or "\uf900" <= char <= "\uffef"
