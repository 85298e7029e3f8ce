"""Generators of small PDF and DOCX files for tests, built in memory on every run.

PDFs come from fpdf2 or are written byte by byte where fpdf2 cannot express the case (a
decompression bomb, a font without a usable ToUnicode map). DOCX files come from python-docx,
with raw WordprocessingML added where python-docx has no API (footnotes, text boxes).
"""

from __future__ import annotations

import io
import zipfile
import zlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from docx.document import Document
    from docx.text.paragraph import Paragraph

CORPUS_REASON = "the shared corpus (../shared/data/docs next to the repository) is absent"
HELVETICA = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"
# Every code from the space up is mapped to a private-use glyph name (uniE000, uniE001, ...).
PRIVATE_USE_FONT = (
    b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding << /Type /Encoding "
    b"/Differences [32 " + b" ".join(b"/uniE%03X" % i for i in range(95)) + b"] >> >>"
)

# -- PDF -----------------------------------------------------------------------------------------


def text_pdf(
    pages: Sequence[Sequence[str]],
    *,
    title: str | None = None,
    sections: Sequence[tuple[int, int, str]] = (),
    author: str | None = None,
    keywords: str | None = None,
) -> bytes:
    """A PDF with one page per entry of ``pages``, each a list of paragraphs.

    ``sections`` are ``(page index, level, title)``: the title is written as a line at the top
    of that page and registered as a bookmark (level 0 is the top).
    """
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("Helvetica", size=11)
    if title is not None:
        pdf.set_title(title)
    if author is not None:
        pdf.set_author(author)
    if keywords is not None:
        pdf.set_keywords(keywords)
    for index, paragraphs in enumerate(pages):
        pdf.add_page()
        for page_index, level, name in sections:
            if page_index == index:
                pdf.start_section(name, level=level)
                pdf.set_font("Helvetica", style="B", size=14)
                pdf.cell(text=name, new_x="LMARGIN", new_y="NEXT")
                pdf.set_font("Helvetica", size=11)
        for paragraph in paragraphs:
            pdf.multi_cell(w=0, h=6, text=paragraph, new_x="LMARGIN", new_y="NEXT")
            pdf.ln(4)
    return bytes(pdf.output())


def encrypted_pdf(user_password: str) -> bytes:
    """A one-page text PDF encrypted with RC4; an empty user password opens without asking."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_encryption(owner_password="owner-secret", user_password=user_password)
    pdf.add_page()
    pdf.set_font("Helvetica", size=11)
    pdf.multi_cell(w=0, h=6, text="Protected words live on this page.")
    return bytes(pdf.output())


def image_only_pdf(pages: int = 2) -> bytes:
    """A PDF whose pages hold only a drawn picture: what a scan without OCR looks like."""
    from fpdf import FPDF

    pdf = FPDF()
    for _ in range(pages):
        pdf.add_page()
        pdf.image(io.BytesIO(png_bytes(60, 30)), x=20, y=20, w=120)
        pdf.rect(10, 10, 50, 20)
    return bytes(pdf.output())


def handmade_pdf(contents: Sequence[bytes], *, fonts: Sequence[bytes] = ()) -> bytes:
    """A PDF written byte by byte: one page per content stream (each a complete stream object
    body: dictionary, ``stream`` keyword, data), with a correct cross-reference table.

    ``fonts`` are font dictionaries every page can use as /F1, /F2, ... (default: /F1 is
    Helvetica with the standard encoding).
    """
    fonts = fonts or [HELVETICA]
    first_page = 3 + len(fonts)
    page_ids = [first_page + 2 * i for i in range(len(contents))]
    kids = b" ".join(b"%d 0 R" % i for i in page_ids)
    font_refs = b" ".join(b"/F%d %d 0 R" % (i + 1, 3 + i) for i in range(len(fonts)))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, len(contents)),
        *fonts,
    ]
    for page_id, content in zip(page_ids, contents, strict=True):
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            b"/Resources << /Font << %s >> >> /Contents %d 0 R >>" % (font_refs, page_id + 1)
        )
        objects.append(content)
    return _with_xref(objects)


def _with_xref(objects: Sequence[bytes]) -> bytes:
    """Number the objects from 1, lay them out and add the cross-reference table."""
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\n" % (len(objects) + 1)
    out += b"startxref\n%d\n%%%%EOF\n" % xref
    return bytes(out)


def stream(data: bytes, *, flate_layers: int = 0) -> bytes:
    """A stream object body holding ``data``, Flate-compressed ``flate_layers`` times."""
    for _ in range(flate_layers):
        data = zlib.compress(data, 9)
    filters = b" ".join([b"/FlateDecode"] * flate_layers)
    filter_entry = b" /Filter [%s]" % filters if flate_layers else b""
    return b"<< /Length %d%s >>\nstream\n%s\nendstream" % (len(data), filter_entry, data)


def bomb_pdf(expanded_bytes: int, *, flate_layers: int = 1) -> bytes:
    """One page whose content stream is a line of text and then ``expanded_bytes`` of spaces,
    Flate-compressed to a few kilobytes."""
    content = b"BT /F1 12 Tf 72 720 Td (Bomb page text) Tj ET\n" + b" " * expanded_bytes
    return handmade_pdf([stream(content, flate_layers=flate_layers)])


def pageless_pdf() -> bytes:
    """A well-formed PDF whose page tree has no pages."""
    return _with_xref(
        [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [] /Count 0 >>"]
    )


def text_stream(text: bytes, font: int = 1) -> bytes:
    """A compressed content stream showing one line of ``text`` in font /F``font``."""
    return stream(b"BT /F%d 12 Tf 72 720 Td (%s) Tj ET" % (font, text), flate_layers=1)


def private_use_font_pdf(good_pages: int = 0) -> bytes:
    """``good_pages`` pages of plain text, then one page whose font maps every code to a
    private-use glyph name without a ToUnicode map: pdfium reads that page as U+E000-range
    garbage, like a PDF with a broken font."""
    pages = [text_stream(b"Readable words on a good page.") for _ in range(good_pages)]
    pages.append(text_stream(b"Garbled words from a broken font", font=2))
    return handmade_pdf(pages, fonts=[HELVETICA, PRIVATE_USE_FONT])


# -- DOCX ----------------------------------------------------------------------------------------


def docx_bytes(document: Document) -> bytes:
    """Serialize a python-docx ``Document``."""
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def replace_zip_entries(data: bytes, entries: dict[str, bytes]) -> bytes:
    """A copy of a zip archive with ``entries`` added or replaced (deflated)."""
    source = zipfile.ZipFile(io.BytesIO(data))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            if info.filename not in entries:
                target.writestr(info, source.read(info.filename))
        for name, content in entries.items():
            target.writestr(name, content)
    return buffer.getvalue()


# Transitional -> Strict (ISO/IEC 29500 Strict), as Word's "Strict Open XML Document" writes
# them; the package (OPC) and markup-compatibility names are the same in both.
_STRICT_NAMES = (
    ("wordprocessingml/2006/main", "wordprocessingml/main"),
    ("officeDocument/2006/relationships", "officeDocument/relationships"),
    ("officeDocument/2006/math", "officeDocument/math"),
    ("officeDocument/2006/extended-properties", "officeDocument/extendedProperties"),
    ("officeDocument/2006/docPropsVTypes", "officeDocument/docPropsVTypes"),
    ("officeDocument/2006/bibliography", "officeDocument/bibliography"),
    ("officeDocument/2006/customXml", "officeDocument/customXml"),
    ("drawingml/2006/main", "drawingml/main"),
    ("drawingml/2006/wordprocessingDrawing", "drawingml/wordprocessingDrawing"),
    ("schemaLibrary/2006/main", "schemaLibrary/main"),
)


def strict_docx(data: bytes) -> bytes:
    """The same document saved as Strict Open XML: its parts' namespaces and relationship
    types renamed (python-docx writes only the transitional form)."""
    source = zipfile.ZipFile(io.BytesIO(data))
    entries = {}
    for name in source.namelist():
        content = source.read(name)
        if name.endswith((".xml", ".rels")):
            for old, new in _STRICT_NAMES:
                content = content.replace(
                    b"http://schemas.openxmlformats.org/" + old.encode(),
                    b"http://purl.oclc.org/ooxml/" + new.encode(),
                )
            entries[name] = content
    return replace_zip_entries(data, entries)


def zip_bomb_docx(base: bytes, expanded_bytes: int) -> bytes:
    """A valid docx with one extra entry of ``expanded_bytes`` zeros (compresses ~1000:1)."""
    return replace_zip_entries(base, {"word/media/padding.bin": bytes(expanded_bytes)})


W_NS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
_NOTES_XML = (
    '<w:footnotes xmlns:w="{ns}">'
    '<w:footnote w:type="separator" w:id="-1"><w:p><w:r><w:separator/></w:r></w:p></w:footnote>'
    '<w:footnote w:type="continuationSeparator" w:id="0"><w:p><w:r><w:continuationSeparator/>'
    "</w:r></w:p></w:footnote>{notes}</w:footnotes>"
)
_TEXT_BOX_XML = (
    '<w:r xmlns:w="{w}" xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006" '
    'xmlns:wps="http://schemas.microsoft.com/office/word/2010/wordprocessingShape" '
    'xmlns:v="urn:schemas-microsoft-com:vml">'
    '<mc:AlternateContent><mc:Choice Requires="wps"><w:drawing><wps:wsp><wps:txbx>'
    "<w:txbxContent><w:p><w:r><w:t>{text}</w:t></w:r></w:p></w:txbxContent>"
    "</wps:txbx></wps:wsp></w:drawing></mc:Choice>"
    "<mc:Fallback><w:pict><v:shape><v:textbox><w:txbxContent><w:p><w:r><w:t>{text}</w:t>"
    "</w:r></w:p></w:txbxContent></v:textbox></v:shape></w:pict></mc:Fallback>"
    "</mc:AlternateContent></w:r>"
)


def add_footnotes(document: Document, notes: Sequence[str]) -> None:
    """Give a python-docx document a footnotes part (python-docx has no API for notes),
    with the two separator notes Word always writes and then ``notes``."""
    from docx.opc.constants import CONTENT_TYPE, RELATIONSHIP_TYPE
    from docx.opc.packuri import PackURI
    from docx.opc.part import Part

    body = "".join(
        f'<w:footnote w:id="{number}"><w:p><w:r><w:t>{text}</w:t></w:r></w:p></w:footnote>'
        for number, text in enumerate(notes, start=1)
    )
    blob = _NOTES_XML.format(ns=W_NS, notes=body).encode()
    main = document.part
    part = Part(PackURI("/word/footnotes.xml"), CONTENT_TYPE.WML_FOOTNOTES, blob, main.package)
    main.relate_to(part, RELATIONSHIP_TYPE.FOOTNOTES)


def add_text_box(paragraph: Paragraph, text: str) -> None:
    """Anchor a text box in ``paragraph`` the way Word writes one: a DrawingML shape with a
    VML fallback that repeats the same text."""
    from docx.oxml.parser import parse_xml

    run = parse_xml(_TEXT_BOX_XML.format(w=W_NS, text=text))
    paragraph._p.append(run)


def add_localized_heading_style(document: Document, name: str, outline_level: int) -> str:
    """A paragraph style with a non-English name and id whose only heading mark is its outline
    level, as in a German Word's "Überschrift 1". Returns the style's name."""
    from docx.enum.style import WD_STYLE_TYPE
    from docx.oxml.ns import qn
    from docx.oxml.parser import OxmlElement

    style = document.styles.add_style(name, WD_STYLE_TYPE.PARAGRAPH)
    outline = OxmlElement("w:outlineLvl", {qn("w:val"): str(outline_level)})
    style.element.get_or_add_pPr().append(outline)
    return name


def png_bytes(width: int = 8, height: int = 8) -> bytes:
    """A small grey PNG made with the standard library."""
    import struct

    def chunk(kind: bytes, payload: bytes) -> bytes:
        crc = zlib.crc32(kind + payload)
        return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", crc)

    rows = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def columns_pdf(columns: Sequence[Sequence[str]], *, heading: str | None = None) -> bytes:
    """One page with side-by-side columns of lines, written row by row across the columns
    (so pdfium's own order mixes them), under an optional full-width heading."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("Helvetica", size=10)
    pdf.add_page()
    top = 20
    if heading is not None:
        pdf.set_font("Helvetica", style="B", size=14)
        pdf.set_xy(10, top)
        pdf.cell(w=190, text=heading, align="C")
        pdf.set_font("Helvetica", size=10)
        top += 14
    width = 190 / len(columns)
    for row in range(max(len(lines) for lines in columns)):  # row by row, as many producers do
        for number, lines in enumerate(columns):
            if row < len(lines):
                pdf.set_xy(10 + number * width, top + row * 5)
                pdf.cell(w=width - 8, h=5, text=lines[row])
    return bytes(pdf.output())


def line_numbered_pdf(
    pages: Sequence[Sequence[str]], *, numbers_first: bool = False, left_text: str | None = None
) -> bytes:
    """A transcript-like PDF: each page's lines beside a left margin of line numbers 1, 2, ...

    With ``numbers_first`` the numbers are drawn as one block before the text (as court
    reporters' software does), so pdfium reads them as a run of lines; otherwise each number
    is drawn just before its line. ``left_text`` is a line written at the left edge, left of
    the numbers, in the middle of the first page (what a table's first column looks like).
    """
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_auto_page_break(False)
    pdf.set_font("Helvetica", size=11)
    for index, lines in enumerate(pages):
        pdf.add_page()
        pdf.cell(text="Official transcript", new_x="LMARGIN", new_y="NEXT")
        draws = [(0, n, str(n)) for n in range(1, len(lines) + 1)]
        draws += [(1, n, line) for n, line in enumerate(lines, 1)]
        draws.sort(key=lambda draw: draw[:2] if numbers_first else draw[1::-1])
        for column, number, text in draws:
            pdf.set_xy(30 if column else 12, 25 + number * 9)
            pdf.cell(w=0 if column else 8, h=6, text=text, align="L" if column else "R")
        if left_text is not None and index == 0:
            pdf.set_xy(2, 25 + len(lines) // 2 * 9 + 4)
            pdf.cell(text=left_text)
        pdf.set_xy(100, 280)
        pdf.cell(text=str(index + 1))
    return bytes(pdf.output())
