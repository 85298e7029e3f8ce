"""Jupyter notebooks (``.ipynb``, nbformat 4 and 3), read as JSON with the standard library.

Every element carries its cell's number (1-based, counting every cell) as its ``page``, so a
passage is cited ``notebook.ipynb › Heading (cell 7)``. Markdown cells are read by the
Markdown extractor: their headings open sections, so the code cells after a heading sit
under it. Code cells are CODE elements in the kernel's language (a ``%%bash``-style cell magic
names another), each followed by its text outputs as CODE elements whose language is
``output``: stream text (carriage-return progress lines reduced to what the terminal showed
last), the ``text/plain`` of results and displays (``text/markdown`` first, ``text/html``
read as text when there is nothing else), error tracebacks with their ANSI colour codes
removed. Raw cells are paragraphs. Images, JavaScript and widget outputs are left out (an
output holding an image is left out whole: its ``text/plain`` is only the figure's repr);
an output longer than :data:`MAX_OUTPUT_CHARS` is cut there. Title: the first level-1 heading,
else ``metadata.title``. A file that is not JSON, or has no ``cells`` (nbformat 3: no
``worksheets``), is ``corrupt``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import PurePath
from typing import Any

from selectolax.lexbor import LexborHTMLParser

from lorebase.errors import ExtractionFailed
from lorebase.extract.base import DocumentBuilder, Extractor
from lorebase.extract.markdown import MarkdownExtractor
from lorebase.types import ElementKind, Extracted, FailureReason, MetadataValue

OUTPUT_LANGUAGE = "output"
"""The ``language`` of a code cell's output: what marks an element as output, not code."""

MAX_OUTPUT_CHARS = 20_000
"""Longest output kept: a cell that printed a whole data set is not the notebook's text."""

_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")
_CELL_MAGIC = re.compile(r"^%%(\w+)(?:[ \t]+(\S+))?")
_MAGIC_LANGUAGES = {
    "bash": "shell",
    "sh": "shell",
    "perl": "perl",
    "ruby": "ruby",
    "javascript": "javascript",
    "js": "javascript",
    "html": "html",
    "latex": "latex",
    "sql": "sql",
    "r": "r",
    "markdown": "markdown",
}
_LEFT_OUT_TYPES = ("image/", "application/javascript", "application/vnd.jupyter.widget")
_TEXT_TYPES = ("text/markdown", "text/plain", "text/latex")
# nbformat 3 kept an output's data under short keys of its own.
_V3_KEYS = {"text": "text/plain", "html": "text/html", "latex": "text/latex", "png": "image/png"}
_V3_KEYS |= {"jpeg": "image/jpeg", "svg": "image/svg+xml", "javascript": "application/javascript"}


class NotebookExtractor(Extractor):
    kind = "ipynb"

    def extract(self, data: bytes, path: PurePath) -> Extracted:
        notebook = _load(data)
        metadata = _dict(notebook.get("metadata"))
        language = _kernel_language(metadata)
        reader = _Reader(self.builder(data), MarkdownExtractor(self.settings))
        for number, cell in enumerate(_cells(notebook), start=1):
            reader.cell(number, cell, language)
        title = reader.first_h1 or _string(metadata.get("title")) or None
        warnings = (
            (f"{reader.cut} outputs cut at {MAX_OUTPUT_CHARS} characters",) if reader.cut else ()
        )
        return reader.builder.build(
            title=title, warnings=warnings, metadata=_metadata(notebook, metadata, language)
        )


def _load(data: bytes) -> dict[str, Any]:
    try:
        notebook = json.loads(data)
    except (ValueError, RecursionError) as exc:  # not JSON, or not UTF-8
        raise ExtractionFailed(FailureReason.CORRUPT, f"not JSON ({type(exc).__name__})") from None
    if not isinstance(notebook, dict) or not (
        isinstance(notebook.get("cells"), list) or isinstance(notebook.get("worksheets"), list)
    ):
        raise ExtractionFailed(FailureReason.CORRUPT, "JSON without notebook cells")
    return notebook


def _cells(notebook: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every cell in order (nbformat 3: of every worksheet); a cell that is not an object
    still counts, so the numbers stay those the notebook shows."""
    if isinstance(notebook.get("cells"), list):
        groups = [notebook["cells"]]
    else:
        groups = [_dict(sheet).get("cells") for sheet in notebook["worksheets"]]
    for cells in groups:
        for cell in cells if isinstance(cells, list) else ():
            yield _dict(cell)


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _string(value: object) -> str:
    """A notebook string: nbformat stores multi-line text as a string or a list of lines."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(item for item in value if isinstance(item, str))
    return ""


def _kernel_language(metadata: dict[str, Any]) -> str | None:
    for value in (
        _dict(metadata.get("kernelspec")).get("language"),
        _dict(metadata.get("language_info")).get("name"),
        metadata.get("language"),  # nbformat 3
    ):
        if isinstance(value, str) and value.strip():
            return value.strip().lower()
    return None


def _metadata(
    notebook: dict[str, Any], metadata: dict[str, Any], language: str | None
) -> dict[str, MetadataValue]:
    kernel = _dict(metadata.get("kernelspec"))
    found: dict[str, MetadataValue] = {
        "kernel": _string(kernel.get("display_name") or kernel.get("name")),
        "language": language or "",
    }
    major, minor = notebook.get("nbformat"), notebook.get("nbformat_minor", 0)
    if isinstance(major, int) and isinstance(minor, int):
        found["nbformat"] = f"{major}.{minor}"
    authors = metadata.get("authors")
    if isinstance(authors, list):
        names = [
            _string(_dict(a).get("name")) if isinstance(a, dict) else _string(a) for a in authors
        ]
        found["author"] = tuple(name for name in names if name)
    return found


class _Reader:
    """Adds cells to the builder, each element stamped with its cell's number."""

    def __init__(self, builder: DocumentBuilder, markdown: MarkdownExtractor) -> None:
        self.builder = builder
        self.markdown = markdown
        self.first_h1: str | None = None
        self.cut = 0

    def cell(self, number: int, cell: dict[str, Any], language: str | None) -> None:
        kind = cell.get("cell_type")
        source = _string(cell.get("source", cell.get("input")))
        if kind == "markdown":
            self._markdown(number, source)
        elif kind == "heading":  # nbformat 3
            level = cell.get("level")
            level = min(max(level, 1), 6) if isinstance(level, int) else 1
            self._heading(number, source, level)
        elif kind == "code":
            cell_language = _string(cell.get("language")).lower() or language  # nbformat 3
            self.builder.add(
                ElementKind.CODE, source, page=number, language=_magic(source) or cell_language
            )
            self._outputs(number, cell.get("outputs"))
        elif kind == "raw":
            self.builder.add(ElementKind.PARAGRAPH, source, page=number)

    def _markdown(self, number: int, source: str) -> None:
        if not source.strip():
            return
        try:
            extracted = self.markdown.extract(source.encode("utf-8"), PurePath("cell.md"))
        except ExtractionFailed as failed:
            if failed.reason is FailureReason.EMPTY:
                return
            raise
        for element in extracted.elements:
            if element.kind is ElementKind.HEADING:
                self._heading(number, element.text, element.level)
            else:
                self.builder.add(
                    element.kind,
                    element.text,
                    level=element.level,
                    page=number,
                    language=element.language,
                    header=element.header,
                )

    def _heading(self, number: int, text: str, level: int) -> None:
        added = self.builder.add(
            ElementKind.HEADING, " ".join(text.split()), level=level, page=number
        )
        if added is not None and level == 1 and self.first_h1 is None:
            self.first_h1 = added.text

    def _outputs(self, number: int, outputs: object) -> None:
        stream: list[str] = []
        for output in outputs if isinstance(outputs, list) else ():
            output = _dict(output)
            if output.get("output_type") == "stream":
                stream.append(_string(output.get("text")))
                continue
            self._output(number, "".join(stream))
            stream = []
            self._output(number, _output_text(output))
        self._output(number, "".join(stream))

    def _output(self, number: int, text: str) -> None:
        text = _terminal(text)
        if len(text) > MAX_OUTPUT_CHARS:
            text = text[:MAX_OUTPUT_CHARS] + "\n…"
            self.cut += 1
        self.builder.add(ElementKind.CODE, text, page=number, language=OUTPUT_LANGUAGE)


def _magic(source: str) -> str | None:
    """The language a cell magic (``%%bash``, ``%%script perl``) gives a cell, if any."""
    match = _CELL_MAGIC.match(source.lstrip())
    if match is None:
        return None
    name = match.group(1).lower()
    if name == "script" and match.group(2):
        name = match.group(2).rsplit("/", 1)[-1].lower()
    return _MAGIC_LANGUAGES.get(name)


def _output_text(output: dict[str, Any]) -> str:
    """The text of a result, display or error output ("" for images and scripts)."""
    kind = output.get("output_type")
    if kind in ("error", "pyerr"):
        traceback = output.get("traceback")
        if isinstance(traceback, list) and traceback:
            return "\n".join(item for item in traceback if isinstance(item, str))
        name, value = _string(output.get("ename")), _string(output.get("evalue"))
        return f"{name}: {value}" if name or value else ""
    data = _dict(output.get("data"))
    if not data:  # nbformat 3: the data sits on the output itself, under short keys
        data = {_V3_KEYS[key]: value for key, value in output.items() if key in _V3_KEYS}
    if any(key.startswith(_LEFT_OUT_TYPES) for key in data):
        return ""
    for key in _TEXT_TYPES:
        if key in data:
            return _string(data[key])
    if "text/html" in data:
        tree = LexborHTMLParser(_string(data["text/html"]))
        for node in tree.css("script, style"):
            node.decompose()
        return tree.body.text(separator="\n") if tree.body is not None else ""
    return ""


def _last_state(line: str) -> str:
    states = [state for state in line.split("\r") if state.strip()]
    return states[-1] if states else ""


def _terminal(text: str) -> str:
    """Output as a terminal shows it: ANSI escape codes removed, and of each line rewritten
    by carriage returns (a progress bar) only its last state."""
    text = _ANSI.sub("", text)
    if "\r" in text:
        text = text.replace("\r\n", "\n")
        text = "\n".join(_last_state(line) for line in text.split("\n"))
    return text
