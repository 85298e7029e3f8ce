"""The one table of formats (lorebase.formats) reaches every place that needs a
format: the extractor of each extension, the kind of each path, the readers a worker loads,
the locator an evaluated citation needs, what an unsupported upload is told, and the docs. A
new format is one module and one line of the table; these tests say what else is missing."""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path, PurePath
from typing import Any

import pytest

from lorebase import formats
from lorebase.errors import ExtractionFailed, Unsupported
from lorebase.eval.metrics import citation_complete
from lorebase.extract.base import Extractor
from lorebase.extract.registry import extract_bytes, extractor_for
from lorebase.formats import (
    FORMATS,
    Format,
    citation_locator,
    document_kind,
    extractor_modules,
    format_for,
    format_of_kind,
    is_supported,
    supported_labels,
)
from lorebase.service.uploads import Uploads
from lorebase.settings import ExtractSettings
from lorebase.types import DocumentKind, FailureReason

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = ExtractSettings()
EVERY_EXTENSION = [(fmt, ext) for fmt in FORMATS for ext in fmt.extensions]


def _ids(value: object) -> str:
    return value.kind if isinstance(value, Format) else str(value)


def _repeats(values: list[str]) -> list[str]:
    return sorted(value for value, count in Counter(values).items() if count > 1)


def test_the_table_has_no_duplicates() -> None:
    assert _repeats([fmt.kind for fmt in FORMATS]) == []
    assert _repeats([fmt.label for fmt in FORMATS]) == []
    assert _repeats([ext for _, ext in EVERY_EXTENSION]) == []  # one format per extension
    assert _repeats([fmt.extractor for fmt in FORMATS]) == []


@pytest.mark.parametrize(("fmt", "ext"), EVERY_EXTENSION, ids=_ids)
def test_every_extension_reaches_its_format_and_its_extractor(fmt: Format, ext: str) -> None:
    assert ext.startswith(".") and ext == ext.lower() and len(ext) > 1
    for name in (f"notes{ext}", f"NOTES{ext.upper()}", f"a/b/c{ext}"):
        path = PurePath(name)
        assert format_for(path) is fmt
        assert document_kind(path) == fmt.kind
        assert is_supported(path)
        assert isinstance(extractor_for(path, SETTINGS), fmt.load())


@pytest.mark.parametrize("fmt", FORMATS, ids=_ids)
def test_every_format_names_an_extractor_of_its_own_kind(fmt: Format) -> None:
    extractor = fmt.load()
    assert issubclass(extractor, Extractor)
    assert extractor.kind == fmt.kind, "the class's kind and its table line disagree"
    assert fmt.module.startswith("lorebase.extract.")
    assert fmt.module in extractor_modules()  # each extraction worker loads it up front
    assert format_of_kind(fmt.kind) is fmt


@pytest.mark.parametrize("fmt", FORMATS, ids=_ids)
def test_every_format_says_where_its_citations_point(fmt: Format) -> None:
    assert citation_locator(fmt.kind) == fmt.locator
    assert not citation_complete(fmt.kind, "folder/file")  # its locator is required
    where: dict[str, dict[str, Any]] = {
        "page": {"page": 1},
        "slide": {"page": 1},
        "cell": {"page": 1},
        "line": {"line": 1},
        "row": {"line": 1},
        "trail": {"trail": ("Intro",)},
    }
    assert citation_complete(fmt.kind, "folder/file", **where[fmt.locator])


def test_every_built_in_kind_has_a_format() -> None:
    assert {kind.value for kind in DocumentKind} <= {fmt.kind for fmt in FORMATS}


def test_a_path_of_no_format_is_refused_before_any_extractor() -> None:
    for name in ("photo.heic", "archive.tar.gz", "Makefile", ".md"):
        path = PurePath(name)
        assert format_for(path) is None and document_kind(path) is None
        assert not is_supported(path)
        with pytest.raises(ExtractionFailed) as failed:
            extract_bytes(b"data", path, SETTINGS)
        assert failed.value.reason is FailureReason.UNSUPPORTED_FORMAT


def test_an_unsupported_upload_is_told_every_format() -> None:
    with pytest.raises(Unsupported) as refused:
        Uploads.upload_kind("photo.heic")
    message = str(refused.value)
    assert supported_labels() in message
    assert all(fmt.label in message for fmt in FORMATS)


def _format_rows() -> dict[str, str]:
    """docs/formats.md's table: the extensions cell of each kind's row."""
    text = (ROOT / "docs" / "formats.md").read_text(encoding="utf-8")
    return dict(re.findall(r"^\| `([a-z0-9]+)` \| ([^|]*) \|", text, flags=re.MULTILINE))


@pytest.mark.parametrize("fmt", FORMATS, ids=_ids)
def test_the_formats_page_lists_every_format_and_no_other_extension(fmt: Format) -> None:
    rows = _format_rows()
    assert fmt.kind in rows, f"add a row for `{fmt.kind}` to docs/formats.md"
    listed = re.findall(r"\.[a-z0-9]+", rows[fmt.kind])
    assert [ext for ext in listed if ext not in fmt.extensions] == []
    if "and more" not in rows[fmt.kind]:
        assert sorted(listed) == sorted(fmt.extensions)


def test_the_readme_names_every_format() -> None:
    opening = (ROOT / "README.md").read_text(encoding="utf-8").split("\n\n")[1]
    assert [fmt.label for fmt in FORMATS if fmt.label not in opening] == []


@pytest.fixture
def one_more_format(monkeypatch: pytest.MonkeyPatch) -> Iterator[Format]:
    """The table with one more line: what a new format adds (here read as text)."""
    todo = Format("todo", "todo lists", (".todo",), "text:TextExtractor", "line")
    monkeypatch.setattr(formats, "FORMATS", (*FORMATS, todo))
    formats._by_extension.cache_clear()
    formats._by_kind.cache_clear()
    yield todo
    formats._by_extension.cache_clear()
    formats._by_kind.cache_clear()


def test_one_line_in_the_table_reaches_every_derived_place(one_more_format: Format) -> None:
    path = PurePath("week.todo")
    assert format_for(path) is one_more_format and document_kind(path) == "todo"
    assert extractor_for(path, SETTINGS).__class__ is one_more_format.load()
    assert citation_locator("todo") == "line"
    assert supported_labels().endswith("or todo lists")
    assert "lorebase.extract.text" in extractor_modules()


def test_the_table_imports_no_extractor() -> None:
    code = (
        "import sys, lorebase.formats as f; f.document_kind(f.PurePath('a.pdf')); "
        "print(' '.join(m for m in sys.modules if m.startswith('lorebase.extract.')))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert [module for module in loaded if module in extractor_modules()] == []
