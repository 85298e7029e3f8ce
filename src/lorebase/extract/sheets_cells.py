"""What the spreadsheet readers hand to :mod:`lorebase.extract.sheets`: sheets of rows of
cell texts, and the one way a cell's value becomes text.

A cell's text is on one line: a run of whitespace holding a line break or a tab becomes one
space, runs of plain spaces stay as written (a cell's ``Value   With 3 spaces`` is kept),
control characters go and the ends are stripped. Values are written as a reader of the sheet
sees them: integers without ``.0``, other numbers to Excel's 15 significant digits, dates as
ISO dates (``2024-03-01``, ``2024-03-01 14:30:00`` with a time of day), durations as
``hours:mm:ss``, booleans as ``TRUE``/``FALSE``.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from lorebase.errors import ExtractionFailed
from lorebase.types import FailureReason

SheetState = Literal["visible", "hidden", "veryHidden"]

Row = tuple[int, list[str]]
"""A row: its 1-based row number in the sheet (a CSV's physical line) and its cell texts
from the sheet's first used column (empty strings for empty cells)."""

MAX_COLUMNS = 16_384
MAX_ROWS = 1_048_576
"""The largest sheet Excel and LibreOffice make (XFD1048576): cells past it are not read, so
a repeat count or a row number cannot stretch one sheet without end."""

SIGNIFICANT_DIGITS = 15
"""Excel shows and keeps numbers to 15 significant digits: ``0.1+0.2`` is ``0.3`` there."""

_LARGEST_EXACT_INTEGER = 2**53
_LINE_WHITESPACE = re.compile(r"\s*[^\S ]\s*")  # a whitespace run holding more than spaces
_CONTROL = {c: None for c in (*range(32), 0x7F)}


@dataclass(frozen=True, slots=True)
class Comment:
    """A cell comment (an Excel note, an ODS annotation): the cell's row and 0-based column,
    and its text."""

    row: int
    column: int
    text: str


@dataclass(slots=True)
class Sheet:
    """One worksheet: its name, whether it is hidden, its non-empty rows in order, and its
    cell comments. A reader may stream ``rows`` from the file, and may fill ``comments``
    while it does: read ``comments`` after ``rows`` is exhausted."""

    name: str
    state: SheetState
    rows: Iterator[Row]
    comments: list[Comment] = field(default_factory=list)


@dataclass(slots=True)
class TextBudget:
    """The characters a document may still take (``max_text_chars``): spent row by row, so
    a sheet cannot pile up more text in memory than the document may hold."""

    left: int

    def spend(self, chars: int) -> None:
        self.left -= chars
        if self.left < 0:
            raise ExtractionFailed(FailureReason.TOO_LARGE, "extracted text over the limit")


def clean_cell(text: str) -> str:
    """A cell's text on one line (see the module docstring). Pure."""
    if not text:
        return ""
    if not text.isprintable():
        text = _LINE_WHITESPACE.sub(" ", text).translate(_CONTROL)
    return text.strip()


def value_text(value: object) -> str:
    """The text of a cell value as a spreadsheet library returns it (``str``, ``int``,
    ``float``, ``bool``, ``date``, ``datetime``, ``time``, ``timedelta`` or ``None``). Pure."""
    exact = _BY_TYPE.get(type(value))
    if exact is not None:  # the common types, without a chain of isinstance checks
        return exact(value)
    if value is None:
        return ""
    if isinstance(value, str):
        return clean_cell(value)
    if isinstance(value, bool):
        return _bool_text(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return number_text(value)
    if isinstance(value, dt.datetime):
        return datetime_text(value)
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, dt.time):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return duration_text(value.total_seconds())
    return clean_cell(str(value))


def number_text(value: float) -> str:
    """``1`` for 1.0, ``0.3`` for 0.30000000000000004, ``1.5e+20`` for a large one. Pure."""
    if not math.isfinite(value):
        return str(value)
    if value.is_integer() and abs(value) < _LARGEST_EXACT_INTEGER:
        return str(int(value))
    return f"{value:.{SIGNIFICANT_DIGITS}g}"


def datetime_text(value: dt.datetime) -> str:
    """The ISO date, with the time of day only when there is one. Pure."""
    if value.time() == dt.time(0) and value.tzinfo is None:
        return value.date().isoformat()
    return value.isoformat(sep=" ")


def duration_text(seconds: float) -> str:
    """``30:00:00`` for thirty hours: hours are not folded into days, as a sheet shows them.
    Pure."""
    sign = "-" if seconds < 0 else ""
    whole = round(abs(seconds))
    hours, rest = divmod(whole, 3600)
    return f"{sign}{hours}:{rest // 60:02d}:{rest % 60:02d}"


def _bool_text(value: bool) -> str:
    return "TRUE" if value else "FALSE"


_BY_TYPE: dict[type, Callable[[Any], str]] = {
    str: clean_cell,
    float: number_text,
    int: str,
    bool: _bool_text,
    dt.date: dt.date.isoformat,
    dt.datetime: datetime_text,
}


def column_name(index: int) -> str:
    """``A`` for 0, ``AA`` for 26: a 0-based column's letters. Pure."""
    letters = ""
    index += 1
    while index:
        index, remainder = divmod(index - 1, 26)
        letters = chr(ord("A") + remainder) + letters
    return letters
