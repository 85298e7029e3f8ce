"""Which versions made a document, and which documents an older version made (stale).

A document records, in one compact key, the versions of what made its chunks:
``x2.c2.a2`` is its format's extractor at version 2 (:attr:`lorebase.formats.Format.version`),
the header-boundary chunker at 2 (:data:`lorebase.chunk.CHUNKER_VERSION`) and the keyword
analysis at 2 (:data:`lorebase.analysis.ANALYSIS_VERSION`); its embedding identity is recorded
beside it (``identity_key``). A file that was not read (a kind no format gives) records
extractor version 0.

A settled document (indexed or failed) whose key is not the one its kind gets now — or that
has none, made before versions were recorded — is **stale**: ``lorebase sync`` reads it again
even when its size and mtime are unchanged (an upload from its stored original), and a server
re-reads a few at a time in the background. Its chunks' vectors are found again by content
(:meth:`~lorebase.store.base.Vectors.cached_vectors`), so an upgrade that changes only an
extractor costs the extraction, not the embedding.
"""

from __future__ import annotations

from functools import cache

from lorebase.analysis import ANALYSIS_VERSION
from lorebase.chunk import CHUNKER_VERSION
from lorebase.formats import FORMATS
from lorebase.store.base import RunningVersions

UNREAD_EXTRACTOR = 0
"""The extractor version a document of a kind no format gives records."""


def versions_key(
    extractor: int, chunker: int = CHUNKER_VERSION, analysis: int = ANALYSIS_VERSION
) -> str:
    """``x2.c2.a2``: the key a document records. Pure."""
    return f"x{extractor}.c{chunker}.a{analysis}"


@cache
def running_versions() -> RunningVersions:
    """The keys documents made by this lorebase record, by kind."""
    return RunningVersions(
        {fmt.kind: versions_key(fmt.version) for fmt in FORMATS}, versions_key(UNREAD_EXTRACTOR)
    )


def versions_of(kind: str) -> str:
    """The key a document of ``kind`` records when made now."""
    return running_versions().of(kind)
