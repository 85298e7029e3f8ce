"""`GET /v1/documents/{id}/pages/{n}`: a PDF page as PNG with a search hit's passage marked,
for a folder's file and for an upload; pages out of range, other kinds, chunks of other
documents and files changed since indexing are refused; the same page twice comes from the
cache."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image

from loopback import client as api_client
from lorebase.api.app import create_app
from lorebase.app import Lorebase
from small_base import small_base, write_files
from unit.fixtures_office import text_pdf

PAGES = [
    ["The travel budget for the whole year is set by the board in March."],
    ["Expenses are paid within thirty days of the claim.", "Receipts are kept for ten years."],
]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = write_files(tmp_path / "docs", {"notes.md": "# Notes\n\nExpenses and receipts.\n"})
    (root / "policy.pdf").write_bytes(text_pdf(PAGES))
    return root


@pytest.fixture
def lb(folder: Path, tmp_path: Path) -> Iterator[Lorebase]:
    with small_base(tmp_path / "data", folder, "handbook") as instance:
        yield instance


def test_a_hits_passage_is_marked_on_its_page(lb: Lorebase, folder: Path) -> None:
    client = api_client(create_app(lb, manage=False))
    hits = client.post("/v1/search", json={"query": "expenses paid thirty days", "top_k": 5})
    hit = next(h for h in hits.json()["hits"] if h["path"] == "docs/policy.pdf")
    # A small document is one passage over both pages: each page marks its part of it.
    assert (hit["page"], hit["page_end"]) == (1, 2)
    first = client.get(f"/v1/documents/{hit['document_id']}/pages/1?chunk={hit['chunk_id']}")
    assert first.status_code == 200 and int(first.headers["x-marked-boxes"]) >= 1
    url = f"/v1/documents/{hit['document_id']}/pages/2"
    marked = client.get(url, params={"chunk": hit["chunk_id"], "width": 500})
    assert marked.status_code == 200, marked.text
    assert marked.headers["content-type"] == "image/png"
    assert marked.headers["x-page-count"] == "2" and int(marked.headers["x-marked-boxes"]) >= 1
    assert Image.open(io.BytesIO(marked.content)).size[0] == 500
    again = client.get(url, params={"chunk": hit["chunk_id"], "width": 500})
    assert again.content == marked.content
    plain = client.get(url, params={"width": 500})
    assert plain.headers["x-marked-boxes"] == "0" and plain.content != marked.content

    assert client.get(f"/v1/documents/{hit['document_id']}/pages/3").status_code == 404
    assert client.get(f"/v1/documents/{hit['document_id']}/pages/0").status_code == 422
    assert client.get(url, params={"width": 10}).status_code == 422
    notes = client.post("/v1/search", json={"query": "notes receipts", "mode": "keyword"})
    other = next(h for h in notes.json()["hits"] if h["path"] == "docs/notes.md")
    assert client.get(url, params={"chunk": other["chunk_id"]}).status_code == 404
    not_pdf = client.get(f"/v1/documents/{other['document_id']}/pages/1")
    assert not_pdf.status_code == 404 and "PDF" in not_pdf.text
    assert client.get("/v1/documents/0123456789abcdef0123456789abcdef/pages/1").status_code == 404

    (folder / "policy.pdf").write_bytes(text_pdf([["Another text now."]]))
    changed = client.get(f"/v1/documents/{hit['document_id']}/pages/1")
    assert changed.status_code == 409 and "sync" in changed.text
    (folder / "policy.pdf").unlink()
    assert client.get(f"/v1/documents/{hit['document_id']}/pages/1").status_code == 404


def test_an_uploaded_pdfs_page_comes_from_its_sealed_original(lb: Lorebase) -> None:
    """Read from the original as soon as it is stored (indexed or not yet)."""
    client = api_client(create_app(lb, manage=False))
    kb_id = lb.kb("handbook").id
    sent = client.post(
        f"/v1/knowledge-bases/{kb_id}/documents",
        files={"files": ("upload.pdf", text_pdf(PAGES), "application/pdf")},
    )
    assert sent.status_code == 202, sent.text
    document_id = sent.json()["documents"][0]["id"]
    page = client.get(f"/v1/documents/{document_id}/pages/1")
    assert page.status_code == 200 and page.headers["x-page-count"] == "2"


@pytest.mark.slow  # real OCR: seconds a picture
def test_a_passage_read_by_ocr_is_marked_on_its_picture(lb: Lorebase) -> None:
    from PIL import ImageDraw, ImageFont

    picture = Image.new("RGB", (1100, 400), "white")
    draw = ImageDraw.Draw(picture)
    font = ImageFont.load_default(size=40)
    draw.text((40, 60), "Harbour notice for the spring", font=font, fill="black")
    draw.text((40, 160), "Boats leave the harbour at dawn.", font=font, fill="black")
    data = io.BytesIO()
    picture.save(data, "PNG")
    client = api_client(create_app(lb, manage=False))
    kb_id = lb.kb("handbook").id
    sent = client.post(
        f"/v1/knowledge-bases/{kb_id}/documents",
        files={"files": ("notice.png", data.getvalue(), "image/png")},
    )
    assert sent.status_code == 202, sent.text
    document_id = sent.json()["documents"][0]["id"]
    lb._run_job(kb_id, document_id)  # the queue's job, run here
    hits = client.post("/v1/search", json={"query": "boats leave the harbour", "mode": "keyword"})
    hit = next(h for h in hits.json()["hits"] if h["document_id"] == document_id)
    shown = client.get(f"/v1/documents/{document_id}/pages/1?chunk={hit['chunk_id']}&width=550")
    assert shown.status_code == 200, shown.text
    assert int(shown.headers["x-marked-boxes"]) >= 1
    assert Image.open(io.BytesIO(shown.content)).size == (550, 200)
