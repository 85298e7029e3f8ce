"""Outlook mail (.msg): the shape of an .eml (headers, body, metadata, attachments as parts),
embedded messages as nested parts within the depth bound, and the ways a file fails. The
fixtures are CFB files written in the test with extract-msg's own OLE writer."""

from __future__ import annotations

import io
import logging
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePath

import compressed_rtf
import pytest
from extract_msg.ole_writer import OleWriter

from lorebase.errors import ExtractionFailed
from lorebase.extract.registry import extract_bytes
from lorebase.settings import ExtractSettings
from lorebase.types import ElementKind, Extracted, FailureReason, Part

SETTINGS = ExtractSettings()
MSG = PurePath("mail.msg")
_FILETIME_EPOCH = datetime(1601, 1, 1, tzinfo=UTC)
_PT_LONG, _PT_SYSTIME = 0x0003, 0x0040
_BY_VALUE, _EMBEDDED = 1, 5


def extract(data: bytes, settings: ExtractSettings = SETTINGS) -> Extracted:
    extracted = extract_bytes(data, MSG, settings)
    for element in extracted.elements:
        assert extracted.text[element.start : element.end] == element.text
    return extracted


def failure(data: bytes, settings: ExtractSettings = SETTINGS) -> ExtractionFailed:
    with pytest.raises(ExtractionFailed) as caught:
        extract(data, settings)
    return caught.value


def part(extracted: Extracted, name: str) -> Part:
    found = [p for p in extracted.parts if p.name == name]
    assert found, f"no part {name!r} among {[p.name for p in extracted.parts]}"
    return found[0]


# --- writing .msg files -----------------------------------------------------------------------


@dataclass
class Attached:
    """A file attached by value (``data``), or an embedded message (``message``)."""

    name: str = ""
    data: bytes = b""
    mime: str = ""
    content_id: str = ""
    message: Msg | None = None


@dataclass
class Msg:
    subject: str = "Quarterly plan"
    body: str | None = "The plan is attached."
    html: bytes | None = None
    rtf: bytes | None = None
    headers: str = ""
    sent: datetime | None = None
    kind: str = "IPM.Note"
    attachments: Sequence[Attached] = field(default_factory=list)


def _strings(writer: OleWriter, where: list[str], values: dict[int, str]) -> None:
    for tag, value in values.items():
        if value:
            writer.addEntry([*where, f"__substg1.0_{tag:04X}001F"], value.encode("utf-16-le"))


def _fixed(tag: int, kind: int, value: bytes) -> bytes:
    return struct.pack("<HHI", kind, tag, 6) + value.ljust(8, b"\0")


def _write(writer: OleWriter, msg: Msg, where: list[str]) -> None:
    top = not where
    header = bytearray(32 if top else 24)
    struct.pack_into("<IIII", header, 8, 0, len(msg.attachments), 0, len(msg.attachments))
    fixed = b""
    if msg.sent is not None:
        ticks = int((msg.sent - _FILETIME_EPOCH).total_seconds() * 10_000_000)
        fixed += _fixed(0x0039, _PT_SYSTIME, struct.pack("<Q", ticks))
    writer.addEntry([*where, "__properties_version1.0"], bytes(header) + fixed)
    _strings(writer, where, {0x001A: msg.kind, 0x0037: msg.subject, 0x007D: msg.headers})
    if msg.body is not None:
        _strings(writer, where, {0x1000: msg.body})
    if msg.html is not None:
        writer.addEntry([*where, "__substg1.0_10130102"], msg.html)
    if msg.rtf is not None:
        writer.addEntry([*where, "__substg1.0_10090102"], compressed_rtf.compress(msg.rtf))
    if top:
        writer.addEntry(["__nameid_version1.0"], storage=True)
        for stream in ("00020102", "00030102", "00040102"):
            writer.addEntry(["__nameid_version1.0", f"__substg1.0_{stream}"], b"")
    for index, attached in enumerate(msg.attachments):
        folder = [*where, f"__attach_version1.0_#{index:08X}"]
        writer.addEntry(folder, storage=True)
        method = _EMBEDDED if attached.message is not None else _BY_VALUE
        properties = bytes(8) + _fixed(0x3705, _PT_LONG, struct.pack("<I", method))
        writer.addEntry([*folder, "__properties_version1.0"], properties)
        values = {0x3707: attached.name, 0x370E: attached.mime, 0x3712: attached.content_id}
        _strings(writer, folder, values)
        if attached.message is not None:
            inner = [*folder, "__substg1.0_3701000D"]
            writer.addEntry(inner, storage=True)
            _write(writer, attached.message, inner)
        else:
            writer.addEntry([*folder, "__substg1.0_37010102"], attached.data)


def msg_bytes(msg: Msg) -> bytes:
    writer = OleWriter()
    _write(writer, msg, [])
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def chain(depth: int) -> Msg:
    """A message carrying a message ... ``depth`` levels down, the last with a note."""
    inner = Msg(subject=f"level {depth}", body=f"level {depth}")
    inner.attachments = [Attached("deep.txt", b"the deepest note")]
    for level in range(depth - 1, -1, -1):
        inner = Msg(
            subject=f"level {level}", body=f"level {level}", attachments=[Attached(message=inner)]
        )
    return inner


HEADERS = (
    "From: Alice Example <alice@example.com>\r\nTo: Bob <bob@example.com>, carol@example.com\r\n"
    "Cc: Dan <dan@example.com>\r\nMessage-ID: <m1@example.com>\r\nSubject: Quarterly plan\r\n\r\n"
)


# --- the real files ---------------------------------------------------------------------------

REAL_PHRASES = {
    "msg/msg-extractor-strangeDate.msg": "Provide example of this file type",
    "msg/outlook-message-gpg-signed.msg": "This is yet another test",
    "msg/outlook-message-charset-embedded.msg": "This email contains an email",
}


@pytest.mark.parametrize("name", sorted(REAL_PHRASES))
def test_each_real_message_says_its_phrase(shared_formats: Path, name: str) -> None:
    extracted = extract((shared_formats / name).read_bytes())
    assert extracted.kind == "msg"
    assert REAL_PHRASES[name] in extracted.text


def test_the_signed_message_carries_its_signature_as_an_unread_part(shared_formats: Path) -> None:
    extracted = extract((shared_formats / "msg/outlook-message-gpg-signed.msg").read_bytes())
    assert extracted.title == "Test for MSGConvert"
    signature = part(extracted, "signature.asc")
    assert signature.reason is FailureReason.UNSUPPORTED_FORMAT and signature.size > 0
    assert extracted.text.endswith("Attachments: signature.asc")
    assert extracted.metadata["from"] == "Matijs van Zuijlen <Matijs.van.Zuijlen@xs4all.nl>"
    assert extracted.metadata["date"] == "2007-02-26T23:12:10+00:00"
    assert extracted.metadata["message_id"] == "<20070226231209.GD1841@matijs.net>"


def test_a_pst_export_subject_loses_its_trailing_nul(shared_formats: Path) -> None:
    data = (shared_formats / "msg/outlook-message-charset-embedded.msg").read_bytes()
    extracted = extract(data)
    assert extracted.title == "PST Export - Embedded Email Test"
    assert extracted.metadata["subject"] == "PST Export - Embedded Email Test"
    assert "This email contains an email… Email-ception" in extracted.text  # U+0085 → "…"
    assert extracted.parts == ()  # the body speaks of an embedded mail; the file holds none


def test_an_unsent_message_has_no_sender_and_no_date(shared_formats: Path) -> None:
    extracted = extract((shared_formats / "msg/msg-extractor-strangeDate.msg").read_bytes())
    assert "from" not in extracted.metadata and "date" not in extracted.metadata
    assert extracted.metadata["to"] == (
        "time2talk@online-convert.com <time2talk@online-convert.com>",
    )
    assert "<html" not in extracted.text  # the plain body, not the HTML one


# --- written messages -------------------------------------------------------------------------


def test_headers_body_and_attachments_as_an_eml_has_them() -> None:
    sent = datetime(2024, 3, 1, 12, 0, tzinfo=UTC)
    msg = Msg(
        headers=HEADERS,
        sent=sent,
        attachments=[
            Attached("plan.csv", b"quarter,target\nQ1,100\n", "text/csv"),
            Attached("tool.exe", b"MZ\x90\x00", "application/octet-stream"),
        ],
    )
    extracted = extract(msg_bytes(msg))
    assert [(e.kind, e.text) for e in extracted.elements[:3]] == [
        (ElementKind.HEADING, "Quarterly plan"),
        (
            ElementKind.PARAGRAPH,
            "From: Alice Example <alice@example.com>\n"
            "To: Bob <bob@example.com>; carol@example.com\n"
            "Cc: Dan <dan@example.com>\n"
            "Date: Fri, 01 Mar 2024 12:00:00 +0000",
        ),
        (ElementKind.PARAGRAPH, "The plan is attached."),
    ]
    assert dict(extracted.metadata) == {
        "from": "Alice Example <alice@example.com>",
        "to": ("Bob <bob@example.com>", "carol@example.com"),
        "cc": ("Dan <dan@example.com>",),
        "date": "2024-03-01T12:00:00+00:00",
        "subject": "Quarterly plan",
        "message_id": "<m1@example.com>",
    }
    plan = part(extracted, "plan.csv").extracted
    assert plan is not None and "Q1 | 100" in plan.text
    assert part(extracted, "tool.exe").reason is FailureReason.UNSUPPORTED_FORMAT
    assert extracted.text.endswith("Attachments: plan.csv, tool.exe")


def test_an_html_body_is_read_as_html_and_its_inline_image_is_no_attachment() -> None:
    html = b"<html><body><h1>Agenda</h1><p>Item one.</p><img src='cid:logo1'></body></html>"
    msg = Msg(
        body=None,
        html=html,
        attachments=[
            Attached("logo.png", b"\x89PNG", "image/png", content_id="logo1"),
            Attached("notes.txt", b"meeting notes", "text/plain"),
        ],
    )
    extracted = extract(msg_bytes(msg))
    headings = [(e.text, e.level) for e in extracted.elements if e.kind is ElementKind.HEADING]
    assert headings == [("Quarterly plan", 1), ("Agenda", 2)]
    assert "Item one." in extracted.text
    assert [p.name for p in extracted.parts] == ["notes.txt"]


def test_an_rtf_only_body_is_read_as_text() -> None:
    rtf = rb"{\rtf1\ansi{\fonttbl\f0 Arial;}\f0 The RTF-only body.\par Second line.\par}"
    extracted = extract(msg_bytes(Msg(body=None, rtf=rtf)))
    assert "The RTF-only body." in extracted.text and "Second line." in extracted.text
    assert "fonttbl" not in extracted.text and "Arial" not in extracted.text


def test_an_embedded_message_is_a_nested_msg_with_its_own_parts() -> None:
    inner = Msg(subject="Forwarded figures", body="The figures you asked for.")
    inner.attachments = [Attached("figures.txt", b"revenue 42")]
    extracted = extract(msg_bytes(Msg(attachments=[Attached(message=inner)])))
    forwarded = part(extracted, "Forwarded figures.msg")
    assert forwarded.extracted is not None and forwarded.extracted.kind == "msg"
    assert "The figures you asked for." in forwarded.extracted.text
    figures = part(forwarded.extracted, "figures.txt").extracted
    assert figures is not None and figures.text == "revenue 42"


def test_nesting_deeper_than_max_part_depth_is_not_read() -> None:
    extracted = extract(msg_bytes(chain(5)), ExtractSettings(max_part_depth=2))
    level1 = part(extracted, "level 1.msg").extracted
    assert level1 is not None
    level2 = part(level1, "level 2.msg").extracted
    assert level2 is not None and "level 2" in level2.text
    too_deep = part(level2, "level 3.msg")
    assert too_deep.reason is FailureReason.TOO_LARGE and too_deep.extracted is None


def test_a_message_whose_attachment_contains_itself_is_corrupt() -> None:
    """A directory entry of the embedded message pointing back at the root's children: the
    attachment would hold the message that holds it, for ever."""
    data = bytearray(msg_bytes(Msg(attachments=[Attached(message=Msg(subject="inner"))])))
    root = data.find("Root Entry".encode("utf-16-le"))
    embedded = data.find("__substg1.0_3701000D".encode("utf-16-le"))
    child = 76  # offset of a directory entry's child id
    data[embedded + child : embedded + child + 4] = data[root + child : root + child + 4]
    assert failure(bytes(data)).reason is FailureReason.CORRUPT


def test_many_attachments_are_bounded_with_a_warning() -> None:
    msg = Msg(attachments=[Attached(f"n{i}.txt", f"note {i}".encode()) for i in range(12)])
    extracted = extract(msg_bytes(msg), ExtractSettings(max_parts=5))
    assert [p.name for p in extracted.parts] == [f"n{i}.txt" for i in range(5)]
    assert extracted.warnings == ("parts_left_out:7",)


def test_a_truncated_message_is_corrupt(shared_formats: Path) -> None:
    data = (shared_formats / "msg/outlook-message-gpg-signed.msg").read_bytes()
    for size in (len(data) // 2, 4096, 600):
        assert failure(data[:size]).reason is FailureReason.CORRUPT


def test_a_file_that_is_not_cfb_is_corrupt() -> None:
    error = failure(b"From: someone\r\nSubject: a mail saved as .msg\r\n\r\nbody")
    assert error.reason is FailureReason.CORRUPT


def test_an_outlook_item_of_an_unknown_kind_is_unsupported() -> None:
    error = failure(msg_bytes(Msg(kind="IPM.Lorebase.Unheard.Of")))
    assert error.reason is FailureReason.UNSUPPORTED_FORMAT


def test_a_message_with_nothing_in_it_is_empty() -> None:
    assert failure(msg_bytes(Msg(subject="", body=None))).reason is FailureReason.EMPTY


def test_extract_msg_logs_nothing_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.chdir(tmp_path)
    caplog.set_level(logging.DEBUG)
    secret = "Secret-Project-Name"
    damaged = Msg(subject=secret, attachments=[Attached(message=Msg(subject=secret, kind=""))])
    extract(msg_bytes(damaged))
    extract(msg_bytes(chain(2)))
    assert not any(secret in record.getMessage() for record in caplog.records)
    assert not [r for r in caplog.records if r.name.split(".")[0] in ("extract_msg", "olefile")]
    assert list(tmp_path.iterdir()) == []
