"""Source code: one block per top-level definition, with its language, symbol and lines.

Python is cut with :mod:`ast` (exact spans, decorators and comments above included). Other
languages are cut where a definition starts at column 0, recognised by a small pattern per
family: cheap, no grammar to install, and right for the common layouts. A file with no
recognisable definitions is still read: as blocks separated by blank-line runs.
"""

from __future__ import annotations

import ast
import re
from pathlib import PurePath

from lorebase.extract.base import DocumentBuilder, Extractor
from lorebase.extract.encoding import decode
from lorebase.formats import CODE_LANGUAGES
from lorebase.types import DocumentKind, ElementKind, Extracted

# A definition line, at column 0 (or after export/pub/visibility words); group "name".
_QUALIFIERS = (
    r"(?:(?:export|default|pub(?:\([\w:]+\))?|public|private|protected|internal|static|"
    r"abstract|final|sealed|async|unsafe|extern|inline|virtual|override|data|open|"
    r"partial|readonly|const)\s+)*"
)
_DEFINITIONS: dict[str, re.Pattern[str]] = {
    "family_c": re.compile(
        r"^" + _QUALIFIERS + r"(?:(?:class|struct|enum|union|interface|record|namespace|"
        r"trait|object|impl(?:<[^>]*>)?|type|module)\s+(?P<name>[A-Za-z_][\w]*)"
        r"|(?:[A-Za-z_][\w:<>,\s\*&\[\]]*?[\s\*&])(?P<fname>[A-Za-z_][\w]*)\s*\([^;]*$)"
    ),
    "go": re.compile(r"^(?:func\s+(?:\([^)]*\)\s*)?(?P<name>\w+)|type\s+(?P<tname>\w+)\s)"),
    "rust": re.compile(
        r"^" + _QUALIFIERS + r"(?:fn|struct|enum|trait|impl(?:<[^>]*>)?|mod|type|union)\s+"
        r"(?:[\w<>:, ]+\s+for\s+)?(?P<name>[A-Za-z_]\w*)"
    ),
    "script": re.compile(
        r"^" + _QUALIFIERS + r"(?:function\*?\s+(?P<name>[\w$]+)|class\s+(?P<cname>[\w$]+)|"
        r"(?:const|let|var)\s+(?P<vname>[\w$]+)\s*=\s*(?:async\s+)?(?:function|\(|[\w$]+\s*=>)|"
        r"def\s+(?:self\.)?(?P<dname>[\w?!]+)|module\s+(?P<mname>\w+)|"
        r"(?:interface|type|enum)\s+(?P<iname>\w+))"
    ),
    "shell": re.compile(r"^(?:function\s+)?(?P<name>[\w-]+)\s*\(\)\s*\{?"),
    "sql": re.compile(
        r"^(?:create|alter)\s+(?:or\s+replace\s+)?(?:temp(?:orary)?\s+)?"
        r"(?:table|view|index|function|procedure|trigger|type|materialized\s+view)\s+"
        r"(?:if\s+not\s+exists\s+)?(?P<name>[\w.\"]+)",
        re.I,
    ),
}
_FAMILY = {
    "c": "family_c",
    "cpp": "family_c",
    "java": "family_c",
    "csharp": "family_c",
    "kotlin": "family_c",
    "scala": "family_c",
    "swift": "family_c",
    "dart": "family_c",
    "php": "script",
    "go": "go",
    "rust": "rust",
    "javascript": "script",
    "typescript": "script",
    "ruby": "script",
    "lua": "script",
    "elixir": "script",
    "shell": "shell",
    "sql": "sql",
}
_CONTROL_WORDS = frozenset({"if", "for", "while", "switch", "return", "else", "catch", "do"})
_COMMENT_LEAD = ("#", "//", "/*", "*", "--", ";", "'''", '"""', "@")


class CodeExtractor(Extractor):
    kind = DocumentKind.CODE

    def extract(self, data: bytes, path: PurePath) -> Extracted:
        language = CODE_LANGUAGES.get(path.suffix.lower(), "text")
        decoded = decode(data)
        lines = decoded.text.split("\n")
        spans = _python_spans(decoded.text) if language == "python" else None
        if spans is None:
            spans = _pattern_spans(lines, language)
        builder = self.builder(data)
        _add_spans(builder, lines, spans, language)
        return builder.build(encoding=decoded.encoding, language=language)


Span = tuple[int, int, str | None]  # first line index, end line index (exclusive), symbol


def _python_spans(source: str) -> list[Span] | None:
    """Top-level definitions of a Python module, with decorators and leading comments."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    lines = source.split("\n")
    spans: list[Span] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
            spans.append((_leading_comments(lines, first), node.end_lineno or first + 1, node.name))
    return spans


def _pattern_spans(lines: list[str], language: str) -> list[Span]:
    pattern = _DEFINITIONS.get(_FAMILY.get(language, ""))
    if pattern is None:
        return []
    starts: list[tuple[int, str]] = []
    for index, line in enumerate(lines):
        if not line or line[0] in " \t}{)" or line.startswith(_COMMENT_LEAD):
            continue
        match = pattern.match(line)
        if match is None:
            continue
        name = next((value for value in match.groupdict().values() if value), None)
        if name and name.lower() not in _CONTROL_WORDS:
            starts.append((_leading_comments(lines, index), name.strip('"')))
    spans: list[Span] = []
    for position, (first, name) in enumerate(starts):
        end = starts[position + 1][0] if position + 1 < len(starts) else len(lines)
        if spans and first < spans[-1][1]:
            continue
        spans.append((first, end, name))
    return spans


def _leading_comments(lines: list[str], first: int) -> int:
    """Move a definition's first line up over the comment lines directly above it."""
    while first > 0 and lines[first - 1].strip().startswith(_COMMENT_LEAD):
        first -= 1
    return first


def _add_spans(
    builder: DocumentBuilder, lines: list[str], spans: list[Span], language: str
) -> None:
    """Definitions become symbol blocks; the code between them, plain blocks."""
    cursor = 0
    for first, end, symbol in spans:
        if first > cursor:
            _add_loose(builder, lines, cursor, first, language)
        _add_block(builder, lines, first, end, language, symbol)
        cursor = max(cursor, end)
    _add_loose(builder, lines, cursor, len(lines), language)


def _add_loose(
    builder: DocumentBuilder, lines: list[str], first: int, end: int, language: str
) -> None:
    """Code outside definitions, split at runs of two or more blank lines."""
    start = first
    blank_run = 0
    for index in range(first, end):
        blank_run = blank_run + 1 if not lines[index].strip() else 0
        if blank_run == 2:
            _add_block(builder, lines, start, index, language, None)
            start = index + 1
    _add_block(builder, lines, start, end, language, None)


def _add_block(
    builder: DocumentBuilder,
    lines: list[str],
    first: int,
    end: int,
    language: str,
    symbol: str | None,
) -> None:
    while first < end and not lines[first].strip():
        first += 1
    if first >= end:
        return
    text = "\n".join(lines[first:end])
    builder.add(ElementKind.CODE, text, line=first + 1, language=language, symbol=symbol)
