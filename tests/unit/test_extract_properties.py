"""What documents say about themselves becomes metadata a search filters on: front matter
(YAML, TOML, MultiMarkdown), Word's core properties, a PDF's information dictionary; nested
and huge values are flattened and bounded."""

from __future__ import annotations

import datetime as dt
from pathlib import PurePath

import docx

from lorebase.extract.base import MAX_METADATA_CHARS, MAX_METADATA_KEYS
from lorebase.extract.markdown import MarkdownExtractor
from lorebase.extract.properties import MAX_VISITED, flattened, properties
from lorebase.extract.registry import extract_bytes
from lorebase.fields import field_rows
from lorebase.settings import ExtractSettings
from lorebase.types import Extracted
from unit.fixtures_office import docx_bytes, text_pdf


def _markdown(source: str) -> Extracted:
    return MarkdownExtractor(ExtractSettings()).extract(source.encode(), PurePath("a.md"))


def test_yaml_front_matter_becomes_metadata() -> None:
    found = _markdown(
        "---\n"
        "title: Leave policy\n"
        "tags: [policy, hr]\n"
        "authors: [Ann Lee, Bob]\n"
        "date: 2025-03-04\n"
        "draft: false\n"
        "review:\n  owner: Cy\n  due: 2025-04-01\n"
        "related: [{a: 1}]\n"
        "---\n\n# Leave\n\nTake leave.\n"
    )
    assert found.title == "Leave policy"
    assert found.metadata == {
        "title": "Leave policy",
        "tags": ("policy", "hr"),
        "author": ("Ann Lee", "Bob"),
        "date": "2025-03-04",
        "draft": "false",
        "review.owner": "Cy",
        "review.due": "2025-04-01",
    }
    assert "policy" not in found.text  # front matter is not body text


def test_toml_and_multimarkdown_headers_become_metadata() -> None:
    toml = _markdown('+++\ntitle = "Notes"\ntags = ["a"]\ndate = 2025-01-02\n+++\n\nBody.\n')
    assert toml.metadata == {"title": "Notes", "tags": "a", "date": "2025-01-02"}
    mmd = _markdown("Title: Minutes\nAuthor: Ann\nKeywords: budget, travel\n\nBody text.\n")
    assert mmd.metadata == {"title": "Minutes", "author": "Ann", "tags": ("budget", "travel")}
    assert mmd.title == "Minutes"


def test_broken_front_matter_costs_the_metadata_not_the_document() -> None:
    found = _markdown("---\ntitle: [unclosed\n---\n\nBody text.\n")
    assert found.metadata == {} and "Body text." in found.text


def test_huge_and_self_repeating_front_matter_is_bounded() -> None:
    keys = "".join(f"k{i}: {'x' * 5000}\n" for i in range(200))
    found = _markdown(f"---\n{keys}---\n\nBody.\n")
    assert len(found.metadata) <= MAX_METADATA_KEYS
    assert all(len(str(v)) <= MAX_METADATA_CHARS for v in found.metadata.values())
    # YAML aliases repeat a list within a list within ...: looked at a bounded number of times.
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{n}: &{n} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
        for p, n in zip("abcdefgh", "bcdefghi", strict=True)
    )
    found = _markdown(f"---\n{bomb}---\n\nBody.\n")
    assert found.metadata.get("a") == "x"


def test_flattening_keeps_plain_values_only_and_counts_what_it_visits() -> None:
    nested = {"a": {"b": {"c": {"d": {"e": "too deep"}}}}, "when": dt.date(2025, 1, 2)}
    assert flattened(nested) == {"when": "2025-01-02"}
    assert flattened(["not", "a", "mapping"]) == {}
    many = {f"k{i}": list(range(64)) for i in range(64)}
    visited = sum(len(v) if isinstance(v, tuple) else 1 for v in flattened(many).values())
    assert visited <= MAX_VISITED


def test_word_core_properties_become_metadata() -> None:
    document = docx.Document()
    document.add_paragraph("The travel policy.")
    core = document.core_properties
    core.author = "Ann Lee"
    core.title = "Travel"
    core.keywords = "policy; travel"
    core.created = dt.datetime(2025, 3, 4, 10, 0, 0)
    found = extract_bytes(docx_bytes(document), PurePath("a.docx"), ExtractSettings())
    assert found.title == "Travel"
    assert found.metadata["author"] == "Ann Lee"
    assert found.metadata["tags"] == ("policy", "travel")
    assert str(found.metadata["created"]).startswith("2025-03-04T10:00:00")


def test_pdf_information_becomes_metadata() -> None:
    data = text_pdf([["A page of text."]], title="Budget", author="Ann Lee", keywords="budget")
    found = extract_bytes(data, PurePath("a.pdf"), ExtractSettings())
    assert found.metadata["author"] == "Ann Lee"
    assert found.metadata["tags"] == "budget"
    rows = field_rows(found.metadata)
    created = [value for name, value, _ in rows if name == "created"]
    assert len(created) == 1 and created[0].endswith("Z")  # D:… read as a date


def test_properties_leave_out_empty_values() -> None:
    assert properties([("author", ""), ("subject", None), ("category", "Finance")]) == {
        "tags": "Finance"
    }
