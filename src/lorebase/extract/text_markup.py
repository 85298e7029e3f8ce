"""Line-based readers for the light markups of the text family.

Each dialect turns source lines into :class:`Block` values (heading, paragraph, list item,
code) with 1-based line numbers. They share one loop (:meth:`Dialect.blocks`); a dialect only
says what a heading, a code block and a skipped line look like in its markup.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from lorebase.types import ElementKind

# Punctuation that reStructuredText allows in section adornments.
_ADORNMENT = re.compile(r"""^([=\-~^"'`#*+<>:._!$%&,/;?@\\|])\1{2,}\s*$""")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)]|[a-zA-Z][.)])\s+\S")


@dataclass(frozen=True, slots=True)
class Block:
    """One element as read from the source. ``kind`` None marks a declared document title."""

    kind: ElementKind | None
    text: str
    line: int
    level: int = 0
    language: str | None = None


@dataclass(frozen=True, slots=True)
class Match:
    """What a dialect recognised at a line: a block, and how many lines it used."""

    block: Block | None
    consumed: int


class Dialect:
    """Plain text: paragraphs, list items, and underlined (setext/reST-style) titles."""

    def __init__(self) -> None:
        self._levels: dict[str, int] = {}

    def blocks(self, lines: list[str]) -> list[Block]:
        out: list[Block] = []
        paragraph: list[str] = []
        start = 0

        def flush() -> None:
            if paragraph:
                kind = ElementKind.LIST_ITEM if _LIST_ITEM.match(paragraph[0]) else None
                out.append(Block(kind or ElementKind.PARAGRAPH, "\n".join(paragraph), start + 1))
                paragraph.clear()

        i = 0
        while i < len(lines):
            match = self.match(lines, i)
            if match is not None:
                flush()
                if match.block is not None:
                    out.append(match.block)
                i += max(match.consumed, 1)
                continue
            line = lines[i]
            if not line.strip():
                flush()
            else:
                # A list marker starts a new item only inside a list: "2) ..." wrapped
                # onto a line of its own in running prose is not an item.
                if paragraph and _LIST_ITEM.match(paragraph[0]) and _LIST_ITEM.match(line):
                    flush()
                if not paragraph:
                    start = i
                paragraph.append(line)
            i += 1
        flush()
        return out

    def match(self, lines: list[str], i: int) -> Match | None:
        """A heading, code block or skipped construct starting at line ``i``, if any."""
        return self.underlined_title(lines, i)

    def level_of(self, style: str) -> int:
        """reST levels are not fixed: each new adornment style is one level deeper."""
        if style not in self._levels:
            self._levels[style] = len(self._levels) + 1
        return min(self._levels[style], 6)

    def underlined_title(self, lines: list[str], i: int) -> Match | None:
        title = lines[i]
        if not title.strip() or title.startswith((" ", "\t")) or _ADORNMENT.match(title):
            # An overline: adornment, title, adornment.
            if (
                _ADORNMENT.match(title)
                and i + 2 < len(lines)
                and lines[i + 1].strip()
                and lines[i + 2].strip() == title.strip()
                and not _ADORNMENT.match(lines[i + 1])
            ):
                text = lines[i + 1].strip()
                level = self.level_of("over" + title.strip()[0])
                return Match(Block(ElementKind.HEADING, text, i + 2, level), 3)
            return None
        if i + 1 >= len(lines) or (i > 0 and lines[i - 1].strip()):
            return None
        under = lines[i + 1]
        if not _ADORNMENT.match(under) or len(under.rstrip()) < min(len(title.rstrip()), 3):
            return None
        level = self.level_of(under.strip()[0])
        return Match(Block(ElementKind.HEADING, title.strip(), i + 1, level), 2)


class RestDialect(Dialect):
    """reStructuredText: adorned titles, ``::`` literal blocks, code directives, comments."""

    _DIRECTIVE = re.compile(r"^\.\.\s+([\w:-]+)::\s*(.*)$")
    _CODE_DIRECTIVES = frozenset({"code", "code-block", "sourcecode", "literalinclude"})
    _SKIPPED_DIRECTIVES = frozenset(
        {
            "toctree",
            "include",
            "image",
            "figure",
            "raw",
            "only",
            "automodule",
            "autoclass",
            "autofunction",
            "index",
            "contents",
            "highlight",
            "currentmodule",
            "module",
        }
    )

    def match(self, lines: list[str], i: int) -> Match | None:
        line = lines[i]
        directive = self._DIRECTIVE.match(line)
        if directive:
            name, argument = directive.group(1).lower(), directive.group(2).strip()
            body, consumed = _indented_body(lines, i + 1)
            if name in self._CODE_DIRECTIVES:
                language = argument.split()[0].lower() if argument else None
                first = _first_content_line(lines, i + 1)
                code = Block(ElementKind.CODE, _drop_options(body), first + 1, language=language)
                return Match(code if body.strip() else None, consumed + 1)
            if name in self._SKIPPED_DIRECTIVES:
                return Match(None, consumed + 1)
            text = "\n".join(part for part in (argument, _drop_options(body)) if part.strip())
            start = i + 1 if argument else _first_content_line(lines, i + 1) + 1
            block = Block(ElementKind.PARAGRAPH, text, start) if text.strip() else None
            return Match(block, consumed + 1)
        if line.startswith(".. ") or line.strip() == "..":  # a comment or target
            _, consumed = _indented_body(lines, i + 1)
            return Match(None, consumed + 1)
        return self.underlined_title(lines, i)

    def blocks(self, lines: list[str]) -> list[Block]:
        # A paragraph ending in "::" introduces a literal block; split it off so the
        # paragraph stays prose and the indented block becomes code.
        out = super().blocks(lines)
        return _literal_blocks(out, lines)


class AsciiDocDialect(Dialect):
    """AsciiDoc: ``= Title``, ``== Section``…, ``----`` listing blocks with ``[source,lang]``."""

    _TITLE = re.compile(r"^(={1,6})\s+(\S.*)$")
    _SOURCE = re.compile(r"^\[source\s*,\s*([\w+#-]+)")

    def match(self, lines: list[str], i: int) -> Match | None:
        line = lines[i]
        title = self._TITLE.match(line)
        if title:
            depth = len(title.group(1))
            if depth == 1:
                return Match(Block(None, title.group(2).strip(), i + 1), 1)
            return Match(Block(ElementKind.HEADING, title.group(2).strip(), i + 1, depth - 1), 1)
        source = self._SOURCE.match(line)
        if source and i + 1 < len(lines) and lines[i + 1].strip() in ("----", "...."):
            return _fenced(lines, i + 1, lines[i + 1].strip(), source.group(1).lower(), 1)
        if line.strip() in ("----", "....") and line.strip() == line:
            return _fenced(lines, i, line.strip(), None, 0)
        if line.startswith("//") or (line.startswith(":") and re.match(r"^:[\w-]+:", line)):
            return Match(None, 1)  # comments and attribute entries
        return None


class OrgDialect(Dialect):
    """Org mode: ``* Heading`` by star count, ``#+TITLE:``, ``#+BEGIN_SRC lang`` blocks."""

    _HEADING = re.compile(r"^(\*{1,6})\s+(\S.*)$")
    _KEYWORD = re.compile(r"^#\+(\w+):\s*(.*)$", re.I)
    _BEGIN = re.compile(r"^\s*#\+begin_(src|example)\s*([\w+#-]*)", re.I)

    def match(self, lines: list[str], i: int) -> Match | None:
        line = lines[i]
        heading = self._HEADING.match(line)
        if heading:
            level = len(heading.group(1))
            return Match(Block(ElementKind.HEADING, heading.group(2).strip(), i + 1, level), 1)
        begin = self._BEGIN.match(line)
        if begin:
            end_marker = f"#+end_{begin.group(1).lower()}"
            language = begin.group(2).lower() or None
            return _fenced(lines, i, end_marker, language, 0, case_insensitive=True)
        keyword = self._KEYWORD.match(line)
        if keyword:
            if keyword.group(1).lower() == "title":
                return Match(Block(None, keyword.group(2).strip(), i + 1), 1)
            return Match(None, 1)
        return None


class TexDialect(Dialect):
    """LaTeX: ``\\title{}``, sectioning commands as headings, comments dropped."""

    _SECTION = re.compile(
        r"^\s*\\(part|chapter|section|subsection|subsubsection|paragraph)\*?"
        r"(?:\[[^\]]*\])?\{(.+)\}\s*$"
    )
    _TITLE = re.compile(r"^\s*\\title\{(.+)\}\s*$")
    _LEVELS: ClassVar[dict[str, int]] = {
        "part": 1,
        "chapter": 1,
        "section": 2,
        "subsection": 3,
        "subsubsection": 4,
        "paragraph": 5,
    }

    def match(self, lines: list[str], i: int) -> Match | None:
        line = lines[i]
        section = self._SECTION.match(line)
        if section:
            level = self._LEVELS[section.group(1)]
            return Match(Block(ElementKind.HEADING, section.group(2).strip(), i + 1, level), 1)
        title = self._TITLE.match(line)
        if title:
            return Match(Block(None, title.group(1).strip(), i + 1), 1)
        if line.lstrip().startswith("%"):
            return Match(None, 1)
        return None


class LogDialect(Dialect):
    """Logs have no headings; an underline-looking line is just a line."""

    def match(self, lines: list[str], i: int) -> Match | None:
        return None


def dialect_for(suffix: str) -> Dialect:
    """A fresh dialect (they remember heading styles) for a file extension."""
    dialects: dict[str, type[Dialect]] = {
        ".rst": RestDialect,
        ".adoc": AsciiDocDialect,
        ".asciidoc": AsciiDocDialect,
        ".org": OrgDialect,
        ".tex": TexDialect,
        ".log": LogDialect,
        ".xml": LogDialect,
    }
    return dialects.get(suffix, Dialect)()


def _indented_body(lines: list[str], i: int) -> tuple[str, int]:
    """The indented block starting at ``i`` (blank lines inside allowed), dedented, and the
    number of lines it spans. Leading blank lines are dropped from the text."""
    end = i
    last_content = i
    while end < len(lines) and (not lines[end].strip() or lines[end][:1] in (" ", "\t")):
        if lines[end].strip():
            last_content = end + 1
        end += 1
    body = lines[i:last_content]
    indents = [len(x) - len(x.lstrip()) for x in body if x.strip()]
    cut = min(indents, default=0)
    return "\n".join(x[cut:] for x in body), last_content - i


def _first_content_line(lines: list[str], i: int) -> int:
    """Index of the first line at or after ``i`` with text, skipping directive options."""
    while i < len(lines) and (not lines[i].strip() or lines[i].strip().startswith(":")):
        i += 1
    return i


def _drop_options(body: str) -> str:
    """A directive body without its leading ``:option: value`` lines."""
    rows = body.split("\n")
    while rows and (not rows[0].strip() or rows[0].lstrip().startswith(":")):
        rows.pop(0)
    return "\n".join(rows)


def _fenced(
    lines: list[str],
    i: int,
    end_marker: str,
    language: str | None,
    lead: int,
    *,
    case_insensitive: bool = False,
) -> Match:
    """A delimited block from the fence at ``i`` to the closing ``end_marker`` line."""
    end = i + 1
    while end < len(lines):
        candidate = lines[end].strip()
        if (candidate.lower() if case_insensitive else candidate) == end_marker:
            break
        end += 1
    body = "\n".join(lines[i + 1 : end])
    block = Block(ElementKind.CODE, body, i + 2, language=language) if body.strip() else None
    return Match(block, lead + (end - i) + 1)


def _literal_blocks(blocks: list[Block], lines: list[str]) -> list[Block]:
    """reST: indented paragraphs after one that ends in ``::`` form a literal (code) block."""
    out: list[Block] = []
    literal = False
    for block in blocks:
        source = lines[block.line - 1] if 0 < block.line <= len(lines) else ""
        indented = block.kind is ElementKind.PARAGRAPH and source[:1] in (" ", "\t")
        if literal and indented:
            code = _dedent(block.text)
            if out and out[-1].kind is ElementKind.CODE and out[-1].language == "literal":
                previous = out.pop()
                code = previous.text + "\n\n" + code
                block = previous
            out.append(Block(ElementKind.CODE, code, block.line, language="literal"))
            continue
        out.append(block)
        literal = block.kind is not ElementKind.CODE and block.text.rstrip().endswith("::")
    return [
        Block(b.kind, b.text, b.line, b.level, None) if b.language == "literal" else b for b in out
    ]


def _dedent(text: str) -> str:
    rows = text.split("\n")
    cut = min((len(r) - len(r.lstrip()) for r in rows if r.strip()), default=0)
    return "\n".join(r[cut:] for r in rows)
