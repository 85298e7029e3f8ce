"""Every real file in ../shared/data/formats — spreadsheets, slides, mail, e-books, office
text, notebooks, images — is indexed, and a phrase really in it (its ``SOURCES.txt`` line says
which) finds it by keyword, cited with the location its format gives (a row, a slide, a cell, a
page, or its heading trail)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from lorebase.app import Lorebase, open_lorebase
from lorebase.embed.fake import FakeEmbedder
from lorebase.formats import citation_locator
from lorebase.search.query import Hit
from lorebase.settings import Settings
from lorebase.store.states import DocumentState

pytestmark = pytest.mark.corpus

_PHRASE = re.compile(r'text: [^"]*"([^"]+)"')


def phrases(root: Path) -> dict[str, str]:
    """File (relative) -> the phrase its SOURCES.txt line quotes first after ``text:``."""
    found = {}
    for line in (root / "SOURCES.txt").read_text(encoding="utf-8").splitlines():
        if line.startswith("#") or "\t" not in line:
            continue
        name, *_, note = line.split("\t")
        match = _PHRASE.search(note)
        if match:
            found[name] = match.group(1)
    return found


@pytest.fixture(scope="module")
def indexed(shared_formats: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lorebase]:
    data = tmp_path_factory.mktemp("formats-data")
    with open_lorebase(settings=Settings(data_dir=data), embedder=FakeEmbedder()) as lb:
        lb.add([shared_formats], kb="formats")
        yield lb


def _has_location(hit: Hit) -> bool:
    where = hit.provenance
    locator = citation_locator(where.kind)
    if locator in ("page", "slide", "cell"):
        return where.page is not None
    if locator in ("line", "row"):
        return where.line is not None
    return True  # trail: the path (and the headings it has) are the citation


def test_every_real_file_is_read(indexed: Lorebase, shared_formats: Path) -> None:
    documents = indexed.documents("formats")
    failed = {d.path: d.reason for d in documents if d.state is DocumentState.FAILED}
    tops = {d.path for d in documents if d.container is None}
    files = {
        f"{shared_formats.name}/{p.relative_to(shared_formats).as_posix()}"
        for p in shared_formats.rglob("*")
        if p.is_file()
    }
    assert tops == files
    # Attachments that cannot be read are results of their own (a truncated PDF inside a
    # forwarded mail, a PGP signature); every file itself is read.
    assert {path: reason for path, reason in failed.items() if path in tops} == {}


@pytest.mark.parametrize("index", range(40))
def test_a_phrase_of_each_real_file_finds_it_where_it_stands(
    indexed: Lorebase, shared_formats: Path, index: int
) -> None:
    cases = sorted(phrases(shared_formats).items())
    if index >= len(cases):
        pytest.skip(f"SOURCES.txt quotes {len(cases)} phrases")
    name, phrase = cases[index]
    label = f"{shared_formats.name}/{name}"
    hits = indexed.search(phrase, kb="formats", mode="keyword", top_k=10).hits
    mine = [hit for hit in hits if hit.provenance.path.split(" › ")[0] == label]
    assert mine, f"{name}: {phrase!r} found only in {[h.provenance.path for h in hits]}"
    assert all(_has_location(hit) for hit in mine), [h.provenance.citation() for h in mine]
