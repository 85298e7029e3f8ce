"""Which extractor reads which file, and the one place that turns any failure into a reason.

Extractors are imported lazily: reading Markdown never imports the PDF library.
"""

from __future__ import annotations

import importlib
from pathlib import Path, PurePath

from lorebase.errors import ExtractionFailed
from lorebase.extract.base import Extractor
from lorebase.settings import ExtractSettings
from lorebase.types import DocumentKind, Extracted, FailureReason

MARKDOWN_EXTENSIONS = (".md", ".markdown", ".mdx")
TEXT_EXTENSIONS = (
    ".txt",
    ".text",
    ".rst",
    ".adoc",
    ".asciidoc",
    ".org",
    ".csv",
    ".tsv",
    ".json",
    ".jsonl",
    ".log",
    ".tex",
    ".xml",
)
HTML_EXTENSIONS = (".html", ".htm", ".xhtml")
# Extension -> language name for source code.
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

_MODULES: dict[str, tuple[str, str]] = {
    **{ext: ("lorebase.extract.markdown", "MarkdownExtractor") for ext in MARKDOWN_EXTENSIONS},
    **{ext: ("lorebase.extract.text", "TextExtractor") for ext in TEXT_EXTENSIONS},
    **{ext: ("lorebase.extract.html", "HtmlExtractor") for ext in HTML_EXTENSIONS},
    ".pdf": ("lorebase.extract.pdf", "PdfExtractor"),
    ".docx": ("lorebase.extract.docx", "DocxExtractor"),
    **{ext: ("lorebase.extract.code", "CodeExtractor") for ext in CODE_LANGUAGES},
}


_KINDS = {
    "MarkdownExtractor": DocumentKind.MARKDOWN,
    "TextExtractor": DocumentKind.TEXT,
    "HtmlExtractor": DocumentKind.HTML,
    "PdfExtractor": DocumentKind.PDF,
    "DocxExtractor": DocumentKind.DOCX,
    "CodeExtractor": DocumentKind.CODE,
}


def document_kind(path: PurePath) -> DocumentKind | None:
    """The kind of document a path holds, judged by its extension; None when unsupported."""
    entry = _MODULES.get(extension(path))
    return None if entry is None else _KINDS[entry[1]]


def extension(path: PurePath) -> str:
    """The lower-cased extension that picks an extractor (``""`` when there is none)."""
    return path.suffix.lower()


def is_supported(path: PurePath) -> bool:
    return extension(path) in _MODULES


def extractor_for(path: PurePath, settings: ExtractSettings) -> Extractor:
    """The extractor for ``path``; raises ``ExtractionFailed(unsupported_format)``."""
    entry = _MODULES.get(extension(path))
    if entry is None:
        raise ExtractionFailed(FailureReason.UNSUPPORTED_FORMAT)
    module_name, class_name = entry
    extractor_class: type[Extractor] = getattr(importlib.import_module(module_name), class_name)
    return extractor_class(settings)


def extract_bytes(data: bytes, path: PurePath, settings: ExtractSettings) -> Extracted:
    """Extract one file's bytes. Every failure comes out as :class:`ExtractionFailed`."""
    extractor = extractor_for(path, settings)
    if len(data) > settings.max_file_bytes:
        raise ExtractionFailed(FailureReason.TOO_LARGE)
    if not data.strip():
        raise ExtractionFailed(FailureReason.EMPTY)
    try:
        return extractor.extract(data, path)
    except ExtractionFailed:
        raise
    except MemoryError:
        raise ExtractionFailed(FailureReason.TOO_LARGE, "out of memory while reading") from None
    except Exception as exc:  # a parser choking on bad input: the file is damaged
        # The library's message may quote the document, so only its class name is kept.
        raise ExtractionFailed(FailureReason.CORRUPT, type(exc).__name__) from None


def extract_file(path: Path, settings: ExtractSettings) -> Extracted:
    """Read and extract one file in this process (see ``lorebase.extract.sandbox`` for the
    bounded way); the size limit is checked before any byte is read."""
    return extract_bytes(read_file(path, settings), path, settings)


def read_file(path: Path, settings: ExtractSettings) -> bytes:
    """The bytes of a supported file within the size limit; raises ``ExtractionFailed``
    (``unsupported_format``, ``too_large``, ``unreadable``) without reading otherwise."""
    if not is_supported(path):  # unsupported files are never opened
        raise ExtractionFailed(FailureReason.UNSUPPORTED_FORMAT)
    try:
        size = path.stat().st_size
        if size > settings.max_file_bytes:
            raise ExtractionFailed(FailureReason.TOO_LARGE)
        return path.read_bytes()
    except OSError as exc:
        raise ExtractionFailed(FailureReason.UNREADABLE, type(exc).__name__) from None
