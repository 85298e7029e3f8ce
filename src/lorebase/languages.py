"""Which language a text is in, and whether a model that reads some languages can read it.

Detection is py3langid's (a fork of langid.py, Lui and Baldwin 2012: a naive Bayes model over
byte n-grams of 97+ languages, shipped inside the package, numpy only; no download). On the
questions of the ten dev sets in ``../shared/data/ir`` it names the language of 99.2% of the
English, 99.5% of the German and 99.9% of the Spanish ones, and 90% of the Chinese (most of the
rest it calls Wu or Cantonese Chinese), in ~0.2 ms a question; lingua-language-detector was less
accurate on them (96-98%) at ~3.6 ms and 96 MB (bench/README.md, "Ranking").

A short or technical text (``kubectl get pods``, ``ERR_4711``, ``PDF``) carries little language;
the detector then spreads its belief over many languages. So a text counts as *unreadable* for a
model only when the detector is sure of another language: its best guess holds at least
:data:`CONFIDENT` of the belief, is not one the model reads, and every language the model reads
is at least :data:`LESS_LIKELY` times less likely than that guess. Anything else — English, an
identifier, a text in no language at all — is read.

The model is loaded when first asked, once a process (see :class:`LanguageDetector`).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

CONFIDENT = 0.3
"""The share of the belief the best guess needs before a text counts as in that language."""
LESS_LIKELY = 10.0
"""How many times less likely than the best guess the readable languages must all be."""
NO_LANGUAGE = "zxx"
"""What the detector calls text with no linguistic content (numbers, codes)."""
ANY_LANGUAGE: frozenset[str] | None = None
"""What a model that reads every language declares (an unknown model is taken to)."""


@dataclass(frozen=True, slots=True)
class Detected:
    """A text's most likely language (ISO 639 code) and the belief in each language."""

    language: str
    confidence: float
    beliefs: Mapping[str, float]


def readable(detected: Detected, languages: Collection[str] | None) -> bool:
    """Whether a model reading ``languages`` (None: every language) can read the text. Pure."""
    if languages is None or detected.language in languages:
        return True
    if detected.language == NO_LANGUAGE or detected.confidence < CONFIDENT:
        return True
    known = sum(detected.beliefs.get(language, 0.0) for language in languages)
    return known * LESS_LIKELY >= detected.confidence


class LanguageDetector:
    """Detects a text's language with py3langid, its model loaded on first use (once a
    process: the model is read-only data). Thread-safe.

    py3langid ships its model LZMA-compressed, 0.3 s to unpack: most of a ``lorebase search``
    from the command line. With ``unpacked`` (a folder: the data directory's model cache), the
    first process writes the unpacked model there (68 MB) and every later one maps it (its
    large tables are not read: the processes of a server share their pages); anything wrong
    with that copy and the packed model is read instead."""

    def __init__(self, unpacked: Path | None = None) -> None:
        self.unpacked = unpacked

    def detect(self, text: str) -> Detected:
        ranked = _model(self.unpacked).rank(text)
        beliefs = {str(language): float(belief) for language, belief in ranked}
        language, confidence = max(beliefs.items(), key=lambda item: item[1])
        return Detected(language, confidence, beliefs)


def _model(unpacked: Path | None) -> Any:
    """py3langid's identifier, loaded once a process (from ``unpacked`` if the first detector
    to ask has one: the model is the same whichever copy it is read from)."""
    with _LOADING:
        if not _LOADED:
            _LOADED.append(_load(unpacked))
        return _LOADED[0]


_LOADING = threading.Lock()
_LOADED: list[Any] = []


def _load(unpacked: Path | None) -> Any:
    from py3langid.langid import MODEL_DIR, MODEL_FILE, LanguageIdentifier

    packed = MODEL_DIR / MODEL_FILE
    if unpacked is not None:
        try:
            return _from_unpacked(LanguageIdentifier, packed, unpacked)
        except Exception as exc:  # any damage (a cut zip, an empty file): the packed one answers
            log.warning("the unpacked language model could not be used: %s", type(exc).__name__)
    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


def _from_unpacked(identifier: Any, packed: Path, folder: Path) -> Any:
    """The identifier from the unpacked copy of ``packed`` in ``folder`` (written first when
    missing: named by the packed file's size and time, so another version writes its own)."""
    import lzma
    import shutil

    stat = packed.stat()
    path = folder / f"langid-{stat.st_size}-{int(stat.st_mtime)}.npz"
    if not path.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
        try:
            with lzma.open(packed) as source, partial.open("wb") as target:
                shutil.copyfileobj(source, target, length=1 << 20)
                target.flush()
                os.fsync(target.fileno())  # whole on disk before it has its name
            partial.replace(path)  # whole or not at all, whichever process writes it first
        finally:
            partial.unlink(missing_ok=True)
    try:
        return _read_unpacked(identifier, path)
    except Exception:
        path.unlink(missing_ok=True)  # the next process writes it again
        raise


def _read_unpacked(identifier: Any, path: Path) -> Any:
    """The identifier over the unpacked copy, its two large tables (the n-gram weights, 28 MB,
    and the byte automaton, 39 MB) mapped from the file, not read: the processes of one
    server (the answering ones, the indexer) share their pages, and a process starts without
    reading them."""
    import numpy as np

    data = _mapped(path)
    return identifier(
        data["ptc"],
        np.array(data["pc"]),  # small: read
        data["classes"].tolist(),
        memoryview(data["nextmove"]),  # walked byte by byte: Python ints, as an array gives
        data["out_feat"].tolist(),
        tk_row=data["nextmove_row"].tolist(),
        norm_probs=True,
    )


def _mapped(path: Path) -> dict[str, Any]:
    """Every array of an uncompressed ``.npz`` (``numpy.savez``), mapped read-only where it
    lies in the file. ``ValueError`` (or ``zipfile.BadZipFile``, ``OSError``) for a file that is
    not one: a compressed or cut archive, a member that is not an array."""
    import struct
    import zipfile

    import numpy as np
    from numpy.lib import format as npy

    out: dict[str, Any] = {}
    size = path.stat().st_size
    with zipfile.ZipFile(path) as archive, path.open("rb") as raw:
        for info in archive.infolist():
            if info.compress_type != zipfile.ZIP_STORED or not info.filename.endswith(".npy"):
                raise ValueError("not an uncompressed archive of arrays")
            raw.seek(info.header_offset)
            local = raw.read(ZIP_LOCAL_HEADER)
            if len(local) < ZIP_LOCAL_HEADER or local[:4] != b"PK\x03\x04":
                raise ValueError("a member's header is damaged")
            name_length, extra_length = struct.unpack("<HH", local[26:30])
            raw.seek(info.header_offset + ZIP_LOCAL_HEADER + name_length + extra_length)
            version = npy.read_magic(raw)
            one = version == (1, 0)
            read_header = npy.read_array_header_1_0 if one else npy.read_array_header_2_0
            shape, fortran, dtype = read_header(raw)
            if dtype.hasobject:
                raise ValueError("a member holds objects")
            end = raw.tell() + dtype.itemsize * int(np.prod(shape, dtype=np.int64))
            if end > size:
                raise ValueError("a member is cut short")
            out[info.filename[: -len(".npy")]] = np.memmap(
                path,
                dtype=dtype,
                mode="r",
                offset=raw.tell(),
                shape=shape,
                order="F" if fortran else "C",
            )
    return out


ZIP_LOCAL_HEADER = 30
"""Bytes of a zip member's local header before its name and extra field."""


DETECTED_CHARS = 300
"""A passage's language is told from its first this many characters (0.2 ms; on XQuAD's German
paragraphs 200 characters already tell every one, with a mean belief of .996)."""
DOCUMENT_CHARS = 1500
"""A document's language (what its passages in no clear language get) is told from this many
characters of its text."""
PASSAGE_CONFIDENT = 0.5
"""The share of the belief a passage's best guess needs to be taken as its language; under it
(a table of numbers, a line of identifiers, a heading alone) it takes its document's."""
UNDETERMINED = "und"
"""What a passage in no language the detector can tell is said to be in (ISO 639-2)."""


def document_language(text: str, detector: LanguageDetector) -> str:
    """The language of a document's text (:data:`UNDETERMINED` when it cannot be told)."""
    return _told(detector.detect(text[:DOCUMENT_CHARS])) or UNDETERMINED


def passage_language(text: str, document: Callable[[], str], detector: LanguageDetector) -> str:
    """The language of one passage: its own when the detector is sure of it, else its
    document's (``document()``, :func:`document_language`, asked only then)."""
    return _told(detector.detect(text[:DETECTED_CHARS])) or document()


def _told(detected: Detected) -> str | None:
    if detected.language == NO_LANGUAGE or detected.confidence < PASSAGE_CONFIDENT:
        return None
    return detected.language
