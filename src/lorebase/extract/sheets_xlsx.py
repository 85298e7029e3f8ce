"""Excel workbooks (.xlsx, .xlsm): sheets of cached cell values, their comments and the
core properties.

Values come from python-calamine (Rust): on a 200,000 × 10 workbook it reads in 1.6 s what
openpyxl's streaming reader reads in 30 s. Formula cells give their cached values, never the
formula text. calamine holds a sheet as a dense grid from its first used cell to its last,
32 bytes a cell, and a failed allocation in Rust aborts the process; so before calamine
reads a sheet, the grid it would build is bounded: by the sheet's ``<dimension>`` when that
states one that fits (Excel and LibreOffice write it), else by measuring the cells' ``r="…"``
references in the XML (one streamed regex pass, ~1 s per 100 MB of sheet XML). A sheet
whose grid would not fit a quarter of the worker's memory — a stray cell at XFD1048576 is
enough — is streamed with openpyxl instead, whose memory does not grow with the gaps (past a
million cells that way it is ``too_large``, as it would not finish in time). XML crafted to
understate its extent still meets the worker's memory limit (``too_large``).

The workbook's own XML (``workbook.xml`` and the relationships) gives sheet names, states
(hidden, very hidden) and kinds (chart sheets hold no cells and are skipped); comments come
from each sheet's comments part and the title, author and dates from ``docProps/core.xml``.
An encrypted workbook is an OLE compound file holding an ``EncryptedPackage`` stream.
"""

from __future__ import annotations

import io
import posixpath
import re
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

import python_calamine
from lxml import etree

from lorebase.errors import ExtractionFailed
from lorebase.extract.sheets_cells import (
    MAX_COLUMNS,
    Comment,
    Row,
    Sheet,
    SheetState,
    clean_cell,
    value_text,
)
from lorebase.settings import ExtractSettings
from lorebase.types import FailureReason

OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_ENCRYPTED_PACKAGE = "EncryptedPackage".encode("utf-16-le")

GRID_CELL_BYTES = 32
"""What calamine holds per cell of a sheet's grid, empty or not (measured: a sheet whose
cells are A1 and A1048576 peaks 32 MB higher)."""
GRID_MEMORY_SHARE = 4
"""A sheet is read with calamine when its grid takes at most 1/4 of ``max_memory_bytes``."""
MAX_STREAMED_CELLS = 1_000_000
"""Most cells a sheet too wide-spread for calamine may hold: openpyxl streams ~70,000 cells
a second, so more would meet the CPU limit; such a sheet is ``too_large`` at once."""

_BLOCK = 1 << 20
_CELL_COLUMN = re.compile(rb' r="([A-Z]{1,3})[0-9]')
_ROW_NUMBER = re.compile(rb' r="[A-Z]{0,3}([0-9]{1,7})"')
_DIMENSION = re.compile(
    rb'<(?:\w+:)?dimension\s+ref="([A-Z]{1,3})([0-9]{1,7})(?::([A-Z]{1,3})([0-9]{1,7}))?"'
)
_HEAD_BYTES = 64 * 1024
_ROOT_PREFIX = re.compile(rb"<([A-Za-z_][\w.-]*:)?worksheet[\s>]")
_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=True)
_WORKSHEET = "worksheet"
_STATES: dict[str | None, SheetState] = {"hidden": "hidden", "veryHidden": "veryHidden"}
_CORE_FIELDS = {"title": "title", "creator": "author", "created": "created", "modified": "modified"}


@dataclass(frozen=True, slots=True)
class _Entry:
    """A sheet as the workbook lists it: name, state, kind (``worksheet``, ``chartsheet``…)
    and the path of its part (None when the workbook points nowhere)."""

    name: str
    state: SheetState | None  # None: visible
    kind: str
    part: str | None


@dataclass(frozen=True, slots=True)
class _Extent:
    """What a sheet's XML says of its cells: how many, and the grid they span."""

    cells: int
    first_column: int
    rows: int
    columns: int

    @property
    def grid(self) -> int:
        return self.rows * self.columns


@dataclass(slots=True)
class Workbook:
    """An opened workbook: its worksheets (read one after the other) and properties."""

    sheets: Iterator[Sheet]
    properties: dict[str, str]


def refuse_ole(data: bytes) -> None:
    """An OLE compound file where a zip package should be: ``encrypted`` when it holds an
    ``EncryptedPackage`` (a password-protected workbook), else ``corrupt``."""
    if data.startswith(OLE_MAGIC):
        if _ENCRYPTED_PACKAGE in data:
            raise ExtractionFailed(
                FailureReason.ENCRYPTED, "password-protected workbook: save it without one"
            )
        raise ExtractionFailed(
            FailureReason.CORRUPT, "an OLE file, not an xlsx package: save it as .xlsx"
        )


def open_workbook(data: bytes, archive: zipfile.ZipFile, settings: ExtractSettings) -> Workbook:
    """The worksheets of a package that passed ``check_zip``, in workbook order."""
    entries = [entry for entry in _entries(archive) if entry.kind == _WORKSHEET]
    return Workbook(_sheets(data, archive, entries, settings), _core_properties(archive))


def _sheets(
    data: bytes, archive: zipfile.ZipFile, entries: list[_Entry], settings: ExtractSettings
) -> Iterator[Sheet]:
    readers = _Readers(data, settings.max_memory_bytes // GRID_MEMORY_SHARE)
    if _part_size(archive, "xl/sharedStrings.xml") > readers.budget:
        raise ExtractionFailed(FailureReason.TOO_LARGE, "shared strings past the memory limit")
    for entry in entries:
        if entry.part is not None and entry.part in archive.NameToInfo:
            rows = readers.rows(archive, entry.name, entry.part)
            yield Sheet(entry.name, entry.state or "visible", rows, _comments(archive, entry.part))


class _Readers:
    """calamine for a sheet whose grid fits ``budget`` bytes, openpyxl for the others;
    each opened on first use."""

    def __init__(self, data: bytes, budget: int) -> None:
        self.data = data
        self.budget = budget
        self._calamine: python_calamine.CalamineWorkbook | None = None
        self._streamed: Any = None

    def rows(self, archive: zipfile.ZipFile, name: str, part: str) -> Iterator[Row]:
        claimed = _claimed_grid(archive, part)
        if claimed is not None and claimed * GRID_CELL_BYTES <= self.budget:
            return self._calamine_rows(name)
        with archive.open(part) as stream:
            extent = _extent(stream)
        if extent.grid * GRID_CELL_BYTES <= self.budget:
            return self._calamine_rows(name)
        if extent.cells > MAX_STREAMED_CELLS:
            raise ExtractionFailed(FailureReason.TOO_LARGE, "a sheet with too many cells")
        if self._streamed is None:
            # Imported here: openpyxl loads numpy, ~145 MB of address space that every
            # extraction worker would carry for the rare sheet that needs it.
            import openpyxl  # type: ignore[import-untyped]

            source = io.BytesIO(self.data)
            self._streamed = openpyxl.load_workbook(source, read_only=True, data_only=True)
        return _streamed_rows(self._streamed[name], extent.first_column)

    def _calamine_rows(self, name: str) -> Iterator[Row]:
        if self._calamine is None:
            source = io.BytesIO(self.data)
            self._calamine = python_calamine.CalamineWorkbook.from_filelike(source)
        return _calamine_rows(self._calamine.get_sheet_by_name(name))


def _calamine_rows(sheet: python_calamine.CalamineSheet) -> Iterator[Row]:
    """calamine's rows count from the sheet's first row (row 1), leading empty rows
    included; its columns from the first used one."""
    for number, values in enumerate(sheet.iter_rows(), start=1):
        cells = [value_text(value) for value in values]
        if any(cells):
            yield number, cells


def _streamed_rows(sheet: Any, first_column: int) -> Iterator[Row]:
    """openpyxl's read-only rows, from row 1 whatever the sheet's ``dimension`` claims
    (reset, so a false claim of a million rows costs nothing), gaps as empty rows."""
    sheet.reset_dimensions()
    rows = sheet.iter_rows(min_row=1, min_col=1, values_only=True)
    for number, values in enumerate(rows, start=1):
        if values:
            cells = [value_text(value) for value in values[first_column:MAX_COLUMNS]]
            if any(cells):
                yield number, cells


def _claimed_grid(archive: zipfile.ZipFile, part: str) -> int | None:
    """The grid a sheet's ``<dimension>`` says its cells span (None when it says nothing):
    written before the cells, so only the head of the part is read."""
    with archive.open(part) as stream:
        head = stream.read(_HEAD_BYTES)
    head = head[: head.find(b"sheetData")] if b"sheetData" in head else head
    match = _DIMENSION.search(head)
    if match is None:
        return None
    first_column, first_row, last_column, last_row = match.groups()
    rows = int(last_row or first_row) - int(first_row) + 1
    columns = _column_index(last_column or first_column) - _column_index(first_column) + 1
    return max(rows, 1) * max(columns, 1)


def _extent(stream: IO[bytes]) -> _Extent:
    """The cells of a sheet part and the grid they span, read block by block."""
    columns: set[bytes] = set()
    last_row = references = cells = rows = 0
    tail = b""
    spellings: list[tuple[bytes, bytes]] = []
    while True:
        block = stream.read(_BLOCK)
        if not spellings:  # the first block: the root element names the prefix, if any
            root = _ROOT_PREFIX.search(block)
            prefix = (root.group(1) if root else None) or b""
            spellings = [(prefix, end) for end in (b" ", b">", b"/", b"\n", b"\r", b"\t")]
        text = tail + block
        cut = text.rfind(b"<") if block else len(text)
        if cut <= 0:
            cut = len(text)
        text, tail = text[:cut], text[cut:]
        numbers = _ROW_NUMBER.findall(text)
        if numbers:
            references += len(numbers)
            last_row = max(last_row, *map(int, set(numbers)))
        columns.update(_CELL_COLUMN.findall(text))
        cells += sum(text.count(b"<%sc%s" % spelling) for spelling in spellings)
        rows += sum(text.count(b"<%srow%s" % spelling) for spelling in spellings)
        if not block:
            break
    indexes = [_column_index(letters) for letters in columns] or [0]
    implied = max(cells + rows - references, 0)  # cells and rows placed by their order alone
    first = min(indexes) if not implied else 0
    return _Extent(cells, first, last_row + implied, max(indexes) - first + 1 + implied)


def _column_index(letters: bytes) -> int:
    """``b"A"`` -> 0, ``b"AA"`` -> 26."""
    index = 0
    for letter in letters:
        index = index * 26 + letter - ord("A") + 1
    return index - 1


# -- the package ----------------------------------------------------------------------------


def _entries(archive: zipfile.ZipFile) -> list[_Entry]:
    """The sheets ``workbook.xml`` lists, with their parts found through its relationships."""
    workbook = _main_part(archive)
    root = _xml(archive, workbook)
    if root is None:
        raise ExtractionFailed(FailureReason.CORRUPT, "no workbook part in the package")
    links = _relationships(archive, workbook)
    entries = []
    for sheet in root.iter("{*}sheet"):
        rel_id = next((v for k, v in sheet.attrib.items() if k.endswith("}id")), "")
        kind, part = links.get(rel_id, ("", None))
        entries.append(_Entry(sheet.get("name", ""), _STATES.get(sheet.get("state")), kind, part))
    return entries


def _main_part(archive: zipfile.ZipFile) -> str:
    for kind, target in _relationships(archive, "").values():
        if kind == "officeDocument" and target:
            return target
    return "xl/workbook.xml"


def _relationships(archive: zipfile.ZipFile, part: str) -> dict[str, tuple[str, str | None]]:
    """A part's relationships: id -> (type's last word, target part path)."""
    folder, name = posixpath.split(part)
    root = _xml(archive, posixpath.join(folder, "_rels", f"{name}.rels"))
    links: dict[str, tuple[str, str | None]] = {}
    for link in () if root is None else root.iter("{*}Relationship"):
        target = link.get("Target", "")
        if link.get("TargetMode") == "External" or not target:
            path = None
        elif target.startswith("/"):
            path = posixpath.normpath(target.lstrip("/"))
        else:
            path = posixpath.normpath(posixpath.join(folder, target))
        links[link.get("Id", "")] = (link.get("Type", "").rsplit("/", 1)[-1], path)
    return links


def _comments(archive: zipfile.ZipFile, part: str) -> list[Comment]:
    """The notes of a sheet, in the order of their cells."""
    found = []
    for kind, target in _relationships(archive, part).values():
        root = _xml(archive, target) if kind == "comments" and target else None
        for comment in () if root is None else root.iter("{*}comment"):
            position = _cell_position(comment.get("ref", ""))
            texts = comment.find("{*}text")
            if position is None or texts is None:
                continue
            phonetic = {id(t) for run in texts.iter("{*}rPh") for t in run.iter("{*}t")}
            runs = [t.text or "" for t in texts.iter("{*}t") if id(t) not in phonetic]
            text = clean_cell("".join(runs))
            if text:
                found.append(Comment(position[0], position[1], text))
    return sorted(found, key=lambda comment: (comment.row, comment.column))


_REFERENCE = re.compile(r"^\$?([A-Z]{1,3})\$?([0-9]{1,7})")


def _cell_position(reference: str) -> tuple[int, int] | None:
    """``B3`` -> (3, 1): a reference's row number and 0-based column."""
    match = _REFERENCE.match(reference.upper())
    if match is None:
        return None
    return int(match.group(2)), _column_index(match.group(1).encode("ascii"))


def _core_properties(archive: zipfile.ZipFile) -> dict[str, str]:
    """Title, author (creator), created and modified from the core properties part."""
    part = next(
        (t for kind, t in _relationships(archive, "").values() if kind == "core-properties" and t),
        "docProps/core.xml",
    )
    root = _xml(archive, part)
    found: dict[str, str] = {}
    for element in () if root is None else root:
        if not isinstance(element.tag, str):  # a comment or processing instruction
            continue
        key = _CORE_FIELDS.get(etree.QName(element).localname)
        text = (element.text or "").strip()
        if key and text:
            found[key] = text
    return found


def _part_size(archive: zipfile.ZipFile, name: str) -> int:
    info = archive.NameToInfo.get(name)
    return 0 if info is None else info.file_size


def _xml(archive: zipfile.ZipFile, name: str) -> etree._Element | None:
    """A part parsed, or None when the package has no such part."""
    if name not in archive.NameToInfo:
        return None
    return etree.fromstring(archive.read(name), _PARSER)
