"""What a mail reads like, whatever holds it (``.eml``, a mailbox, an Outlook ``.msg``).

- :class:`Envelope`: the headers a person reads, as written (RFC 2047 encoded words decoded, a
  Mailman archive's "andy at example.com" left so), laid out as the subject heading and a
  paragraph of ``From:``/``To:``/``Cc:``/``Date:`` lines, and as metadata (from; to and cc as
  tuples of addresses; date in ISO 8601; subject, message_id, in_reply_to).
- :func:`decode_body`/:func:`decode_text`: bytes in a declared charset, which wins when it reads
  them (ISO-8859-1 is read as windows-1252, as browsers do), else
  :func:`lorebase.extract.encoding.decode`.
- :func:`add_plain_text`: a plain body as paragraphs (a quoted ``>`` run is a paragraph of its
  own), :func:`unflow` for ``format=flowed`` text.
- :func:`finish`: the list of attachments at the end, and the ``empty`` rule: a mail with no
  body, no subject and no readable attachment.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import quopri
import re
from dataclasses import dataclass
from datetime import datetime
from email.message import Message
from email.utils import getaddresses, parsedate_to_datetime

from lorebase.errors import ExtractionFailed
from lorebase.extract.base import DocumentBuilder
from lorebase.extract.encoding import decode
from lorebase.extract.parts import PartCollector
from lorebase.types import ElementKind, Extracted, FailureReason, MetadataValue

_ENCODED_WORD = re.compile(r"=\?([^?\s]+)\?([qQbB])\?([^?\s]*)\?=")
_FOLD = re.compile(r"\r?\n[ \t]")
_QUOTE = re.compile(r"^(?:\s*>)+ ?")
_SIGNATURE_SEPARATOR = "-- "
_INDEX_SEPARATOR = " · "
_INDEX_DATE = "%Y-%m-%d %H:%M"
# C0 and C1 controls and DEL; whitespace among them becomes a space.
_CONTROLS = {c: " " if chr(c).isspace() else None for c in (*range(32), *range(127, 160))}
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


@dataclass(frozen=True, slots=True)
class Envelope:
    """The headers a person reads, as written (``to``/``cc`` also as address tuples)."""

    sender: str = ""
    to_text: str = ""
    cc_text: str = ""
    to: tuple[str, ...] = ()
    cc: tuple[str, ...] = ()
    date_text: str = ""
    when: datetime | None = None
    subject: str = ""
    message_id: str = ""
    in_reply_to: str = ""

    @classmethod
    def of(cls, message: Message) -> Envelope:
        raw = {name.lower(): value for name, value in reversed(list(message.raw_items()))}

        def text(name: str) -> str:
            return decode_words(_unfold(raw.get(name, "")))

        date_text = text("date")
        return cls(
            sender=text("from") or text("sender"),
            to_text=text("to"),
            cc_text=text("cc"),
            to=_addresses(_unfold(raw.get("to", ""))),
            cc=_addresses(_unfold(raw.get("cc", ""))),
            date_text=date_text,
            when=_parse_date(date_text),
            subject=text("subject"),
            message_id=text("message-id"),
            in_reply_to=text("in-reply-to"),
        )

    def add_to(self, builder: DocumentBuilder) -> None:
        """The subject as the heading, then the headers paragraph."""
        builder.add(ElementKind.HEADING, self.subject, level=1)
        lines = [
            f"{label}: {value}"
            for label, value in (
                ("From", self.sender),
                ("To", self.to_text),
                ("Cc", self.cc_text),
                ("Date", self.date_text),
            )
            if value
        ]
        builder.add(ElementKind.PARAGRAPH, "\n".join(lines))

    def metadata(self) -> dict[str, MetadataValue]:
        return {
            "from": self.sender,
            "to": self.to,
            "cc": self.cc,
            "date": self.when.isoformat() if self.when else "",
            "subject": self.subject,
            "message_id": self.message_id,
            "in_reply_to": self.in_reply_to,
        }

    def index_line(self) -> str:
        """``date · from · subject``, for a mailbox's index."""
        date = self.when.strftime(_INDEX_DATE) if self.when else self.date_text
        return _INDEX_SEPARATOR.join(v for v in (date, self.sender, self.subject) if v)


def _unfold(value: str) -> str:
    return one_line(_FOLD.sub(" ", restore_bytes(value)))


def one_line(text: str) -> str:
    """``text`` on one line, without control characters (a header can hold NUL or ESC)."""
    if _CONTROL.search(text):
        text = text.translate(_CONTROLS)
    return " ".join(text.split())


def restore_bytes(value: str) -> str:
    """Header text as the bytes parser left it (undecodable bytes as surrogates), decoded."""
    try:
        raw = value.encode("ascii", "surrogateescape")
    except UnicodeEncodeError:
        return value  # holds real characters: nothing to restore
    return raw.decode("ascii") if raw.isascii() else decode_text(raw, None)


def _addresses(value: str) -> tuple[str, ...]:
    """``Name <addr>`` for each address; the header as written when it holds something else
    (a Mailman archive's "andy at example.com")."""
    found: list[str] = []
    for name, address in getaddresses([value]):
        if "@" not in address:
            written = decode_words(value)
            return tuple(p.strip() for p in written.split(",") if p.strip())
        name = decode_words(name)
        found.append(f"{name} <{address}>" if name else address)
    return tuple(found)


def _parse_date(text: str) -> datetime | None:
    if not text:
        return None
    try:
        return parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


def decode_words(text: str) -> str:
    """``text`` with its RFC 2047 encoded words decoded: the space between two of them goes,
    and adjacent words in one charset are decoded together (so a character split between two
    words survives). Pure."""
    out: list[str] = []
    pending: list[bytes] = []
    charset = ""
    position = 0
    for match in _ENCODED_WORD.finditer(text):
        gap = text[position : match.start()]
        word_charset = match.group(1).partition("*")[0].lower()
        word = _word_bytes(match.group(2), match.group(3))
        follows_word = bool(pending) and not gap.strip()
        if pending and (not follows_word or word is None or word_charset != charset):
            out.append(decode_text(b"".join(pending), charset))
            pending = []
        if not follows_word:
            out.append(gap)
        if word is None:
            out.append(match.group(0))
        else:
            pending.append(word)
            charset = word_charset
        position = match.end()
    if pending:
        out.append(decode_text(b"".join(pending), charset))
    out.append(text[position:])
    return one_line("".join(out))


def _word_bytes(encoding: str, payload: str) -> bytes | None:
    try:
        if encoding.lower() == "b":
            return base64.b64decode(payload + "=" * (-len(payload) % 4))
        return quopri.decodestring(payload.encode("ascii"), header=True)
    except (binascii.Error, ValueError):
        return None


def decode_text(data: bytes, charset: str | None, *, markup: bool = False) -> str:
    """``data`` decoded with its declared ``charset`` when that reads it (ISO-8859-1 as
    windows-1252, ASCII only when it is), else by :func:`decode`; never fails (binary data
    comes out with replacement characters: use :func:`decode_body` to refuse it)."""
    try:
        return decode_body(data, charset, markup=markup)
    except ExtractionFailed:
        return data.decode("utf-8", errors="replace")


def decode_body(data: bytes, charset: str | None, *, markup: bool = False) -> str:
    """As :func:`decode_text`, but binary content is ``ExtractionFailed(corrupt)``."""
    codec = _codec(charset)
    if codec == "ascii" and not data.isascii():
        codec = None  # "us-ascii" on 8-bit text is a mailer's default, not a declaration
    if codec == "iso8859-1":
        try:
            return data.decode("cp1252")
        except UnicodeDecodeError:
            return data.decode("latin-1")
    if codec is not None:
        try:
            return data.decode(codec)
        except (UnicodeError, LookupError, ValueError):
            pass
    return decode(data, markup=markup).text


def _codec(charset: str | None) -> str | None:
    """The text codec a charset label names; None for none, an unknown or a non-text one."""
    if not charset:
        return None
    try:
        info = codecs.lookup(charset.strip().strip('"').lower())
    except (LookupError, ValueError):
        return None
    return info.name if getattr(info, "_is_text_encoding", True) else None


def add_plain_text(builder: DocumentBuilder, text: str) -> None:
    """Paragraphs at blank lines; a quoted run (``>`` lines) is a paragraph of its own."""
    paragraph: list[str] = []
    quoted = False
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        is_quote = line.lstrip().startswith(">")
        if not line.strip() or (paragraph and is_quote != quoted):
            builder.add(ElementKind.PARAGRAPH, "\n".join(paragraph))
            paragraph = []
        if line.strip():
            paragraph.append(line)
            quoted = is_quote
    builder.add(ElementKind.PARAGRAPH, "\n".join(paragraph))


def unflow(text: str, *, delsp: bool) -> str:
    """RFC 3676 ``format=flowed`` text with its soft line breaks joined. Pure."""
    out: list[str] = []
    held = ""
    held_quote: str | None = None
    for line in text.replace("\r\n", "\n").split("\n"):
        match = _QUOTE.match(line)
        quote = match.group(0).replace(" ", "") if match else ""
        content = line[match.end() :] if match else line.removeprefix(" ")
        if held_quote is not None and quote != held_quote:
            out.append(held)
            held, held_quote = "", None
        start = held if held_quote is not None else (f"{quote} " if quote else "")
        if content.endswith(" ") and content != _SIGNATURE_SEPARATOR:
            held, held_quote = start + (content[:-1] if delsp else content), quote
        else:
            out.append(start + content)
            held, held_quote = "", None
    if held_quote is not None:
        out.append(held)
    return "\n".join(out)


def finish(
    builder: DocumentBuilder,
    envelope: Envelope,
    parts: PartCollector,
    *,
    has_body: bool,
    warnings: tuple[str, ...] = (),
) -> Extracted:
    """End a mail: the list of its attachments, then the document (``empty`` when it has no
    body, no subject and no readable attachment)."""
    if parts.names:
        builder.add(ElementKind.PARAGRAPH, "Attachments: " + ", ".join(parts.names))
    if not (has_body or envelope.subject or parts.has_text):
        raise ExtractionFailed(FailureReason.EMPTY, "a mail with no body and no attachments")
    return builder.build(
        title=envelope.subject or None,
        warnings=warnings,
        metadata=envelope.metadata(),
        parts=parts.parts(),
    )
