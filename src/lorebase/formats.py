"""Every format lorebase reads, in one table: :data:`FORMATS`.

A new format is one module in ``extract/`` (an :class:`~lorebase.extract.base.Extractor`)
and one line here. Everything else is derived from this table: which extractor reads a path
(:mod:`lorebase.extract.registry`), the kind a path's document gets, which files a walk or
an upload accepts, the readers each extraction worker loads before its first file
(:mod:`lorebase.extract.sandbox`), where an evaluated citation must point
(:mod:`lorebase.eval.metrics`) and the formats an unsupported upload is told to use. A test
(``tests/unit/test_formats.py``) holds the table to its modules and to ``docs/formats.md``.

The table is data: nothing is imported until a file of that format is read.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import cache
from pathlib import PurePath
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from lorebase.extract.base import Extractor

Locator = Literal["page", "slide", "cell", "row", "line", "trail"]
"""Where a citation points within a document: a page (PDF), a slide (decks), a cell
(notebooks), a row or rows (spreadsheets), a line (the text family, Markdown, code), or its
heading trail alone (formats that have none of these)."""


@dataclass(frozen=True, slots=True)
class Format:
    """One format: the document ``kind`` it gives (stored, shown, filtered on), its
    ``label`` in messages and docs, the lower-cased ``extensions`` that select it, its
    ``extractor`` as ``"module:Class"`` of a module in ``lorebase.extract`` (imported on
    first use), where its citations point (``locator``), whether a file of it may hold
    documents of its own (``parts``: a mail's attachments, a mailbox's messages) and the
    ``version`` of its extractor: raise it when the extractor reads the same bytes into other
    elements, and every document of the format becomes stale (read again by the next pass,
    its unchanged chunks keeping their vectors; see :mod:`lorebase.ingest.versions`)."""

    kind: str
    label: str
    extensions: tuple[str, ...]
    extractor: str
    locator: Locator
    parts: bool = False
    version: int = 1

    @property
    def module(self) -> str:
        """The module that holds the extractor."""
        return f"lorebase.extract.{self.extractor.partition(':')[0]}"

    def load(self) -> type[Extractor]:
        """The extractor class, imported now."""
        name = self.extractor.partition(":")[2]
        extractor: type[Extractor] = getattr(importlib.import_module(self.module), name)
        return extractor


# Extension -> language name for source code (the code format's extensions).
CODE_LANGUAGES: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".tsx": "typescript",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".kt": "kotlin",
    ".kts": "kotlin",
    ".scala": "scala",
    ".swift": "swift",
    ".c": "c",
    ".h": "c",
    ".cpp": "cpp",
    ".cc": "cpp",
    ".cxx": "cpp",
    ".hpp": "cpp",
    ".hh": "cpp",
    ".cs": "csharp",
    ".rb": "ruby",
    ".php": "php",
    ".sh": "shell",
    ".bash": "shell",
    ".zsh": "shell",
    ".sql": "sql",
    ".lua": "lua",
    ".r": "r",
    ".pl": "perl",
    ".dart": "dart",
    ".ex": "elixir",
    ".exs": "elixir",
    ".hs": "haskell",
    ".ml": "ocaml",
    ".css": "css",
    ".scss": "scss",
    ".vue": "vue",
    ".svelte": "svelte",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".toml": "toml",
    ".ini": "ini",
}

# The text family: plain text and the light markups read by lorebase.extract.text_markup.
TEXT_EXTENSIONS = (
    *(".txt", ".text", ".rst", ".adoc", ".asciidoc", ".org", ".json"),
    *(".jsonl", ".log", ".tex", ".xml"),
)

FORMATS: tuple[Format, ...] = (
    # Version 2: these extractors changed in the release that began recording versions, so
    # what an older release made of these files is read again.
    Format(
        "md",
        "Markdown",
        (".md", ".markdown", ".mdx"),
        "markdown:MarkdownExtractor",
        "line",
        version=2,
    ),
    Format("txt", "text", TEXT_EXTENSIONS, "text:TextExtractor", "line", version=2),
    Format("html", "HTML", (".html", ".htm", ".xhtml"), "html:HtmlExtractor", "trail", version=2),
    Format("pdf", "PDF", (".pdf",), "pdf:PdfExtractor", "page", version=2),
    Format("docx", "Word (.docx)", (".docx",), "docx:DocxExtractor", "trail", version=2),
    Format("xlsx", "Excel workbooks", (".xlsx", ".xlsm"), "sheets:XlsxExtractor", "row"),
    Format("ods", "OpenDocument spreadsheets", (".ods",), "sheets:OdsExtractor", "row"),
    Format("csv", "CSV/TSV tables", (".csv", ".tsv"), "sheets:CsvExtractor", "row"),
    Format("pptx", "PowerPoint (.pptx)", (".pptx",), "slides:PptxExtractor", "slide"),
    Format("odp", "OpenDocument presentations", (".odp",), "slides:OdpExtractor", "slide"),
    Format("odt", "OpenDocument text", (".odt",), "odt:OdtExtractor", "trail"),
    Format("epub", "EPUB e-books", (".epub",), "epub:EpubExtractor", "trail"),
    Format("rtf", "RTF", (".rtf",), "rtf:RtfExtractor", "trail"),
    Format("ipynb", "Jupyter notebooks", (".ipynb",), "notebook:NotebookExtractor", "cell"),
    Format("eml", "mail (.eml)", (".eml",), "mail:EmlExtractor", "trail"),
    Format("mbox", "mailboxes (.mbox)", (".mbox",), "mail:MboxExtractor", "trail"),
    Format("msg", "Outlook mail (.msg)", (".msg",), "outlook:MsgExtractor", "trail"),
    Format(
        "image",
        "images (by OCR)",
        (".png", ".jpg", ".jpeg", ".tif", ".tiff", ".webp"),
        "image:ImageExtractor",
        "trail",
    ),
    Format("code", "source code", tuple(CODE_LANGUAGES), "code:CodeExtractor", "line", version=2),
    # What `lorebase notes add` writes (a title line, then the text): one chunk per note.
    Format("note", "notes", (".note",), "note:NoteExtractor", "line"),
)
"""Every format, one line each (see the module docstring)."""


@cache
def _by_extension() -> dict[str, Format]:
    return {ext: fmt for fmt in FORMATS for ext in fmt.extensions}


@cache
def _by_kind() -> dict[str, Format]:
    return {fmt.kind: fmt for fmt in FORMATS}


def extension(path: PurePath) -> str:
    """The lower-cased extension that picks a format (``""`` when there is none). Pure."""
    return path.suffix.lower()


def format_for(path: PurePath) -> Format | None:
    """The format of a path, judged by its extension; None when lorebase does not read it."""
    return _by_extension().get(extension(path))


def format_of_kind(kind: str) -> Format | None:
    """The format that gives documents of ``kind`` (None for a kind no format gives)."""
    return _by_kind().get(kind)


def document_kind(path: PurePath) -> str | None:
    """The kind of document a path holds, judged by its extension; None when unsupported."""
    found = format_for(path)
    return None if found is None else found.kind


def is_supported(path: PurePath) -> bool:
    return format_for(path) is not None


def citation_locator(kind: str) -> Locator | None:
    """Where a citation of a document of ``kind`` points (None: an unknown kind)."""
    found = format_of_kind(kind)
    return None if found is None else found.locator


def extractor_version(kind: str) -> int:
    """The version of the extractor that gives documents of ``kind`` (0: a kind no format
    gives, such as a file that was not read)."""
    found = format_of_kind(kind)
    return 0 if found is None else found.version


def holds_parts(kind: str) -> bool:
    """Whether a document of ``kind`` may hold documents of its own (see :class:`Format`)."""
    found = format_of_kind(kind)
    return found is not None and found.parts


def extractor_modules() -> tuple[str, ...]:
    """The modules of every extractor, each once, in the table's order."""
    return tuple(dict.fromkeys(fmt.module for fmt in FORMATS))


def supported_labels() -> str:
    """The formats by label, for a message: ``"Markdown, text, … or source code"``."""
    labels = [fmt.label for fmt in FORMATS]
    return f"{', '.join(labels[:-1])} or {labels[-1]}" if len(labels) > 1 else labels[0]
