"""Provenance is one value: what the chunker says about a passage reaches the store, the search
hit, the API's JSON and the agent's citation unchanged, and one formatter cites it everywhere."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console

from lorebase.agent.citations import Citation, terminal_citation
from lorebase.agent.tools import ToolBox
from lorebase.api.convert import hit_out
from lorebase.api.schemas import HitOut
from lorebase.app import Lorebase, open_lorebase
from lorebase.chunk.headers import HeaderChunker
from lorebase.cli import render
from lorebase.embed.fake import FakeEmbedder
from lorebase.settings import ChunkSettings, Settings
from lorebase.store.base import NewDocument
from lorebase.types import (
    ELEMENT_SEPARATOR,
    Chunk,
    ContentKind,
    DocumentKind,
    Element,
    ElementKind,
    Extracted,
    Position,
    Provenance,
)

CITATION = "guides/reset.pdf › Accounts › Reset (p. 3–4)"
API_ONLY = {
    *("chunk_id", "text", "snippet", "highlights", "citation", "scores", "before", "after"),
    *("passages", "fields"),
}
"""HitOut fields that are the hit's own (and its document's fields), not its provenance's."""
NOT_IN_API = {"uploaded"}  # the API shows an upload by its own name instead


def extracted() -> Extracted:
    """Two headings on page 3, then a function that runs from page 3 onto page 4."""
    parts = [
        (ElementKind.HEADING, "Accounts", 1, 1, 3, None, None),
        (ElementKind.HEADING, "Reset", 2, 3, 3, None, None),
        (ElementKind.CODE, "def reset_password(user):", 0, 5, 3, "python", "reset_password"),
        (ElementKind.CODE, "    return mailer.send(user)", 0, 7, 4, "python", "reset_password"),
    ]
    elements, offset = [], 0
    for kind, text, level, line, page, language, symbol in parts:
        elements.append(
            Element(
                kind,
                text,
                offset,
                offset + len(text),
                level=level,
                line=line,
                page=page,
                language=language,
                symbol=symbol,
            )
        )
        offset += len(text) + len(ELEMENT_SEPARATOR)
    text = ELEMENT_SEPARATOR.join(element.text for element in elements)
    return Extracted(DocumentKind.PDF, "Reset guide", tuple(elements), text, "digest")


@pytest.fixture
def lb(tmp_path: Path) -> Iterator[Lorebase]:
    instance = open_lorebase(settings=Settings(data_dir=tmp_path / "data"), embedder=FakeEmbedder())
    yield instance
    instance.close()


def index(lb: Lorebase) -> tuple[Chunk, Provenance]:
    """The chunker's one chunk, stored below the pipeline; the provenance a hit should carry."""
    document = extracted()
    settings = ChunkSettings()
    [chunk] = HeaderChunker().chunk(document, settings)
    kb = lb.create_kb("manuals")
    new = NewDocument(
        path="guides/reset.pdf",
        kind="pdf",
        size=len(document.text),
        content_hash=document.content_hash,
        title=document.title,
        text=document.text,
    )
    record = lb.store.replace_document(kb.id, new, [chunk], None, None, settings.key)
    position = {f.name: getattr(chunk.position, f.name) for f in dataclasses.fields(Position)}
    expected = Provenance(
        **position,
        knowledge_base="manuals",
        knowledge_base_id=kb.id,
        document_id=record.id,
        path="guides/reset.pdf",
        title="Reset guide",
        kind="pdf",
        uploaded=False,
    )
    return chunk, expected


def test_provenance_round_trips_from_the_chunker_to_the_api_and_the_agent(lb: Lorebase) -> None:
    chunk, expected = index(lb)
    assert chunk.position == Position(
        trail=("Accounts", "Reset"),
        start=len("Accounts") + len("Reset") + 2 * len(ELEMENT_SEPARATOR),
        end=len(extracted().text),
        content_kind=ContentKind.CODE,
        page=3,
        page_end=4,
        line=5,
        line_end=7,
        language="python",
        symbol="reset_password",
    )
    # the search hit, and the stored chunk it was hydrated from
    [hit] = lb.search("reset_password", kb="manuals", mode="keyword").hits
    assert hit.provenance == expected
    [stored] = lb.store.get_chunks([expected.knowledge_base_id], [hit.chunk_id])
    assert stored.provenance == expected
    # the API's JSON: flat, every provenance field but ``uploaded``, as JSON values
    body = hit_out(hit, {}).model_dump(mode="json")
    for field in dataclasses.fields(Provenance):
        if field.name not in NOT_IN_API:
            value = getattr(expected, field.name)
            assert body[field.name] == (list(value) if isinstance(value, tuple) else value)
    assert body["citation"] == CITATION
    # the agent's citation
    toolbox = ToolBox(lb)
    result = toolbox.call("search_knowledge_base", {"query": "reset_password"})
    [source] = result.sources
    assert (source.chunk_id, source.provenance) == (hit.chunk_id, expected)
    where = {key: result.structured["hits"][0][key] for key in ("page", "page_end", "line")}
    assert where == {"page": 3, "page_end": 4, "line": 5}


def test_one_formatter_cites_for_the_cli_the_api_and_the_agent(lb: Lorebase) -> None:
    _, expected = index(lb)
    response = lb.search("reset_password", kb="manuals", mode="keyword")
    [hit] = response.hits
    assert hit.provenance.citation() == CITATION
    assert render.search_json(lb, response)["hits"][0]["citation"] == CITATION
    console = Console(record=True, width=200)
    render.print_search(console, response)
    assert CITATION in console.export_text()
    assert hit_out(hit, {}).citation == CITATION
    [source] = ToolBox(lb).call("search_knowledge_base", {"query": "reset_password"}).sources
    assert source.label == terminal_citation(expected) == CITATION


def test_what_the_agent_and_the_cli_print_stays_safe_for_terminals() -> None:
    hostile = Provenance(
        knowledge_base="k",
        knowledge_base_id=1,
        document_id="d",
        path="a\x1b[31m.md",
        title=None,
        kind="md",
        trail=("Line\nbreak", "\u202eevil"),
        line=2,
    )
    label = Citation(number=1, chunk_id="c", provenance=hostile).label
    assert label == terminal_citation(hostile)  # what `lorebase search` prints
    assert label == "a [31m.md › Line break › evil (line 2)"  # no escape, newline or bidi


def test_every_provenance_field_is_in_the_api_hit_and_the_cli_json() -> None:
    """Adding a field to Provenance fails here until HitOut shows it too."""
    provenance = {f.name for f in dataclasses.fields(Provenance)}
    assert set(HitOut.model_fields) == (provenance - NOT_IN_API) | API_ONLY


def test_the_cli_json_hit_has_the_api_hit_fields(lb: Lorebase) -> None:
    index(lb)
    response = lb.search("reset_password", kb="manuals", mode="keyword")
    [data] = render.search_json(lb, response)["hits"]
    assert set(data) == set(HitOut.model_fields)  # one vocabulary: the API's
