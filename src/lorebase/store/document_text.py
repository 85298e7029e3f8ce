"""A document's extracted text, stored once: what its chunks do not already hold.

Every chunk's text is the slice ``text[start:end]`` of its document's extracted text, and the
chunks cover nearly all of it (on the shared sample documents, all but 0.45% of 5.5 million
characters: blank lines between sections, a heading's markup). Storing the whole text again,
compressed, cost ~690 bytes a chunk (``bench/disk.py``), a third of what a chunk costs beyond
its text. So a document's row holds only the *gaps* — the characters no chunk covers, with
their offsets — and the text is put back together from its chunks and those gaps when it is
read (the document view, a re-chunk preview, an export). When the chunks do not rebuild the
text exactly (a chunker that rewrote its text), or a database would change a chunk's text (a
NUL character), the whole text is stored as before.

Both forms are zlib-compressed UTF-8; the gaps form starts with :data:`GAPS` (a zlib stream
never does: its first byte is ``0x78``), so rows written before read as they always did.

The chunks' own texts are where a document's text lives, so the SQLite store keeps each one
compressed too (:func:`stored_chunk_text`: zlib when that is smaller than its UTF-8, the text
itself when short), and every reader takes it back through :func:`chunk_text`, which decides
by the value's type: bytes are compressed, a string is the text. Rows written before (all
strings) therefore read unchanged, and PostgreSQL (whose column is text) never sees bytes.
Pure functions.
"""

from __future__ import annotations

import functools
import json
import zlib
from collections.abc import Iterable, Sequence

from lorebase.errors import DamagedText
from lorebase.types import Chunk

GAPS = b"\x00gaps1\x00"
"""What a stored text made of gaps starts with."""
COMPRESSION_LEVEL = 6
DECOMPRESSED_CHUNKS = 4_096
"""Chunk texts remembered decompressed: about 6 MB (a stream of ~0.5 kB, a text of ~1 kB)."""

Span = tuple[int, int, str]
"""A chunk's ``(start, end, text)``: its text and where it sits in its document's text."""


def stored_text(text: str, spans: Iterable[Span]) -> bytes:
    """What a document's row keeps of ``text``: its gaps when ``spans`` (its chunks) and the
    gaps rebuild it exactly, else the whole text."""
    chunks = sorted(spans)
    # NUL is the one character a database changes in a chunk's text (PostgreSQL's text
    # cannot hold it: U+FFFD, see lorebase.store.relational.rows.text): such a text is kept.
    exact = "\x00" not in text
    if exact and all(0 <= a <= b <= len(text) and text[a:b] == piece for a, b, piece in chunks):
        gaps = _gaps(text, chunks)
        if _rebuilt(len(text), chunks, gaps) == text:
            payload = json.dumps([len(text), gaps], ensure_ascii=False, separators=(",", ":"))
            return GAPS + zlib.compress(payload.encode("utf-8"), COMPRESSION_LEVEL)
    return zlib.compress(text.encode("utf-8"), COMPRESSION_LEVEL)


def stored_chunk_text(text: str) -> str | bytes:
    """What a chunk's row keeps of its text in the SQLite store: the zlib stream of its UTF-8
    when that is smaller (a BLOB), else the text itself (a short text stays TEXT)."""
    encoded = text.encode("utf-8")
    packed = zlib.compress(encoded, COMPRESSION_LEVEL)
    return packed if len(packed) < len(encoded) else text


def chunk_text(stored: str | bytes | None, chunk_id: object = None) -> str:
    """A chunk's text from its stored value (see :func:`stored_chunk_text`): bytes are
    decompressed, a string is returned as it is. A stream that does not decompress raises
    :class:`~lorebase.errors.DamagedText` naming the chunk (never its text)."""
    if stored is None:
        return ""
    if isinstance(stored, str):
        return stored
    try:
        return _decompressed(bytes(stored))
    except (zlib.error, UnicodeDecodeError):
        which = f"chunk {chunk_id}" if chunk_id is not None else "a chunk"
        raise DamagedText(
            f"the stored text of {which} does not decompress (a damaged row); read its "
            "document again with `lorebase sync --full`"
        ) from None


@functools.lru_cache(maxsize=DECOMPRESSED_CHUNKS)
def _decompressed(stored: bytes) -> str:
    """A compressed chunk text's text, remembered: the passages searches show repeat (their
    base's often-answering ones), and decompressing one took ~7 us of a search's ~20."""
    return zlib.decompress(stored).decode("utf-8")


def needs_chunks(blob: bytes | None) -> bool:
    """Whether reading this stored text takes its document's chunks."""
    return blob is not None and blob.startswith(GAPS)


def read_text(blob: bytes | None, spans: Iterable[Span] = ()) -> str:
    """The document's text from its row (and, for the gaps form, its chunks' ``spans``)."""
    if not blob:
        return ""
    if not blob.startswith(GAPS):
        return zlib.decompress(blob).decode("utf-8")
    length, gaps = json.loads(zlib.decompress(blob[len(GAPS) :]).decode("utf-8"))
    text = _rebuilt(int(length), sorted(spans), [(int(at), str(piece)) for at, piece in gaps])
    if len(text) != length:
        raise DamagedText(
            "a document's stored text does not match its chunks (a damaged row); read the "
            "document again with `lorebase sync --full`"
        )
    return text


def _gaps(text: str, chunks: Sequence[Span]) -> list[tuple[int, str]]:
    """The runs of ``text`` no chunk covers, as ``(offset, characters)``."""
    gaps: list[tuple[int, str]] = []
    cursor = 0
    for start, end, _ in chunks:
        if start > cursor:
            gaps.append((cursor, text[cursor:start]))
        cursor = max(cursor, end)
    if cursor < len(text):
        gaps.append((cursor, text[cursor:]))
    return gaps


def _rebuilt(length: int, chunks: Sequence[Span], gaps: Sequence[tuple[int, str]]) -> str:
    """The text the chunks and gaps make, each character taken from the first piece holding
    it (chunks may overlap); stops at a hole."""
    pieces = sorted([*chunks, *((at, at + len(piece), piece) for at, piece in gaps)])
    out: list[str] = []
    cursor = 0
    for start, end, piece in pieces:
        if end <= cursor:
            continue
        if start > cursor:  # a hole: nothing holds these characters
            break
        out.append(piece[cursor - start :])
        cursor = end
    return "".join(out)[:length]


def spans_of(chunks: Iterable[Chunk]) -> list[Span]:
    """The spans of chunks as the chunker made them."""
    return [(chunk.position.start, chunk.position.end, chunk.text) for chunk in chunks]
