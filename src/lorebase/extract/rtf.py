"""RTF (``.rtf``): paragraphs, headings, list items and tables, read by a reader of its own.

striprtf (the usual choice) turns a document into one string: table cells come out as
``a|b|`` lines among the paragraphs, nested tables run into one line, and the ``\\info`` group
(title, author) is dropped. This reader walks the RTF token stream itself, keeping a stack of
group states (destination, font code page, ``\\uc`` count, hidden text).

Kept: paragraphs (``\\par``), headings (an ``\\outlinelevel`` on the paragraph or its style, or a
style named "heading N"), list items (``\\ls``, ``\\listtext``, ``\\pntext``), tables rebuilt
from ``\\cell``/``\\row`` (nested tables from ``\\nestcell``/``\\nestrow``, as tables of their
own; the first row is the header), hyperlinks' text (a field's result), footnotes (after the
body), manual page breaks. Text is decoded with ``\\ansicpg`` and each font's ``\\fcharset``
(so ``\\'fc`` is "ü" in a cp1252 document and "ь" under a Cyrillic font) and ``\\uN`` as Unicode,
its fallback characters skipped. Title, subject, author, keywords, company, category, comment,
created and modified from ``{\\info}``; the title falls back to the first level-1 heading.
Left out: pictures and objects (skipped without being decoded, whatever their size), the font,
colour, style and list tables, field instructions (a link's URL), page headers and footers,
hidden text, bookmarks, index and contents entries. A file that does not start with ``{\\rtf``
is ``corrupt``.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass, field
from pathlib import PurePath

from lorebase.errors import ExtractionFailed
from lorebase.extract.base import DocumentBuilder, Extractor
from lorebase.types import (
    TABLE_CELL_SEPARATOR,
    ElementKind,
    Extracted,
    FailureReason,
    MetadataValue,
)

_MAGIC = b"{\\rtf"
_TOKEN = re.compile(
    rb"\\([a-zA-Z]{1,32})(-?\d{1,10})? ?"  # control word, its parameter, a delimiting space
    rb"|\\'([0-9a-fA-F]{2})"  # a byte in the code page
    rb"|\\(.)"  # control symbol: \\ \{ \} \~ \- \_ \* and an escaped line end (a \par)
    rb"|([{}])"
    rb"|([^\\{}\r\n]+)"  # text
    rb"|[\r\n]+|\\",  # line ends in the file are not text; a lone backslash at the end
    re.S,
)
_BIN = re.compile(rb"bin(\d{1,10}) ?")  # after a backslash: \binN and its raw bytes
_MAX_DEPTH = 1000  # deeper groups are skipped whole: no document nests this deep

# Destinations whose content is never text (a starred, unknown destination is skipped too).
_SKIPPED = frozenset(
    {
        *("pict", "object", "objdata", "colortbl", "filetbl", "revtbl", "listtable"),
        *("listoverridetable", "rsidtbl", "generator", "fldinst", "nonshppict", "nonesttables"),
        *("header", "headerl", "headerr", "headerf", "footer", "footerl", "footerr", "footerf"),
        *("xe", "tc", "tcn", "txe", "bkmkstart", "bkmkend", "template", "docvar", "xmlnstbl"),
        *("themedata", "colorschememapping", "datastore", "latentstyles", "pgdsctbl"),
        *("atnid", "atnauthor", "annotation", "private", "userprops", "wgrffmtfilter"),
    }
)
_INFO_FIELDS = {name: name for name in ("title", "subject", "author", "keywords", "company")}
_INFO_FIELDS |= {"category": "category", "manager": "manager", "doccomm": "comment"}
_INFO_DATES = {"creatim": "created", "revtim": "modified"}
_DATE_PARTS = ("yr", "mo", "dy", "hr", "min")
# \fcharsetN -> codec (0 and 1: the document's code page; 2, Symbol, is read as that too).
_CHARSETS = {77: "mac_roman", 128: "cp932", 129: "cp949", 130: "johab", 134: "gbk", 136: "cp950"}
_CHARSETS |= {161: "cp1253", 162: "cp1254", 163: "cp1258", 177: "cp1255", 178: "cp1256"}
_CHARSETS |= {186: "cp1257", 204: "cp1251", 222: "cp874", 238: "cp1250", 254: "cp437"}
_CHARSETS |= {255: "cp850"}
_DOCUMENT_CHARSETS = {"ansi": "cp1252", "mac": "mac_roman", "pc": "cp437", "pca": "cp850"}
_CODE_PAGES = {10000: "mac_roman", 65001: "utf-8"}  # \ansicpgN that are not Python's cpN
# Control symbols that are text; \- (an optional hyphen) is none.
_SYMBOLS = {b"~": "\u00a0", b"_": "\u2011", b"\\": "\\", b"{": "{", b"}": "}", b"-": ""}
_WORD_CHARS = {"tab": "\t", "line": "\n", "emdash": "\u2014", "endash": "\u2013"}
_WORD_CHARS |= {"bullet": "\u2022", "lquote": "\u2018", "rquote": "\u2019", "zwj": "\u200d"}
_WORD_CHARS |= {"ldblquote": "\u201c", "rdblquote": "\u201d", "zwnj": "\u200c"}
_WORD_CHARS |= {"emspace": "\u2003", "enspace": "\u2002", "qmspace": "\u2005"}
_HEADING_STYLE = re.compile(r"^heading\s*([1-9])$", re.I)
_BODY_TEXT_LEVEL = 9  # \outlinelevel9 means body text


@dataclass(slots=True)
class _Group:
    """What a group changes and its closing brace restores."""

    dest: str = "body"  # body, skip, fonttbl, stylesheet, info, info:<field>, list, note, rowprops
    codec: str = "cp1252"
    uc: int = 1
    hidden: bool = False

    def copy(self) -> _Group:
        return _Group(self.dest, self.codec, self.uc, self.hidden)


@dataclass(slots=True)
class _Paragraph:
    """The properties of the paragraph being read (``\\pard`` resets them)."""

    style: int = 0
    outline: int | None = None
    in_table: bool = False
    depth: int = 1
    listed: bool = False


@dataclass(slots=True)
class _Table:
    """Rows of the table being read, and of a table nested in its cells."""

    rows: list[list[str]] = field(default_factory=list)
    row: list[str] = field(default_factory=list)
    cell: list[str] = field(default_factory=list)
    nested_rows: list[list[str]] = field(default_factory=list)
    nested_row: list[str] = field(default_factory=list)
    nested_cell: list[str] = field(default_factory=list)


class RtfExtractor(Extractor):
    kind = "rtf"

    def extract(self, data: bytes, path: PurePath) -> Extracted:
        if not data.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(_MAGIC):
            raise ExtractionFailed(FailureReason.CORRUPT, "not RTF: no {\\rtf at the start")
        reader = _Reader(self.builder(data))
        reader.read(data)
        title = reader.info.get("title") or reader.first_heading
        metadata: dict[str, MetadataValue] = dict(reader.info)
        return reader.builder.build(title=title, metadata=metadata)


def add_rtf(builder: DocumentBuilder, data: bytes) -> None:
    """Add the paragraphs and tables of an RTF text to ``builder`` (an Outlook mail whose only
    body is RTF), as :class:`RtfExtractor` reads them."""
    _Reader(builder).read(data)


class _Reader:
    """One pass over the tokens, sending paragraphs and tables to the builder."""

    def __init__(self, builder: DocumentBuilder) -> None:
        self.builder = builder
        self.group = _Group()
        self.stack: list[_Group] = []
        self.para = _Paragraph()
        self.table = _Table()
        self.run: list[str] = []  # text of the paragraph being read
        self.note: list[str] = []  # text of the footnote paragraph being read
        self.notes: list[str] = []
        self.pending = bytearray()  # code-page bytes not yet decoded
        self.skip = 0  # \uN fallback characters still to skip
        self.high: int | None = None  # a high surrogate waiting for its low half
        self.star = False  # the last token was \*: an unknown destination is skipped
        self.default_codec = "cp1252"
        self.fonts: dict[int, str] = {}
        self.font = 0  # the font being defined in the font table
        self.default_font = 0
        self.styles: dict[int, int] = {}  # paragraph style -> heading level
        self.style = 0  # the style being defined in the style sheet
        self.style_name: list[str] = []
        self.info: dict[str, str] = {}
        self.info_text: list[str] = []
        self.date: dict[str, int] = {}
        self.first_heading: str | None = None

    # --- the token loop ---------------------------------------------------------------------

    def read(self, data: bytes) -> None:
        pos, end = 0, len(data)
        while pos < end:
            match = _TOKEN.match(data, pos)
            if match is None:  # unreachable: every byte matches some branch
                break
            pos = match.end()
            word, hex_byte, symbol, brace, text = match.group(1, 3, 4, 5, 6)
            if text is not None:
                self._text(text)
            elif hex_byte is not None:
                self._byte(int(hex_byte, 16))
            elif word is not None:
                parameter = match.group(2)
                pos = self._word(word.decode(), None if parameter is None else int(parameter), pos)
                if self.group.dest == "skip":
                    pos = self._skip_group(data, pos)
            elif brace == b"{":
                self._push()
                if len(self.stack) > _MAX_DEPTH:
                    self.group.dest = "skip"
                    pos = self._skip_group(data, pos)
            elif brace == b"}":
                self._pop()
            elif symbol is not None:
                self._symbol(symbol)
        self._flush_bytes()
        self._end_paragraph()
        self._end_table()
        for note in self.notes:
            self.builder.add(ElementKind.PARAGRAPH, note)

    def _skip_group(self, data: bytes, pos: int) -> int:
        """Jump past the end of the current group (its braces balanced, escapes and ``\\binN``
        data stepped over) without looking at what it holds: a picture of any size costs a
        few ``bytes.find`` scans. Each brace or backslash position found stays valid until
        the reading passes it."""
        end = len(data)
        depth = 1
        opening = closing = escape = -1
        while depth:
            if opening < pos:
                opening = _find(data, b"{", pos)
            if closing < pos:
                closing = _find(data, b"}", pos)
            if escape < pos:
                escape = _find(data, b"\\", pos)
            at = min(opening, closing, escape)
            if at >= end:
                pos = end
                break
            if at == escape:
                binary = _BIN.match(data, at + 1)
                pos = binary.end() + int(binary.group(1)) if binary else at + 2
            else:
                depth += 1 if at == opening else -1
                pos = at + 1
        self._pop()
        return pos

    def _push(self) -> None:
        self._flush_bytes()
        self.stack.append(self.group.copy())
        self.skip = 0
        self.star = False

    def _pop(self) -> None:
        self._flush_bytes()
        closing = self.group
        if not self.stack:
            return  # an extra closing brace: ignored
        self.group = self.stack.pop()
        self.skip = 0
        if closing.dest.startswith("info:") and closing.dest != self.group.dest:
            self._end_info(closing.dest[5:])
        elif closing.dest == "note" and self.group.dest != "note":
            self._end_note()
        elif closing.dest == "stylesheet":
            self._end_style()
        elif closing.dest == "fonttbl" and self.group.dest != "fonttbl":
            # Text before any \f is in the default font, whose charset is known only now.
            self.group.codec = self.fonts.get(self.default_font, self.default_codec)

    # --- text -------------------------------------------------------------------------------

    def _text(self, text: bytes) -> None:
        if self.skip:
            dropped = min(self.skip, len(text))
            self.skip -= dropped
            text = text[dropped:]
        if text:
            self.pending += text

    def _byte(self, value: int) -> None:
        if self.skip:
            self.skip -= 1
        else:
            self.pending.append(value)

    def _unicode(self, value: int) -> None:
        self._flush_bytes()
        value = value + 0x10000 if value < 0 else value
        if 0xD800 <= value < 0xDC00:
            self.high = value
        elif 0xDC00 <= value < 0xE000 and self.high is not None:
            self._emit(chr(0x10000 + ((self.high - 0xD800) << 10) + (value - 0xDC00)))
        elif not 0xD800 <= value < 0xE000:
            self._emit(chr(value))
        self.skip = self.group.uc

    def _flush_bytes(self) -> None:
        if self.pending:
            text = bytes(self.pending).decode(self.group.codec, errors="replace")
            self.pending.clear()
            self._emit(text)

    def _emit(self, text: str) -> None:
        """Text for the current destination."""
        self.high = None if text else self.high
        dest = self.group.dest
        if self.group.hidden:
            return
        if dest == "body":
            self.run.append(text)
        elif dest == "note":
            self.note.append(text)
        elif dest.startswith("info:"):
            self.info_text.append(text)
        elif dest == "stylesheet":
            self.style_name.append(text)
            if ";" in text:
                self._end_style()

    def _symbol(self, symbol: bytes) -> None:
        if symbol == b"*":
            self.star = True
        elif symbol in (b"\n", b"\r"):
            self._word("par", None, 0)
        elif symbol in _SYMBOLS:
            self._flush_bytes()
            self._emit(_SYMBOLS[symbol])

    # --- control words ----------------------------------------------------------------------

    def _word(self, word: str, parameter: int | None, pos: int) -> int:
        """Act on one control word; return where reading goes on (after ``\\binN`` data)."""
        self._flush_bytes()
        star, self.star = self.star, False
        self.skip = 0
        group = self.group
        if word == "bin":
            return pos + max(parameter or 0, 0)
        if word in _SKIPPED or (star and not self._starred_known(word)):
            group.dest = "skip"
        elif word == "nesttableprops":
            group.dest = "rowprops"
        elif word == "u" and parameter is not None:
            self._unicode(parameter)
            self.skip = group.uc
        elif word == "uc":
            group.uc = max(parameter or 0, 0)
        elif word in _WORD_CHARS:
            self._emit(_WORD_CHARS[word])
        elif word == "f":
            self._font(parameter or 0)
        elif word in _DOCUMENT_CHARSETS or word == "ansicpg":
            self.default_codec = _codec(word, parameter) or self.default_codec
            group.codec = self.default_codec
        elif word == "v":
            group.hidden = parameter != 0
        elif word == "plain":
            group.hidden = False
            group.codec = self.fonts.get(self.default_font, self.default_codec)
        elif word == "deff":
            self.default_font = parameter or 0
        elif word in ("fonttbl", "stylesheet", "info"):
            group.dest = word
        elif word in ("listtext", "pntext"):
            group.dest = "list"
            if self.stack and self.stack[-1].dest == "body":
                self.para.listed = True
        elif word == "footnote":
            group.dest = "note"
        elif group.dest == "info" and (word in _INFO_FIELDS or word in _INFO_DATES):
            group.dest = f"info:{word}"
            self.info_text, self.date = [], {}
        elif group.dest.startswith("info:") and word in _DATE_PARTS:
            self.date[word] = parameter or 0
        elif group.dest == "fonttbl":
            self._font_definition(word, parameter)
        elif group.dest == "stylesheet":
            self._style_definition(word, parameter)
        elif group.dest in ("body", "note", "rowprops"):
            self._structure(word, parameter)
        return pos

    def _starred_known(self, word: str) -> bool:
        """Starred destinations this reader knows: nested-table row ends, Word's company."""
        return word == "nesttableprops" or (self.group.dest == "info" and word in _INFO_FIELDS)

    def _font(self, number: int) -> None:
        if self.group.dest == "fonttbl":
            self.font = number
        else:
            self.group.codec = self.fonts.get(number, self.default_codec)

    def _font_definition(self, word: str, parameter: int | None) -> None:
        codec = None
        if word == "fcharset" and parameter is not None:
            codec = _CHARSETS.get(parameter)
        elif word == "cpg":
            codec = _codec("ansicpg", parameter)
        if codec is not None:
            self.fonts[self.font] = codec

    def _style_definition(self, word: str, parameter: int | None) -> None:
        if word == "s":
            self._end_style()
            self.style = parameter or 0
        elif word == "outlinelevel" and parameter is not None and parameter < _BODY_TEXT_LEVEL:
            self.styles[self.style] = min(parameter + 1, 6)

    def _end_style(self) -> None:
        name = " ".join("".join(self.style_name).split(";")[0].split())
        match = _HEADING_STYLE.match(name)
        if match and self.style not in self.styles:
            self.styles[self.style] = int(match.group(1))
        self.style_name = []

    def _structure(self, word: str, parameter: int | None) -> None:
        """Paragraph, table and break control words (in the body; in a footnote only the
        paragraph end counts)."""
        if self.group.dest == "note":
            if word == "par":
                self._end_note()
            return
        if self.group.dest == "rowprops":
            if word == "nestrow":
                self._end_row(nested=True)
            return
        para = self.para
        if word == "par":
            self._end_paragraph()
        elif word in ("page", "sect"):
            self._end_paragraph()
            if word == "page":
                self._end_table()
                self.builder.add(ElementKind.PAGE_BREAK, "")
        elif word == "pard":
            self.para = _Paragraph()
        elif word == "s":
            para.style = parameter or 0
        elif word == "outlinelevel":
            para.outline = parameter
        elif word == "intbl":
            para.in_table = True
        elif word == "itap":
            para.depth = parameter if parameter is not None else 1
            para.in_table = para.in_table or para.depth > 0
        elif word == "ls" and parameter:
            para.listed = True
        elif word in ("cell", "nestcell"):
            self._end_cell(nested=word == "nestcell")
        elif word in ("row", "nestrow"):
            self._end_row(nested=word == "nestrow")

    # --- paragraphs and tables ----------------------------------------------------------------

    def _take_run(self) -> str:
        text = " ".join(line.strip() for line in "".join(self.run).split("\n"))
        self.run = []
        return " ".join(text.split())

    def _end_paragraph(self) -> None:
        if self.para.in_table:
            text = "".join(self.run).strip()
            self.run = []
            target = self.table.nested_cell if self.para.depth > 1 else self.table.cell
            if text:
                target.append(text)
            return
        text = "".join(self.run)
        self.run = []
        if not text.strip():
            return
        self._end_table()
        level = self._heading_level()
        if level:
            added = self.builder.add(ElementKind.HEADING, " ".join(text.split()), level=level)
            if added is not None and level == 1 and self.first_heading is None:
                self.first_heading = added.text
        else:
            kind = ElementKind.LIST_ITEM if self.para.listed else ElementKind.PARAGRAPH
            self.builder.add(kind, "\n".join(" ".join(line.split()) for line in text.split("\n")))

    def _heading_level(self) -> int:
        outline = self.para.outline
        if outline is not None:
            return min(outline + 1, 6) if 0 <= outline < _BODY_TEXT_LEVEL else 0
        return self.styles.get(self.para.style, 0)

    def _end_cell(self, *, nested: bool) -> None:
        table = self.table
        pieces = table.nested_cell if nested else table.cell
        pieces.append(self._take_run())
        text = " ".join(" ".join(piece.split()) for piece in pieces if piece.strip())
        if nested:
            table.nested_row.append(text)
            table.nested_cell = []
            return
        table.cell = []
        if table.nested_rows:  # a table inside this cell: a table of its own, in place
            rows, table.rows = table.rows, []
            self._add_table(rows)
            self._add_table(table.nested_rows)
            table.nested_rows = []
        table.row.append(text)

    def _end_row(self, *, nested: bool) -> None:
        table = self.table
        if nested:
            table.nested_rows.append(table.nested_row)
            table.nested_row = []
        else:
            table.rows.append(table.row)
            table.row = []

    def _end_table(self) -> None:
        table = self.table
        if table.row:
            table.rows.append(table.row)
        self._add_table(table.rows)
        self._add_table(table.nested_rows)
        self.table = _Table()

    def _add_table(self, rows: list[list[str]]) -> None:
        rows = [row for row in rows if any(cell for cell in row)]
        if rows:
            lines = [TABLE_CELL_SEPARATOR.join(row) for row in rows]
            self.builder.add(ElementKind.TABLE, "\n".join(lines), header=lines[0])

    # --- notes and document information -------------------------------------------------------

    def _end_note(self) -> None:
        text = " ".join("".join(self.note).split())
        self.note = []
        if text:
            self.notes.append(text)

    def _end_info(self, name: str) -> None:
        if name in _INFO_DATES:
            if self.date.get("yr"):
                year, month, day = (self.date.get(part, 0) for part in ("yr", "mo", "dy"))
                stamp = f"{year:04d}-{max(month, 1):02d}-{max(day, 1):02d}"
                if "hr" in self.date:
                    stamp += f"T{self.date['hr']:02d}:{self.date.get('min', 0):02d}"
                self.info[_INFO_DATES[name]] = stamp
        else:
            text = " ".join("".join(self.info_text).split())
            if text:
                self.info[_INFO_FIELDS[name]] = text
        self.info_text, self.date = [], {}


def _find(data: bytes, byte: bytes, start: int) -> int:
    """Where ``byte`` next occurs from ``start``; the end of the data when it does not."""
    found = data.find(byte, start)
    return len(data) if found < 0 else found


def _codec(word: str, parameter: int | None) -> str | None:
    """The Python codec of ``\\ansi``/``\\mac``/``\\pc``/``\\pca`` or ``\\ansicpgN``; None when
    Python has no codec of that number."""
    if word != "ansicpg":
        return _DOCUMENT_CHARSETS[word]
    if not parameter:
        return None
    name = _CODE_PAGES.get(parameter, f"cp{parameter}")
    try:
        codecs.lookup(name)
    except LookupError:
        return None
    return name
