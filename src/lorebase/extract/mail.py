"""Mail: one message (``.eml``) and mailboxes (``.mbox``), read with the standard library's
``email`` package. It parses with ``policy.compat32``, which keeps headers as raw strings:
headers are decoded here (:mod:`lorebase.extract.mail_text`) from what was written, and
``policy.default``'s header objects cost eleven times as much on a mail of 1,000 parts
(0.46 s against 0.04 s), which bounds how many parts fit in a worker's CPU time.

A message reads as a mail client shows it: its subject as the heading, a paragraph of its
headers (``From:``, ``To:``, ``Cc:``, ``Date:``, searchable by keyword), then its body. From a
``multipart/alternative`` the plain text is taken unless only HTML exists; HTML is read as the
HTML extractor reads a page (headings, paragraphs, tables). Text is decoded with its declared
charset (ISO-8859-1 read as windows-1252, as browsers do), else by
:func:`lorebase.extract.encoding.decode`; a Content-Transfer-Encoding the package does not know
("8bits", "7-bit") leaves the bytes as they are. ``format=flowed`` lines are joined; quoted
replies stay, as paragraphs of their own. Headers are kept as written (a Mailman archive's
"andy at example.com" stays so), RFC 2047 encoded words decoded; metadata: from, to, cc
(tuples of addresses), date (ISO 8601), subject, message_id, in_reply_to.

Attachments (a part with ``Content-Disposition: attachment``, any non-text part, a text part
other than plain or HTML, an attached ``message/rfc822`` named by its subject + ``.eml``) become
documents of their own (:mod:`lorebase.extract.parts`), read by their own format; inline images
an HTML body references by Content-ID are not attachments. The body ends with a paragraph
"Attachments: a.pdf, b.xlsx". A mail with no body, no subject and no readable attachment is
``empty``.

A mailbox is split at its ``From`` lines (mboxo/mboxrd; ``>From`` unescaped); its own text is
an index, one list item per message ("date · from · subject"), and each message is a part of
its own named by its subject (else ``message N``).
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, field
from email import policy
from email.generator import BytesGenerator
from email.message import Message
from email.parser import BytesParser
from email.utils import collapse_rfc2231_value
from pathlib import PurePath
from urllib.parse import unquote

from lorebase.errors import ExtractionFailed
from lorebase.extract.base import DocumentBuilder, Extractor
from lorebase.extract.html import add_page, read_page
from lorebase.extract.mail_text import (
    Envelope,
    add_plain_text,
    decode_body,
    decode_words,
    finish,
    restore_bytes,
    unflow,
)
from lorebase.extract.parts import PartCollector
from lorebase.types import ElementKind, Extracted, MetadataValue

MAIL_TYPES = frozenset({"message/rfc822", "message/global"})
BODY_TYPES = frozenset({"text/plain", "text/html"})
_MAX_MIME_DEPTH = 64  # deeper multipart nesting is a trap, not a mail
_PARSER = BytesParser(policy=policy.compat32)
_WRITE_POLICY = policy.compat32.clone(max_line_length=0)  # headers as they came, unfolded
_NAMING_HEADERS = frozenset({"content-disposition", "content-type"})
_CID = re.compile(rb"cid:([^\"'\s)>]+)", re.I)
# An mbox "From " line carries the delivery time in asctime form ("Sat Nov 14 21:29:28 2015");
# a body line that merely begins with "From " does not.
_FROM_LINE = re.compile(rb"^From [^\n]*", re.M)
_ASCTIME = re.compile(rb"[A-Z][a-z]{2} +[A-Z][a-z]{2} +\d{1,2} +\d{1,2}:\d{2}(?::\d{2})? .*\d{4}")
_ESCAPED_FROM = re.compile(rb"^>(>*From )", re.M)


class EmlExtractor(Extractor):
    kind = "eml"

    def extract(self, data: bytes, path: PurePath) -> Extracted:
        return read_message(self, data, _PARSER.parsebytes(data))


class MboxExtractor(Extractor):
    kind = "mbox"

    def extract(self, data: bytes, path: PurePath) -> Extracted:
        builder = self.builder(data)
        parts = PartCollector(self.settings)
        messages = split_mbox(data)
        for number, raw in enumerate(messages, 1):
            envelope = Envelope.of(_PARSER.parsebytes(raw, headersonly=True))
            builder.add(ElementKind.LIST_ITEM, envelope.index_line() or f"message {number}")
            name = envelope.subject or f"message {number}"
            parts.add(name, raw, mime="message/rfc822", extension=".eml")
        metadata: dict[str, MetadataValue] = {"messages": str(len(messages))}
        return builder.build(warnings=parts.warnings(), metadata=metadata, parts=parts.parts())


# --- one message ------------------------------------------------------------------------------


def read_message(extractor: Extractor, data: bytes, message: Message) -> Extracted:
    """The document of one parsed message (its attachments as parts)."""
    builder = extractor.builder(data)
    envelope = Envelope.of(message)
    envelope.add_to(builder)
    found = _Found()
    _gather(message, found, 0)
    before = len(builder.elements)
    unreadable = 0
    for body in found.bodies:
        if not _add_body(builder, body):
            unreadable += 1
    has_body = len(builder.elements) > before
    parts = PartCollector(extractor.settings)
    _add_attachments(parts, found.attachments, _referenced_cids(message))
    warnings = parts.warnings() + ((f"body_unreadable:{unreadable}",) if unreadable else ())
    return finish(builder, envelope, parts, has_body=has_body, warnings=warnings)


# --- the MIME tree ----------------------------------------------------------------------------


@dataclass(slots=True)
class _Found:
    """A message's leaves, sorted: what is read as its body, what becomes a part."""

    bodies: list[Message] = field(default_factory=list)
    attachments: list[Message] = field(default_factory=list)


def _gather(part: Message, found: _Found, depth: int) -> None:
    """Sort the tree's leaves into body parts and attachments, in reading order."""
    if depth > _MAX_MIME_DEPTH:
        return
    kind = part.get_content_type()
    if kind in MAIL_TYPES:
        found.attachments.append(part)
        return
    if part.get_content_maintype() == "message":
        return  # delivery reports, partial and external bodies: nobody's text
    if part.is_multipart():
        children = [child for child in part.get_payload() if isinstance(child, Message)]
        if kind == "multipart/alternative" and children:
            children = [_preferred(children)]
        elif kind == "multipart/related" and children:
            root = _related_root(part, children)
            children = [root, *(child for child in children if child is not root)]
        for child in children:
            _gather(child, found, depth + 1)
    elif _is_attachment(part):
        found.attachments.append(part)
    else:
        found.bodies.append(part)


def _is_attachment(part: Message) -> bool:
    if part.get_content_disposition() == "attachment":
        return True
    return part.get_content_type() not in BODY_TYPES


def _preferred(children: list[Message]) -> Message:
    """The alternative to read: one holding plain text, else HTML, else the last (richest)."""
    for subtype in ("plain", "html"):
        for child in children:
            if _holds_body(child, f"text/{subtype}", 0):
                return child
    return children[-1]


def _holds_body(part: Message, kind: str, depth: int) -> bool:
    if depth > _MAX_MIME_DEPTH or part.get_content_maintype() == "message":
        return False
    if part.is_multipart():
        return any(
            _holds_body(child, kind, depth + 1)
            for child in part.get_payload()
            if isinstance(child, Message)
        )
    if part.get_content_type() != kind or _is_attachment(part):
        return False
    payload = part.get_payload(decode=True)
    return isinstance(payload, bytes) and bool(payload.strip())


def _related_root(part: Message, children: list[Message]) -> Message:
    start = _strip_cid(_param(part, "start"))
    if start:
        for child in children:
            if _content_id(child) == start:
                return child
    return children[0]


def _add_body(builder: DocumentBuilder, part: Message) -> bool:
    """Add one body part's elements; False when its bytes are not text."""
    payload = part.get_payload(decode=True)
    if not isinstance(payload, bytes) or not payload.strip():
        return True
    html = part.get_content_type() == "text/html"
    try:
        text = decode_body(payload, part.get_content_charset(), markup=html)
    except ExtractionFailed:
        return False
    if html:
        add_page(builder, read_page(text), heading_offset=1)
        return True
    if _param(part, "format").lower() == "flowed":
        text = unflow(text, delsp=_param(part, "delsp").lower() == "yes")
    add_plain_text(builder, text)
    return True


def _add_attachments(parts: PartCollector, attachments: list[Message], cids: set[str]) -> None:
    for part in attachments:
        kind = part.get_content_type()
        if kind not in MAIL_TYPES and _content_id(part) in cids:
            continue  # an image the HTML body shows inline
        if parts.full:
            parts.leave_out()
            continue
        if kind in MAIL_TYPES:
            name, data = _attached_mail(part)
            parts.add(name, data, mime="message/rfc822", extension=".eml")
        else:
            payload = part.get_payload(decode=True)
            data = payload if isinstance(payload, bytes) else b""
            parts.add(_filename(part), data, mime=kind)


def _attached_mail(part: Message) -> tuple[str | None, bytes]:
    """An attached message's name (its subject + ``.eml``) and bytes."""
    payload = part.get_payload()
    if isinstance(payload, list) and payload and isinstance(payload[0], Message):
        inner = payload[0]
        subject = Envelope.of(inner).subject
        buffer = io.BytesIO()
        BytesGenerator(buffer, mangle_from_=False, policy=_WRITE_POLICY).flatten(inner)
        return (f"{subject}.eml" if subject else _filename(part)), buffer.getvalue()
    decoded = part.get_payload(decode=True)  # a message sent base64-encoded
    return _filename(part), decoded if isinstance(decoded, bytes) else b""


def _filename(part: Message) -> str | None:
    """The part's file name: RFC 2231 and RFC 2047 spellings decoded, and raw 8-bit bytes
    read as text first (compat32 would hand them back as replacement characters)."""
    headers = Message()
    for name, value in part.raw_items():
        if name.lower() in _NAMING_HEADERS:
            headers[name] = restore_bytes(value)
    try:
        filename = headers.get_filename()
    except (ValueError, LookupError, TypeError, IndexError):
        filename = None
    return decode_words(filename) if filename else None


def _param(part: Message, name: str) -> str:
    """A Content-Type parameter as text (RFC 2231 values collapsed), ``""`` when absent."""
    value = part.get_param(name)
    return collapse_rfc2231_value(value) if value else ""


def _content_id(part: Message) -> str:
    value = part.get("content-id")
    return _strip_cid(str(value)) if value is not None else ""


def _strip_cid(value: str) -> str:
    return value.strip().strip("<>").strip().lower()


def _referenced_cids(message: Message) -> set[str]:
    """The Content-IDs the message's HTML parts show inline (``src="cid:..."``)."""
    found: set[str] = set()
    for part in message.walk():
        if part.get_content_type() == "text/html":
            payload = part.get_payload(decode=True)
            if isinstance(payload, bytes):
                found.update(
                    _strip_cid(unquote(m.group(1).decode("ascii", "replace")))
                    for m in _CID.finditer(payload)
                )
    return found


# --- mailboxes --------------------------------------------------------------------------------


def split_mbox(data: bytes) -> list[bytes]:
    """The messages of an mbox, each without its ``From`` line, ``>From`` unescaped. Text
    before the first ``From`` line is a message too (a mail saved under ``.mbox``). Pure."""
    starts = [
        match.start()
        for match in _FROM_LINE.finditer(data)
        if match.start() == 0 or _ASCTIME.search(match.group(0))
    ]
    if not starts or (starts[0] > 0 and data[: starts[0]].strip()):
        starts.insert(0, -1)  # a first message with no From line
    messages: list[bytes] = []
    for start, end in zip(starts, [*starts[1:], len(data)], strict=True):
        body_start = 0 if start < 0 else data.find(b"\n", start) + 1 or end
        raw = _ESCAPED_FROM.sub(rb"\1", data[body_start:end])
        if raw.strip():
            messages.append(raw)
    return messages
