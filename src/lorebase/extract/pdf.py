"""PDF: text per page with pypdfium2, paragraphs from line layout, headings from bookmarks.

pdfium gives each page's text as lines. Lines become paragraphs (blank lines, else a short
line that ends a sentence), bookmarks become headings on their page, and every element keeps
its 1-based page. Pages whose text is mostly garbage (fonts without a usable ToUnicode map)
count as pages without text. Pages without usable text are rendered and read by OCR when it is
installed and on (:mod:`lorebase.extract.pdf_scans`); their paragraphs take their place among
the others, with the boxes of their lines. Before pdfium parses anything, a byte-level scan
bounds what the file's Flate streams decompress to (the decompression-bomb guard).
"""

from __future__ import annotations

import re
import unicodedata
import zlib
from collections.abc import Iterator
from pathlib import PurePath

import pypdfium2 as pdfium

from lorebase.errors import ExtractionFailed
from lorebase.extract.base import DocumentBuilder, Extractor
from lorebase.extract.ocr_layout import Paragraph, join_lines
from lorebase.extract.pdf_layout import page_text
from lorebase.extract.pdf_scans import PageScans
from lorebase.extract.properties import properties
from lorebase.types import DocumentKind, ElementKind, Extracted, FailureReason, MetadataValue

# pdfium's FPDF_ERR_PASSWORD and FPDF_ERR_SECURITY (an unsupported encryption scheme).
_ENCRYPTED_ERRORS = (4, 5)
# A page is usable when at least this share of its non-space characters are real text.
_MIN_USABLE_SHARE = 0.5
_USABLE_CATEGORIES = ("L", "M", "N", "P", "Sc", "Sm")
# What fonts without a usable ToUnicode map produce: control characters, private-use code
# points (BMP and planes 15-16) and U+FFFD. Tab and line ends stay.
_JUNK = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ue000-\uf8ff\ufffd\U000f0000-\U0010ffff]")
# pdfium marks a word hyphenated across a line end with U+0002 (and may keep the line end).
_PDFIUM_HYPHEN = re.compile("\x02(?:\r?\n)?")
_SENTENCE_END = re.compile(r"[.!?:;。！？…][\"'”’)\]]*$")
# A line shorter than this share of the page's typical line that ends a sentence ends its
# paragraph; one shorter than the second share ends it whatever its last character.
_SHORT_LINE = 0.85
_VERY_SHORT_LINE = 0.5
_MAX_HEADING_LINES = 3
_JUNK_TITLES = {"untitled", "untitled document", "title", "document", "none", "unknown"}
_TITLE_PREFIX = re.compile(r"^microsoft (?:word|powerpoint|excel) - ", re.I)
_FILE_NAME = re.compile(
    r"\.(?:docx?|rtf|odt|pptx?|xlsx?|txt|pdf|e?ps|dvi|tex|exe|indd|qxd|"
    r"jpe?g|png|tiff?|gif|bmp|html?)$",
    re.I,
)
# Deflate cannot expand past ~1032:1, so the expansion scan reads its input in small pieces
# and caps each output piece; memory stays bounded whatever the stream holds.
_SCAN_INPUT = 64 * 1024
_SCAN_OUTPUT = 1024 * 1024
_STREAM_HEAD = 1024
_IMAGE_DICT = re.compile(rb"/Subtype\s*/Image\b")

Bookmarks = dict[int, list[tuple[int, str]]]


class PdfExtractor(Extractor):
    kind = DocumentKind.PDF

    def extract(self, data: bytes, path: PurePath) -> Extracted:
        check_expansion(data, self.settings.max_expanded_bytes)
        pdf = _open(data)
        try:
            return self._read(pdf, data)
        finally:
            pdf.close()

    def _read(self, pdf: pdfium.PdfDocument, data: bytes) -> Extracted:
        page_count = len(pdf)
        bookmarks = _bookmarks(pdf, page_count)
        builder = self.builder(data)
        scans = PageScans(self.settings)
        saw_text = False
        without_text = 0
        for index in range(page_count):
            page = index + 1
            if index:
                builder.add(ElementKind.PAGE_BREAK, "", page=page)
            lines, had_text = _page_lines(pdf, index)
            saw_text = saw_text or had_text
            scanned = scans.read(pdf, index) if lines is None else ()
            if scanned:
                _add_scanned_page(builder, scanned, bookmarks.get(index, []), page)
                continue
            if lines is None:
                without_text += 1
            _add_page(builder, lines or [], bookmarks.get(index, []), page)
        if without_text == page_count:
            raise ExtractionFailed(FailureReason.NO_TEXT_LAYER, scans.failure_detail(saw_text))
        warnings = (f"pages_without_text:{without_text}",) if without_text else ()
        return builder.build(
            title=_title(pdf),
            page_count=page_count,
            warnings=warnings + scans.warnings(),
            metadata={**_info(pdf), **scans.metadata()},
        )


def _open(data: bytes) -> pdfium.PdfDocument:
    """Load the document; a password pdfium cannot supply means ``encrypted``.

    A PDF with no pages fails to load in pdfium (it needs a page tree with at least one page),
    so it comes out as ``corrupt``: there is no page that could be empty, the structure is
    broken. Files with no bytes at all are ``empty`` before any extractor runs.
    """
    try:
        return pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        if exc.err_code in _ENCRYPTED_ERRORS:
            raise ExtractionFailed(FailureReason.ENCRYPTED) from None
        raise ExtractionFailed(FailureReason.CORRUPT, type(exc).__name__) from None


# -- decompression-bomb guard ------------------------------------------------------------------


def check_expansion(data: bytes, limit: int) -> None:
    """Refuse a file whose Flate streams decompress past ``limit`` bytes in total.

    A byte-level scan, not a parse: every ``stream`` keyword starts a candidate; each is
    inflated in capped pieces (through as many layers as its dictionary names /FlateDecode)
    and only the output size is counted. Streams that are not zlib data fail in their first
    bytes and cost nothing. Image streams are left out: text extraction never decodes them, and
    large scans would otherwise look like bombs. Content, form, font and object streams all
    count, because pdfium inflates them to read text. On a 76-page, 1 MB booklet it takes
    ~15 ms against ~47 ms for walking the pages' /Contents with pypdf and ~170 ms for the
    extraction itself, and it also covers files pypdf cannot parse. Encrypted streams are not
    zlib data until decrypted, so they are not measured (pdfium reads them unbounded).
    """
    view = memoryview(data)
    total = 0
    position = data.find(b"stream")
    while position >= 0:
        start = _stream_start(data, position)
        if start is not None and _zlib_header(data[start : start + 2]):
            head = data[max(0, position - _STREAM_HEAD) : position]
            head = head[max(0, head.rfind(b"obj")) :]
            if not _IMAGE_DICT.search(head):
                layers = max(1, head.count(b"/FlateDecode"))
                total += _inflated_size(view, start, layers, limit - total)
                if total > limit:
                    raise ExtractionFailed(FailureReason.TOO_LARGE, "expands past the limit")
        position = data.find(b"stream", position + 6)


def _stream_start(data: bytes, position: int) -> int | None:
    """Where the stream's data begins, or ``None`` when this is not a stream keyword."""
    if data[max(0, position - 3) : position] == b"end":
        return None
    after = position + 6
    if data[after : after + 2] == b"\r\n":
        return after + 2
    if data[after : after + 1] in (b"\n", b"\r"):
        return after + 1
    return None


def _zlib_header(head: bytes) -> bool:
    """Whether two bytes can open a zlib stream (deflate method, header checksum): a cheap
    test that skips most non-Flate streams before any work."""
    return len(head) == 2 and head[0] & 0x0F == 8 and (head[0] << 8 | head[1]) % 31 == 0


def _inflated_size(view: memoryview, start: int, layers: int, budget: int) -> int:
    """Bytes the stream at ``start`` inflates to, counting stops once past ``budget``."""
    pieces: Iterator[bytes | memoryview] = (
        view[i : i + _SCAN_INPUT] for i in range(start, len(view), _SCAN_INPUT)
    )
    for _ in range(layers):
        pieces = _inflate(pieces)
    size = 0
    try:
        for piece in pieces:
            size += len(piece)
            if size > budget:
                break
    except zlib.error:  # not zlib data, or damaged: pdfium decides what it can read
        pass
    return size


def _inflate(pieces: Iterator[bytes | memoryview]) -> Iterator[bytes]:
    """Inflate a stream of compressed pieces lazily, never more than a piece at a time."""
    inflater = zlib.decompressobj()
    for piece in pieces:
        yield inflater.decompress(piece, _SCAN_OUTPUT)
        while inflater.unconsumed_tail and not inflater.eof:
            yield inflater.decompress(inflater.unconsumed_tail, _SCAN_OUTPUT)
        if inflater.eof:
            return


# -- pages ---------------------------------------------------------------------------------------


def _page_lines(pdf: pdfium.PdfDocument, index: int) -> tuple[list[str] | None, bool]:
    """The page's usable lines (``None`` when it has none), and whether it had any text."""
    try:
        page = pdf[index]
    except pdfium.PdfiumError:
        return None, False
    try:
        textpage = page.get_textpage()
        try:
            raw = page_text(textpage, page.get_bbox())
        finally:
            textpage.close()
    except pdfium.PdfiumError:
        return None, False
    finally:
        page.close()
    if not raw.strip():
        return None, False
    text = _clean(raw)
    if not _usable(raw, text):
        return None, True
    return [line.strip() for line in text.splitlines()], True


def _clean(raw: str) -> str:
    """Resolve pdfium's hyphen marks and drop characters that carry no text."""
    text = _PDFIUM_HYPHEN.sub(_hyphen, raw)
    return _JUNK.sub("", text)


def _hyphen(match: re.Match[str]) -> str:
    """pdfium's U+0002 hyphen: a word broken across lines joins when it goes on lowercase."""
    following = match.string[match.end() : match.end() + 1]
    return "" if following.islower() else "-"


def _usable(raw: str, text: str) -> bool:
    """Whether enough of the page's characters are letters, digits or punctuation."""
    total = sum(1 for char in raw if not char.isspace())
    good = sum(1 for char in text if unicodedata.category(char).startswith(_USABLE_CATEGORIES))
    return total > 0 and good >= _MIN_USABLE_SHARE * total


def _add_page(
    builder: DocumentBuilder, lines: list[str], headings: list[tuple[int, str]], page: int
) -> None:
    """Add one page: headings matched to their lines in place, unmatched ones first."""
    matched: list[tuple[int, int, int, str]] = []  # (first line, line count, level, title)
    unmatched: list[tuple[int, str]] = []
    cursor = 0
    for level, title in headings:
        found = _find_heading(lines, title, cursor)
        if found is None:
            unmatched.append((level, title))
        else:
            matched.append((found[0], found[1], level, title))
            cursor = found[0] + found[1]
    for level, title in unmatched:
        builder.add(ElementKind.HEADING, title, level=level, page=page)
    start = 0
    for first, count, level, title in matched:
        _add_paragraphs(builder, lines[start:first], page)
        builder.add(ElementKind.HEADING, title, level=level, page=page)
        start = first + count
    _add_paragraphs(builder, lines[start:], page)


def _add_scanned_page(
    builder: DocumentBuilder,
    paragraphs: tuple[Paragraph, ...],
    headings: list[tuple[int, str]],
    page: int,
) -> None:
    """Add a page read by OCR: its bookmarks first, then its paragraphs with their boxes
    (a paragraph that only repeats a bookmark's title is left out)."""
    for level, title in headings:
        builder.add(ElementKind.HEADING, title, level=level, page=page)
    titles = {_heading_key(title) for _, title in headings}
    for paragraph in paragraphs:
        if _heading_key(paragraph.text) not in titles:
            builder.add(ElementKind.PARAGRAPH, paragraph.text, page=page, boxes=paragraph.boxes)


def _find_heading(lines: list[str], title: str, cursor: int) -> tuple[int, int] | None:
    """The first run of up to three lines from ``cursor`` that spells the bookmark title."""
    key = _heading_key(title)
    if not key:
        return None
    for first in range(cursor, len(lines)):
        joined = ""
        for count in range(1, _MAX_HEADING_LINES + 1):
            if first + count > len(lines):
                break
            joined += _heading_key(lines[first + count - 1])
            if joined == key:
                return first, count
            if not key.startswith(joined):
                break
    return None


def _heading_key(text: str) -> str:
    return "".join(char for char in text.casefold() if char.isalnum())


def _add_paragraphs(builder: DocumentBuilder, lines: list[str], page: int) -> None:
    for paragraph in _paragraphs(lines):
        builder.add(ElementKind.PARAGRAPH, join_lines(paragraph), page=page)


def _paragraphs(lines: list[str]) -> list[list[str]]:
    """Group lines into paragraphs: by blank lines when the page has them, else by layout.

    pdfium rarely reports blank lines, so the usual signal is a line that ends a sentence and
    stops noticeably short of the page's typical line length (or stops very short).
    """
    inner = lines[:]
    while inner and not inner[-1]:
        inner.pop()
    while inner and not inner[0]:
        inner.pop(0)
    if "" in inner:
        return _split_on_blank(inner)
    typical = _typical_length(inner)
    paragraphs: list[list[str]] = []
    current: list[str] = []
    for number, line in enumerate(inner):
        current.append(line)
        following = inner[number + 1] if number + 1 < len(inner) else ""
        if _ends_paragraph(line, following, typical):
            paragraphs.append(current)
            current = []
    if current:
        paragraphs.append(current)
    return paragraphs


def _split_on_blank(lines: list[str]) -> list[list[str]]:
    paragraphs: list[list[str]] = [[]]
    for line in lines:
        if line:
            paragraphs[-1].append(line)
        elif paragraphs[-1]:
            paragraphs.append([])
    return [paragraph for paragraph in paragraphs if paragraph]


def _typical_length(lines: list[str]) -> int:
    """The length most full lines reach: the 80th percentile, robust to a few long ones."""
    lengths = sorted(len(line) for line in lines)
    return lengths[int(len(lengths) * 0.8)] if lengths else 0


def _ends_paragraph(line: str, following: str, typical: int) -> bool:
    """A short line ending a sentence ends its paragraph; so does a very short line (a title,
    a label) and a sentence end right before one."""
    if len(line) < _VERY_SHORT_LINE * typical and not following[:1].islower():
        return True
    if _SENTENCE_END.search(line) is None:
        return False
    return len(line) < _SHORT_LINE * typical or _is_title_line(following, typical)


def _is_title_line(line: str, typical: int) -> bool:
    return (
        0 < len(line) < _VERY_SHORT_LINE * typical
        and line[:1].isupper()
        and not line.endswith((".", ",", ";"))
    )


# -- document ------------------------------------------------------------------------------------


def _bookmarks(pdf: pdfium.PdfDocument, page_count: int) -> Bookmarks:
    """Bookmark titles and levels (1-6) by 0-based page index, in outline order.

    A broken outline only costs the headings, never the text.
    """
    found: Bookmarks = {}
    try:
        for bookmark in pdf.get_toc():
            title = " ".join((bookmark.get_title() or "").split())
            dest = bookmark.get_dest()
            index = dest.get_index() if dest is not None else None
            if title and index is not None and 0 <= index < page_count:
                found.setdefault(index, []).append((min(bookmark.level + 1, 6), title))
    except pdfium.PdfiumError:
        return found
    return found


_INFO_KEYS = ("Author", "Subject", "Keywords", "CreationDate", "ModDate")
"""Entries of a PDF's document information people filter on (the title is read apart)."""


def _info(pdf: pdfium.PdfDocument) -> dict[str, MetadataValue]:
    """Author, subject, keywords (as tags), created and modified from the information
    dictionary (dates as PDF writes them, ``D:2025…``: lorebase.fields reads them)."""
    pairs = []
    for key in _INFO_KEYS:
        try:
            pairs.append((key.lower(), pdf.get_metadata_value(key)))
        except pdfium.PdfiumError:
            continue
    return properties(pairs)


def _title(pdf: pdfium.PdfDocument) -> str | None:
    try:
        raw = pdf.get_metadata_value("Title")
    except pdfium.PdfiumError:
        return None
    return clean_title(raw)


def clean_title(raw: str | None) -> str | None:
    """A metadata title worth showing: not a placeholder, not a bare file name.

    Producers often store "Untitled", the source file name or "Microsoft Word - x.doc".
    """
    title = " ".join(_JUNK.sub("", raw or "").split())
    title = _TITLE_PREFIX.sub("", title)
    if _FILE_NAME.search(title):
        if " " not in title:
            return None
        title = _FILE_NAME.sub("", title).strip()
    if not title or title.casefold() in _JUNK_TITLES or not any(c.isalnum() for c in title):
        return None
    return title
