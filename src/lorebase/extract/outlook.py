"""Outlook mail (``.msg``, an OLE/CFB file), read with extract-msg, in the shape of a ``.eml``
(:mod:`lorebase.extract.mail`): the subject as the heading (a trailing NUL, which PST exports
leave, stripped), a paragraph of its headers, the body (plain text, else HTML read as the HTML
extractor reads a page, else the RTF body's text), metadata (from, to, cc, date, subject,
message_id, in_reply_to), and attachments as documents of their own
(:mod:`lorebase.extract.parts`): an embedded Outlook item is a nested ``.msg`` named by its
subject, a signed message's parts (``signature.asc``) are attachments like any other, inline
images the HTML body shows by Content-ID are not.

A file that does not start with the CFB signature, or that extract-msg cannot open (truncated,
a directory that loops), is ``corrupt``. extract-msg writes files only when asked to save, which
this never does; its loggers (and those of the OLE and RTF libraries it uses) are silenced,
since their messages quote a file's names and property values. An Outlook item of a kind
extract-msg does not read is ``unsupported_format``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from datetime import datetime
from email.utils import format_datetime
from pathlib import PurePath

import extract_msg
from extract_msg.enums import AttachmentType, ErrorBehavior
from extract_msg.exceptions import UnrecognizedMSGTypeError, UnsupportedMSGTypeError
from extract_msg.msg_classes import MessageSignedBase, MSGFile

from lorebase.errors import ExtractionFailed
from lorebase.extract.base import Extractor
from lorebase.extract.encoding import decode
from lorebase.extract.html import add_page, read_page
from lorebase.extract.mail_text import Envelope, add_plain_text, decode_words, finish, one_line
from lorebase.extract.parts import PartCollector
from lorebase.extract.rtf import add_rtf
from lorebase.types import Extracted, FailureReason

CFB_SIGNATURE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_QUIET_LOGGERS = ("extract_msg", "olefile", "RTFDE", "compressed_rtf")
_SILENT = logging.CRITICAL + 1  # above every level: nothing is logged
# Broken and unsupported attachments become failed parts instead of failing the message; a
# malformed RTF body is left unread. OLE defects stay fatal: a directory that loops back on
# itself is a corrupt file, not a message to walk for ever.
_ERRORS = ErrorBehavior.ATTACH_SUPPRESS_ALL | ErrorBehavior.RTFDE
_CID = re.compile(rb"cid:([^\"'\s)>]+)", re.I)
# Outlook stores some text as Latin-1 that was written in windows-1252: C1 controls such as
# U+0085 are its "…", "’", "–".
_C1 = {code: bytes([code]).decode("cp1252", errors="ignore") or None for code in range(0x80, 0xA0)}
_MSG_MIME = "application/vnd.ms-outlook"
_PLAIN_STREAM = "__substg1.0_1000"  # PR_BODY, in whichever string type it was stored
_HTML_STREAM = "__substg1.0_10130102"  # PR_HTML
_NAMES = ("longFilename", "shortFilename", "displayName")  # an attachment's, best first


class MsgExtractor(Extractor):
    kind = "msg"

    def extract(self, data: bytes, path: PurePath) -> Extracted:
        if not data.startswith(CFB_SIGNATURE):
            raise ExtractionFailed(FailureReason.CORRUPT, "not an Outlook message (no CFB header)")
        _quiet()
        try:
            message = extract_msg.openMsg(data, delayAttachments=True, errorBehavior=_ERRORS)
        except (UnsupportedMSGTypeError, UnrecognizedMSGTypeError):
            raise ExtractionFailed(
                FailureReason.UNSUPPORTED_FORMAT, "an Outlook item of a kind lorebase does not read"
            ) from None
        try:
            return self._read(data, message)
        finally:
            message.close()

    def _read(self, data: bytes, message: MSGFile) -> Extracted:
        builder = self.builder(data)
        envelope = envelope_of(message)
        envelope.add_to(builder)
        before = len(builder.elements)
        plain, html = _bodies(message)
        if plain.strip("\x00 \r\n\t"):
            add_plain_text(builder, plain.translate(_C1))
        elif html.strip(b"\x00 \r\n\t"):
            add_page(builder, read_page(_html_text(html)), heading_offset=1)
        elif (rtf := _rtf_body(message)) is not None:
            add_rtf(builder, rtf)
        has_body = len(builder.elements) > before
        parts = PartCollector(self.settings)
        _add_attachments(parts, message, _cids(html))
        return finish(builder, envelope, parts, has_body=has_body, warnings=parts.warnings())


def _quiet() -> None:
    """Silence extract-msg and the libraries it uses: their errors quote names, properties
    and raw values of the file (``logger.exception(raw)``)."""
    for name in _QUIET_LOGGERS:
        logging.getLogger(name).setLevel(_SILENT)


def _bodies(message: MSGFile) -> tuple[str, bytes]:
    """The plain and HTML bodies as stored (a signed message's from its signed part). Read
    from their streams, not through extract-msg's ``body``/``htmlBody``, which rebuild a
    missing one from the RTF body with a parser that takes seconds on a 30 KB message."""
    plain = _call(message.getStringStream, _PLAIN_STREAM)
    html = _call(message.getStream, _HTML_STREAM)
    if isinstance(message, MessageSignedBase):
        plain = plain or _prop(message, "signedBody")
        html = html or _prop(message, "signedHtmlBody")
    return (
        plain if isinstance(plain, str) else "",
        html if isinstance(html, bytes) else b"",
    )


def _html_text(html: bytes) -> str:
    """The HTML body as text; nothing when its bytes are not text."""
    try:
        return decode(html, markup=True).text
    except ExtractionFailed:
        return ""


def _rtf_body(message: MSGFile) -> bytes | None:
    """The RTF body (decompressed), the last resort; None when there is none."""
    rtf = _prop(message, "rtfBody")
    return rtf if isinstance(rtf, bytes) and rtf.strip() else None


def _call(read: Callable[[str], object], stream: str) -> object:
    try:
        return read(stream)
    except Exception:  # a damaged stream
        return None


def _prop(item: object, name: str) -> object:
    """A property of a message or attachment, or None when reading it fails (a damaged
    stream: extract-msg raises many kinds of error on those)."""
    try:
        return getattr(item, name, None)
    except Exception:
        return None


def _text(value: object) -> str:
    """A property's text on one line, without control characters (a PST export's NUL)."""
    return one_line(value) if isinstance(value, str) else ""


def envelope_of(message: MSGFile) -> Envelope:
    """The headers of an Outlook message as an :class:`Envelope`."""
    to_text = _text(_prop(message, "to"))
    cc_text = _text(_prop(message, "cc"))
    date = _prop(message, "date")
    when = date if isinstance(date, datetime) else None
    return Envelope(
        sender=_text(_prop(message, "sender")),
        to_text=to_text,
        cc_text=cc_text,
        to=_recipients(to_text),
        cc=_recipients(cc_text),
        date_text=format_datetime(when) if when else "",
        when=when,
        subject=decode_words(_text(_prop(message, "subject"))),
        message_id=_text(_prop(message, "messageId")),
        in_reply_to=_text(_prop(message, "inReplyTo")),
    )


def _recipients(text: str) -> tuple[str, ...]:
    """extract-msg joins recipients with ``"; "``."""
    return tuple(item.strip() for item in text.split(";") if item.strip())


def _cids(html: object) -> set[str]:
    if not isinstance(html, bytes):
        return set()
    return {m.group(1).decode("ascii", "replace").strip("<>").lower() for m in _CID.finditer(html)}


def _add_attachments(parts: PartCollector, message: MSGFile, cids: set[str]) -> None:
    attachments = _prop(message, "attachments")
    for attachment in attachments if isinstance(attachments, list) else []:
        cid = _text(_prop(attachment, "contentId")).strip("<>").lower()
        if cid and cid in cids:
            continue  # an image the HTML body shows inline
        if parts.full:
            parts.leave_out()
            continue
        kind = _prop(attachment, "type")
        name = next((value for key in _NAMES if (value := _prop(attachment, key))), None)
        mime = _prop(attachment, "mimetype")
        content = _prop(attachment, "data")
        if isinstance(content, MSGFile):
            _add_embedded(parts, content, name)
        elif isinstance(content, bytes):
            parts.add(_text(name) or None, content, mime=_text(mime) or None)
        else:
            reason = (
                FailureReason.CORRUPT
                if kind == AttachmentType.BROKEN
                else FailureReason.UNSUPPORTED_FORMAT  # a link, a kind extract-msg cannot read
            )
            parts.add_unread(_text(name) or None, 0, reason, mime=_text(mime) or None)


def _add_embedded(parts: PartCollector, inner: MSGFile, name: object) -> None:
    """An attached Outlook item: a nested ``.msg`` named by its subject."""
    subject = decode_words(_text(_prop(inner, "subject")))
    shown = f"{subject}.msg" if subject else (_text(name) or None)
    try:
        data = inner.exportBytes(allowBadEmbed=True)
    except Exception:  # a damaged embedded item cannot be copied out
        parts.add_unread(shown, 0, FailureReason.CORRUPT, mime=_MSG_MIME)
        return
    parts.add(shown, data, mime=_MSG_MIME, extension=".msg")
