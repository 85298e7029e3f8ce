"""Documents inside documents, end to end: a mail's attachments become documents of their own
(``mail.eml › notes.md``), read by their own format, cited by their own locator, kept up to date
with their mail and gone with it; a file lorebase does not read is a result too, listed with its
reason — over the embedded SQLite store and over PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from email.message import EmailMessage
from pathlib import Path

import pytest

from lorebase.app import Lorebase, open_lorebase
from lorebase.embed.fake import FakeEmbedder
from lorebase.settings import Settings
from lorebase.store.states import DocumentState
from lorebase.vault.keys import DataKey

DATA_KEY = DataKey.generate().to_base64()


@pytest.fixture(params=["sqlite", "postgres"])
def lb(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Lorebase]:
    if request.param == "postgres":
        url = request.getfixturevalue("postgres_url")
        settings = Settings(data_dir=tmp_path / "data", store_url=url, data_key=DATA_KEY)
    else:
        settings = Settings(data_dir=tmp_path / "data")
    with open_lorebase(settings=settings, embedder=FakeEmbedder()) as opened:
        yield opened


def mail(*attachments: tuple[str, bytes, str]) -> bytes:
    message = EmailMessage()
    message["From"] = "Ann Example <ann@example.org>"
    message["To"] = "team@example.org"
    message["Subject"] = "Quarterly figures"
    message["Date"] = "Mon, 07 Dec 2026 09:00:00 +0000"
    message.set_content("The figures are attached. The kayak budget grew.\n")
    for name, data, mime in attachments:
        maintype, subtype = mime.split("/")
        message.add_attachment(data, maintype=maintype, subtype=subtype, filename=name)
    return message.as_bytes()


NOTES = b"# Budget\n\nThe lighthouse restoration needs 40 volunteers.\n"
TABLE = b"Item,Owner,Quantity\n" + b"".join(b"widget %d,Ann,%d\n" % (n, n) for n in range(2, 400))


def paths(lb: Lorebase, kb: str) -> dict[str, tuple[str, str | None]]:
    return {d.path: (d.state.value, d.reason) for d in lb.documents(kb)}


def test_a_mails_attachments_are_documents_of_their_own(lb: Lorebase, tmp_path: Path) -> None:
    folder = tmp_path / "inbox"
    folder.mkdir()
    (folder / "figures.eml").write_bytes(
        mail(
            ("notes.md", NOTES, "text/markdown"),
            ("stock.csv", TABLE, "text/csv"),
            ("broken.pdf", b"%PDF-1.7 not really", "application/pdf"),
            ("tool.exe", b"MZ\x90\x00", "application/octet-stream"),
        )
    )
    lb.add([folder], kb="mail")
    assert paths(lb, "mail") == {
        "inbox/figures.eml": ("indexed", None),
        "inbox/figures.eml › notes.md": ("indexed", None),
        "inbox/figures.eml › stock.csv": ("indexed", None),
        "inbox/figures.eml › broken.pdf": ("failed", "corrupt"),
        "inbox/figures.eml › tool.exe": ("failed", "unsupported_format"),
    }
    (document,) = [d for d in lb.documents("mail") if d.path == "inbox/figures.eml"]
    assert document.metadata["from"] == "Ann Example <ann@example.org>"
    assert document.metadata["subject"] == "Quarterly figures"

    hit = lb.search("lighthouse volunteers", kb="mail", mode="keyword").hits[0]
    assert hit.provenance.citation() == "inbox/figures.eml › notes.md › Budget (line 3)"
    found = lb.search("widget 307", kb="mail", mode="keyword").hits[0]
    assert found.provenance.path == "inbox/figures.eml › stock.csv"
    assert found.text.startswith("Item | Owner | Quantity\n")  # the header row, in every piece
    first, last = found.provenance.line, found.provenance.line_end
    assert first is not None and last is not None and first <= 307 < last + 1
    assert f"(rows {first}–{last})" in found.provenance.citation()
    sender = lb.search("ann@example.org kayak", kb="mail", mode="keyword").hits[0]
    assert sender.provenance.path == "inbox/figures.eml"  # its headers are searchable

    # The mail changes: the attachment it no longer holds goes, the others stay as they are.
    (folder / "figures.eml").write_bytes(mail(("notes.md", NOTES, "text/markdown")))
    lb.sync("mail")
    assert set(paths(lb, "mail")) == {"inbox/figures.eml", "inbox/figures.eml › notes.md"}
    # The mail is removed: its attachments go with it.
    (folder / "figures.eml").unlink()
    lb.sync("mail")
    assert paths(lb, "mail") == {}


def test_deleting_a_mail_deletes_its_attachments(lb: Lorebase, tmp_path: Path) -> None:
    (tmp_path / "one.eml").write_bytes(mail(("notes.md", NOTES, "text/markdown")))
    lb.add([tmp_path / "one.eml"], kb="mail")
    (document,) = [d for d in lb.documents("mail") if d.container is None]
    lb.delete_document(lb.kb("mail"), document)
    assert paths(lb, "mail") == {}


def test_a_file_lorebase_does_not_read_is_listed_with_its_reason(
    lb: Lorebase, tmp_path: Path
) -> None:
    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "notes.md").write_text("# Notes\n\nThe kayak is blue.\n")
    (folder / "photo.heic").write_bytes(b"\x00\x00\x00\x18ftypheic")
    report = lb.add([folder], kb="mixed")
    assert ("mixed/photo.heic", "unsupported_format") in report.failed
    assert paths(lb, "mixed")["mixed/photo.heic"] == ("failed", "unsupported_format")
    failed = [d.path for d in lb.documents("mixed") if d.state is DocumentState.FAILED]
    assert failed == ["mixed/photo.heic"]
    report = lb.sync("mixed")["mixed"]  # not read again while it is unchanged
    assert report.failed == [] and report.unchanged == 2
