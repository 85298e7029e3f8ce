"""Bytes to text: BOM first, then a declared charset, then valid UTF-8, then a detector,
then cp1252/Latin-1 as the last resort. Line ends come out as ``\\n``."""

from __future__ import annotations

import codecs
import itertools
import re
from dataclasses import dataclass

from lorebase.errors import ExtractionFailed
from lorebase.types import FailureReason

_BOMS: tuple[tuple[bytes, str], ...] = (
    # UTF-32 first: the UTF-32-LE BOM begins with the UTF-16-LE one.
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)

_SNIFF_BYTES = 4096
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9._:-]+)""", re.I)
_XML_DECL = re.compile(rb"""^\s*<\?xml[^>]+encoding\s*=\s*["']([A-Za-z0-9._:-]+)["']""", re.I)
# What browsers do (WHATWG Encoding): these labels mean windows-1252, and a UTF-16 label in a
# document that an ASCII-compatible parser just read cannot be true, so it means UTF-8.
_LABEL_OVERRIDES = {
    "iso-8859-1": "cp1252",
    "latin-1": "cp1252",
    "ascii": "cp1252",
    "us-ascii": "cp1252",
    "utf-16": "utf-8",
    "utf-16-le": "utf-8",
    "utf-16-be": "utf-8",
}
# Control bytes that text files do not contain (tab, line ends, form feed and escape excepted);
# above this share of them a file without a BOM is binary, not text.
_BINARY_BYTES = [bytes([c]) for c in (*range(0, 9), 11, *range(14, 27), *range(28, 32))]
_BINARY_SHARE = 0.01
_WORD = re.compile(r"[^\W\d_]+(?:[^\s\w]+[^\W\d_]+)*")
# Share of accented words that must look Western for a cp1252 reading to be believed.
_WESTERN_SHARE = 0.8
# Detectors cannot tell single-byte Western code pages apart on short texts (cp1250, cp775
# and cp1252 decode most Latin text without "chaos"). On such a tie we prefer windows-1252,
# the most common one and what browsers assume: a candidate counts as tied when its chaos is
# within this margin of the best.
_CHAOS_TIE = 0.01
_PREFERRED_SINGLE_BYTE = "cp1252"


@dataclass(frozen=True, slots=True)
class Decoded:
    text: str
    encoding: str


def decode(data: bytes, *, markup: bool = False) -> Decoded:
    """Decode ``data`` to text. ``markup`` enables HTML ``<meta charset>`` / XML-declaration
    sniffing. Raises ``ExtractionFailed(corrupt)`` for binary content."""
    for bom, name in _BOMS:
        if data.startswith(bom):
            return _finish(data[len(bom) :].decode(name, errors="replace"), name)
    if markup:
        declared = declared_charset(data[:_SNIFF_BYTES])
        if declared is not None:
            try:
                return _finish(data.decode(declared), declared)
            except UnicodeDecodeError:
                pass
    if b"\x00" in data:
        wide = _guess_wide_encoding(data)
        if wide is not None:
            return _finish(data.decode(wide, errors="replace"), wide)
    if sum(data.count(c) for c in _BINARY_BYTES) > len(data) * _BINARY_SHARE:
        raise ExtractionFailed(FailureReason.CORRUPT, "binary content in a text file")
    try:
        return _finish(data.decode("utf-8"), "utf-8")
    except UnicodeDecodeError:
        pass
    western = _plausible_cp1252(data)
    if western is not None:
        return _finish(western, "cp1252")
    detected = _detect(data)
    if detected is not None:
        return _finish(data.decode(detected, errors="replace"), detected)
    try:
        return _finish(data.decode("cp1252"), "cp1252")
    except UnicodeDecodeError:
        return _finish(data.decode("latin-1"), "latin-1")


def declared_charset(head: bytes) -> str | None:
    """The charset an HTML ``<meta>`` or XML declaration names, as a Python codec name."""
    match = _XML_DECL.search(head) or _META_CHARSET.search(head)
    if match is None:
        return None
    label = match.group(1).decode("ascii", errors="ignore").lower()
    label = _LABEL_OVERRIDES.get(label, label)
    try:
        name = codecs.lookup(label).name
    except LookupError:
        return None
    return _LABEL_OVERRIDES.get(name, name)


def _guess_wide_encoding(data: bytes) -> str | None:
    """UTF-16/32 without a BOM: mostly-ASCII text has NULs in a fixed byte position."""
    sample = data[: _SNIFF_BYTES * 4]
    n = len(sample) - len(sample) % 4
    if n < 4:
        return None
    quads = [sample[i : i + 4] for i in range(0, n, 4)]
    if sum(1 for q in quads if q[1:] == b"\x00\x00\x00") > len(quads) * 0.6:
        return "utf-32-le"
    if sum(1 for q in quads if q[:3] == b"\x00\x00\x00") > len(quads) * 0.6:
        return "utf-32-be"
    even_nuls = sample[0:n:2].count(0)
    odd_nuls = sample[1:n:2].count(0)
    half = n // 2
    if odd_nuls > half * 0.3 and even_nuls < half * 0.05:
        return "utf-16-le"
    if even_nuls > half * 0.3 and odd_nuls < half * 0.05:
        return "utf-16-be"
    return None


def _plausible_cp1252(data: bytes) -> str | None:
    """The cp1252 reading of ``data`` when it looks like Western text, else None.

    Statistical detectors confuse the single-byte Western code pages on ordinary prose (they
    took plain French Latin-1 for mac-latin2), so this reading is tried first. It is believed
    only when most words with accented letters are mostly ASCII letters, with no symbol
    inside a word and no capital after a small letter: Cyrillic, Greek or Central-European
    bytes read as cp1252 fail that at once ("Âñå", "si¹", "£ódŸ").
    """
    try:
        text = data.decode("cp1252")
    except UnicodeDecodeError:
        return None
    accented = plausible = 0
    for match in _WORD.finditer(text):
        word = match.group()
        if word.isascii():
            continue
        accented += 1
        letters = [c for c in word if c.isalpha()]
        ascii_letters = sum(1 for c in letters if c.isascii())
        inner_symbol = any(not (c.isalpha() or c in "'’-") for c in word)
        bad_case = any(a.islower() and b.isupper() for a, b in itertools.pairwise(word))
        if ascii_letters * 2 >= len(letters) and not inner_symbol and not bad_case:
            plausible += 1
    if accented and plausible >= accented * _WESTERN_SHARE:
        return text
    return None


def _detect(data: bytes) -> str | None:
    from charset_normalizer import from_bytes

    matches = list(from_bytes(data))
    if not matches:
        return None
    best_chaos = min(m.chaos for m in matches)
    for match in matches:
        if match.chaos <= best_chaos + _CHAOS_TIE and (
            _PREFERRED_SINGLE_BYTE in match.could_be_from_charset
        ):
            return _PREFERRED_SINGLE_BYTE
    try:
        return codecs.lookup(matches[0].encoding).name
    except LookupError:
        return None


def _finish(text: str, encoding: str) -> Decoded:
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return Decoded(text=text, encoding=codecs.lookup(encoding).name)
