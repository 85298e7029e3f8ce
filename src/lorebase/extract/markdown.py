"""Markdown (``.md``, ``.markdown``, ``.mdx``) to elements, via markdown-it's token stream.

Structure comes from a real CommonMark parser, never from regexes: a ``---`` inside a fenced
code block is code, not front matter and not a setext underline. Metadata blocks (YAML front
matter, Hugo TOML front matter, MultiMarkdown headers) are read for the title and left out of
the body. Line numbers are 1-based source lines of the decoded file; metadata blocks are
blanked rather than cut, so every token's ``map`` still points at the right line.
"""

from __future__ import annotations

import functools
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

import yaml
from markdown_it import MarkdownIt
from markdown_it.token import Token
from mdit_py_plugins.front_matter import front_matter_plugin
from selectolax.lexbor import LexborHTMLParser

from lorebase.extract.base import DocumentBuilder, Extractor
from lorebase.extract.encoding import decode
from lorebase.extract.properties import flattened
from lorebase.types import DocumentKind, ElementKind, Extracted

# MultiMarkdown / Python-Markdown "meta" header: ``Key: value`` lines at the very top, ended by
# the first blank line, with indented continuation lines.
_META_LINE = re.compile(r"^[A-Za-z][\w -]*:(?:\s|$)")
_META_CONTINUATION = re.compile(r"^(?: {4}|\t)\S")
# Keys that make a ``Key: value`` block metadata rather than an ordinary first paragraph.
_META_KEYS = frozenset(
    {
        "title",
        "author",
        "authors",
        "date",
        "summary",
        "description",
        "tags",
        "keywords",
        "category",
        "categories",
        "slug",
        "status",
        "lang",
        "language",
        "subtitle",
        "template",
        "copyright",
        "modified",
        "created",
        "updated",
        "version",
        "layout",
        "permalink",
        "draft",
    }
)
_TOML_FENCE = "+++"
# A kramdown / Python-Markdown attribute list alone on a line: ``{: #id .class}``, ``{:toc}``.
_IAL_LINE = re.compile(r"^\{:[^{}]*\}$|^\{[#.][^{}]*\}$")
# The same kind of attribute list trailing a heading: ``## Setup {#setup}``.
_HEADING_ATTRS = re.compile(r"\s*\{:?\s*[#.][^{}]*\}$")
# ``.mdx`` files hold ES module lines; they are program text, not prose.
_MDX_MODULE_LINE = re.compile(r"^(?:import|export)\s")
_LANGUAGE = re.compile(r"[A-Za-z0-9_+#-][\w+#.-]*")
_HTML_NOISE = ("script", "style", "noscript", "template")
_HTML_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})


class MarkdownExtractor(Extractor):
    kind = DocumentKind.MARKDOWN

    def extract(self, data: bytes, path: PurePath) -> Extracted:
        decoded = decode(data)
        text, header = _strip_metadata(decoded.text)
        tokens = _parser().parse(text)
        front = next((_front_matter(t) for t in tokens if t.type == "front_matter"), None)
        meta = front if front is not None else header
        walker = _Walker(self.builder(data), mdx=path.suffix.lower() == ".mdx")
        walker.walk(tokens)
        title = _title_from(meta) or walker.first_h1
        return walker.builder.build(
            title=title, encoding=decoded.encoding, metadata=flattened(meta)
        )


@functools.cache
def _parser() -> MarkdownIt:
    """Built once, on first use: parsing keeps its state per call, so the parser is shared."""
    return MarkdownIt("commonmark").enable(["table", "strikethrough"]).use(front_matter_plugin)


# --- metadata ---------------------------------------------------------------------------------


def _strip_metadata(text: str) -> tuple[str, dict[str, Any]]:
    """Blank out a TOML or MultiMarkdown metadata header; return the text and the header's
    keys (none: an empty mapping).

    YAML front matter is left to the markdown-it plugin. Lines are replaced by empty lines, not
    removed, so line numbers stay those of the file.
    """
    lines = text.split("\n")
    end, meta = _toml_header(lines)
    if end == 0:
        end, meta = _multimarkdown_header(lines)
    if end == 0:
        return text, {}
    return "\n" * end + "\n".join(lines[end:]), meta


def _toml_header(lines: list[str]) -> tuple[int, dict[str, Any]]:
    """Hugo-style ``+++`` TOML front matter: (lines it spans, its keys)."""
    if not lines or lines[0].strip() != _TOML_FENCE:
        return 0, {}
    for i in range(1, len(lines)):
        if lines[i].strip() == _TOML_FENCE:
            try:
                meta = tomllib.loads("\n".join(lines[1:i]))
            except tomllib.TOMLDecodeError:
                meta = {}
            return i + 1, meta
    return 0, {}


def _multimarkdown_header(lines: list[str]) -> tuple[int, dict[str, Any]]:
    """A MultiMarkdown ``Key: value`` header: (lines it spans, its keys).

    Only the block before the first blank line counts; every line of it must be a ``Key: value``
    line (or an indented continuation of one), and at least one key must be a well-known
    metadata key (``title``, ``author``, ``date``...). So a first paragraph like ``Note: read
    this first`` stays body text, while ``title: Python-Markdown`` is taken as metadata.
    """
    end = next((i for i, line in enumerate(lines) if not line.strip()), len(lines))
    if end == 0 or not _META_LINE.match(lines[0]):
        return 0, {}
    values: dict[str, str] = {}
    for line in lines[:end]:
        if _META_LINE.match(line):
            key, _, value = line.partition(":")
            values.setdefault(key.strip().lower(), value.strip())
        elif not _META_CONTINUATION.match(line):
            return 0, {}
    if not _META_KEYS.intersection(values):
        return 0, {}
    return end, dict(values)


def _front_matter(token: Token) -> dict[str, Any]:
    """The keys of YAML front matter; invalid YAML gives none (the block is still dropped)."""
    try:
        meta = yaml.safe_load(token.content)
    except yaml.YAMLError:
        return {}
    return meta if isinstance(meta, dict) else {}


def _title_from(meta: Any) -> str | None:
    if not isinstance(meta, dict):
        return None
    title = meta.get("title")
    if isinstance(title, str | int | float) and not isinstance(title, bool):
        return str(title).strip() or None
    return None


# --- body -------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Item:
    """The text of one open list item, waiting for its end or for a nested block."""

    parts: list[str] = field(default_factory=list)
    line: int | None = None


class _Walker:
    """Turns the flat token stream into elements.

    List items collect their paragraphs; a nested list, code block or table first flushes the
    item's text so far, so nested content is emitted once, as its own element, in order.
    """

    def __init__(self, builder: DocumentBuilder, *, mdx: bool) -> None:
        self.builder = builder
        self.mdx = mdx
        self.first_h1: str | None = None
        self.items: list[_Item] = []

    def walk(self, tokens: list[Token]) -> None:
        i = 0
        while i < len(tokens):
            i = self._token(tokens, i)

    def _token(self, tokens: list[Token], i: int) -> int:
        """Handle ``tokens[i]``; return the index of the next token to look at."""
        token = tokens[i]
        kind = token.type
        if kind == "list_item_open":
            self._flush_item()
            self.items.append(_Item())
        elif kind == "list_item_close":
            self._flush_item()
            self.items.pop()
        elif kind == "heading_open":
            self._heading(token, tokens[i + 1])
            return i + 3
        elif kind == "paragraph_open":
            self._paragraph(tokens[i + 1].children or [], _line(token))
            return i + 3
        elif kind in ("fence", "code_block"):
            self._code(token)
        elif kind == "html_block":
            self._html_block(token)
        elif kind == "table_open":
            return self._table(tokens, i)
        return i + 1

    def _heading(self, token: Token, inline: Token) -> None:
        text = _inline_text(inline.children or [])
        self._heading_text(text, int(token.tag[1]), _line(token))

    def _heading_text(self, text: str, level: int, line: int | None) -> None:
        self._flush_item()
        text = _HEADING_ATTRS.sub("", " ".join(text.split()))
        added = self.builder.add(ElementKind.HEADING, text, level=level, line=line)
        if added is not None and level == 1 and self.first_h1 is None:
            self.first_h1 = added.text

    def _paragraph(self, children: list[Token], line: int | None) -> None:
        text = _inline_text(children)
        if line is not None:
            text, line = _drop_attribute_lines(text, line)
        if self.mdx and all(_MDX_MODULE_LINE.match(ln) for ln in text.split("\n") if ln.strip()):
            return
        self._text(text, line)

    def _html_block(self, token: Token) -> None:
        """Raw HTML: its headings stay headings (Gruber's syntax page writes ``<h2>``), the rest
        is text. Every part gets the block's first line; lexbor gives no positions."""
        line = _line(token)
        for level, text in _html_parts(token.content):
            if level:
                self._heading_text(text, level, line)
            else:
                self._text(text, line)

    def _text(self, text: str, line: int | None) -> None:
        """Prose: part of the open list item, or a paragraph of its own."""
        if not text.strip():
            return
        if self.items:
            item = self.items[-1]
            item.parts.append(text)
            item.line = item.line if item.line is not None else line
        else:
            self.builder.add(ElementKind.PARAGRAPH, text, line=line)

    def _flush_item(self) -> None:
        if self.items and self.items[-1].parts:
            item = self.items[-1]
            self.builder.add(ElementKind.LIST_ITEM, "\n\n".join(item.parts), line=item.line)
            self.items[-1] = _Item()

    def _code(self, token: Token) -> None:
        self._flush_item()
        content = token.content
        line = _line(token)
        if line is not None:
            if token.type == "fence":
                line += 1  # the first content line, after the opening fence
            line += len(content) - len(content.lstrip("\n"))
        language = _language(token.info) if token.type == "fence" else None
        self.builder.add(ElementKind.CODE, content, line=line, language=language)

    def _table(self, tokens: list[Token], i: int) -> int:
        """One TABLE element: a line per row, cells joined by `` | ``, header row first."""
        self._flush_item()
        line = _line(tokens[i])
        rows: list[list[str]] = []
        i += 1
        while i < len(tokens) and tokens[i].type != "table_close":
            token = tokens[i]
            if token.type == "tr_open":
                rows.append([])
            elif token.type == "inline" and rows:
                rows[-1].append(" ".join(_inline_text(token.children or []).split()))
            i += 1
        lines = [" | ".join(row) for row in rows if any(row)]
        header = lines[0] if len(lines) > 1 and rows and any(rows[0]) else None
        self.builder.add(ElementKind.TABLE, "\n".join(lines), line=line, header=header)
        return i + 1


def _line(token: Token) -> int | None:
    return token.map[0] + 1 if token.map else None


def _inline_text(children: list[Token]) -> str:
    """Inline tokens as plain text: markup and HTML tags go, link text and image alt stay.

    Soft and hard breaks become ``\\n`` so a paragraph's lines still match the source lines.
    """
    out: list[str] = []
    for child in children:
        kind = child.type
        if kind in ("text", "text_special", "code_inline"):
            out.append(child.content)
        elif kind in ("softbreak", "hardbreak"):
            out.append("\n")
        elif kind == "image":
            out.append(_inline_text(child.children or []))
    return "".join(out)


def _drop_attribute_lines(text: str, line: int) -> tuple[str, int]:
    """Remove kramdown attribute-list lines (``{: .note}``) at a paragraph's start or end."""
    lines = text.split("\n")
    while lines and _IAL_LINE.match(lines[0].strip()):
        lines.pop(0)
        line += 1
    while lines and _IAL_LINE.match(lines[-1].strip()):
        lines.pop()
    return "\n".join(lines), line


def _html_parts(html: str) -> list[tuple[int, str]]:
    """A raw HTML block as ``(heading level or 0, text)`` parts, scripts and styles dropped.

    Top-level headings become their own parts; other text is gathered, line by line, into the
    part between them.
    """
    tree = LexborHTMLParser(html)
    for node in tree.css(",".join(_HTML_NOISE)):
        node.decompose()
    root = tree.body
    if root is None:
        return []
    parts: list[tuple[int, str]] = []
    pending: list[str] = []
    for child in root.iter(include_text=True):
        tag = child.tag or ""
        if tag in _HTML_HEADINGS:
            parts.append((0, _html_lines(pending)))
            parts.append((int(tag[1]), child.text(deep=True)))
            pending = []
        elif child.is_text_node or child.is_element_node:
            pending.append(
                child.text(deep=True, separator=" ") + (" " if child.is_element_node else "")
            )
    parts.append((0, _html_lines(pending)))
    return [(level, text) for level, text in parts if text.strip()]


def _html_lines(texts: list[str]) -> str:
    """Join text pieces, collapsing spaces within lines and dropping blank lines."""
    lines = "".join(texts).split("\n")
    return "\n".join(" ".join(line.split()) for line in lines if line.strip())


def _language(info: str) -> str | None:
    """A fence's language: the info string's first word (``python``, ``{ .python }``)."""
    match = _LANGUAGE.search(info.strip().lstrip("{:. "))
    if match is None:
        return None
    language = match.group(0).lower().removeprefix("language-")
    return language or None
