"""A document whose whole text is its title or its headings is still found, in every format.

Such records (a note that is only ``# Meeting with the auditors``, a DOCX with one Title
paragraph, a PDF page whose only line is its bookmark) used to be indexed with no chunk, so
neither search arm could ever return them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from lorebase.app import Lorebase, open_lorebase
from lorebase.embed.fake import FakeEmbedder
from lorebase.settings import Settings
from unit.fixtures_office import docx_bytes, text_pdf


def _docx(style: int) -> Callable[[str], bytes]:
    def build(words: str) -> bytes:
        import docx

        document = docx.Document()
        document.add_heading(words, style)  # 0 is the Title style, 1 is Heading 1
        return docx_bytes(document)

    return build


# name -> (file name, a builder of its bytes from the words, the expected line, the page)
DOCUMENTS: dict[str, tuple[str, Callable[[str], bytes], int | None, int | None]] = {
    "markdown": ("note.md", lambda w: f"# {w}\n".encode(), 1, None),
    "markdown-nested": ("nested.md", lambda w: f"# Minutes\n\n## {w}\n".encode(), 1, None),
    "text": ("record.txt", lambda w: f"{w}\n".encode(), 1, None),
    "text-adorned": ("adorned.txt", lambda w: f"{w}\n{'=' * len(w)}\n".encode(), 1, None),
    "rst": ("title.rst", lambda w: f"{'=' * len(w)}\n{w}\n{'=' * len(w)}\n".encode(), 2, None),
    "html-heading": ("page.html", lambda w: f"<body><h1>{w}</h1></body>".encode(), None, None),
    "html-title": ("stub.html", lambda w: f"<title>{w}</title><body></body>".encode(), None, None),
    "pdf": ("bookmark.pdf", lambda w: text_pdf([[]], sections=[(0, 0, w)]), None, 1),
    "docx-title": ("title.docx", _docx(0), None, None),
    "docx-heading": ("heading.docx", _docx(1), None, None),
    "code": ("stub.py", lambda w: f"# {w}\n".encode(), 1, None),
}
WORDS = {
    name: f"Meeting with the {word}"
    for name, word in zip(
        DOCUMENTS,
        (
            "auditors",
            "assessors",
            "regulators",
            "inspectors",
            "surveyors",
            "examiners",
            "appraisers",
            "controllers",
            "treasurers",
            "comptrollers",
            "actuaries",
        ),
        strict=True,
    )
}
ORDINARY = "# Budget\n\nThe budget for the next year grows by four percent.\n"


@pytest.fixture(scope="module")
def lb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lorebase]:
    folder = tmp_path_factory.mktemp("records")
    for name, (file_name, build, _, _) in DOCUMENTS.items():
        (folder / file_name).write_bytes(build(WORDS[name]))
    (folder / "budget.md").write_text(ORDINARY)
    data = tmp_path_factory.mktemp("data")
    with open_lorebase(settings=Settings(data_dir=data), embedder=FakeEmbedder()) as instance:
        instance.add([folder], kb="k")
        yield instance


@pytest.mark.parametrize("name", list(DOCUMENTS))
@pytest.mark.parametrize("mode", ["keyword", "dense"])
def test_a_title_only_document_is_found(lb: Lorebase, name: str, mode: str) -> None:
    file_name, _, line, page = DOCUMENTS[name]
    words = WORDS[name]
    hits = lb.search(words.split()[-1], kb="k", mode=mode).hits
    assert hits, f"{file_name} was not found by {mode} search"
    top = hits[0]
    assert top.provenance.path.endswith(file_name)
    assert words in top.text
    assert top.provenance.line == line
    assert top.provenance.page == page
    assert top.provenance.content_kind.value == ("code" if name == "code" else "prose")
