"""What the Tantivy keyword engine indexes and how it scores a query, as pure functions over
the ``tantivy`` module (the index's life cycle is in :mod:`.tantivy_index`).

Ranking: one text field holding the chunk's title, headings, path, symbol and body, each
repeated by its integer weight of :data:`lorebase.store.terms.FIELD_WEIGHTS` (a word in a
title counts twice, as FTS5's column weights make it), analysed as FTS5's tokenizer does
(Unicode words, lower-cased, accents folded, English stemming — Snowball rather than Porter).
Queries are the shared :func:`~lorebase.store.terms.search_terms`, each analysed the same way
and OR-ed; BM25 with Tantivy's k1 = 1.2, b = 0.75, the values FTS5 uses. A stem that several
query terms share counts once per term, and each term's idf is FTS5's, from the base's own
statistics (:func:`query_tokens`, :func:`idf_boost`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from lorebase.store import STORED_CHUNK_ID_HEX_CHARS
from lorebase.store.terms import FIELD_WEIGHTS, bm25_ceiling, bm25_idf, search_terms

LAYOUT_VERSION = 4
"""Of the schema, analyser and field composition below: an index of another version is
rebuilt."""
ANALYZER = "lorebase"
MAX_TOKEN_BYTES = 40
"""Longer tokens (hashes, base64, minified code) are dropped from the index, as Tantivy's
default analyser does; nobody types them as search words."""


def tantivy() -> Any:
    """The tantivy module, imported when an index is first used (not at import)."""
    import tantivy

    return tantivy


def analyzer() -> Any:
    """Unicode words (Tantivy's simple tokenizer), long tokens dropped, lower-cased, accents
    folded to ASCII, English stemming."""
    t = tantivy()
    return (
        t.TextAnalyzerBuilder(t.Tokenizer.simple())
        .filter(t.Filter.remove_long(MAX_TOKEN_BYTES))
        .filter(t.Filter.lowercase())
        .filter(t.Filter.ascii_fold())
        .filter(t.Filter.stemmer("english"))
        .build()
    )


def schema() -> Any:
    t = tantivy()
    builder = t.SchemaBuilder()
    # A hit's chunk id (32 hex digits, 128 bits) as two 64-bit fast fields, columns read for
    # the hits only: a stored id took ~65 bytes a chunk and a stored-document fetch per hit,
    # and naming hits by rowid cost a SQLite page read per hit (0.5 ms at 10k).
    builder.add_unsigned_field("id_high", stored=False, indexed=False, fast=True)
    builder.add_unsigned_field("id_low", stored=False, indexed=False, fast=True)
    # Only a chunk whose id is not 32 hex digits (written by an early lorebase) stores it.
    builder.add_text_field("chunk", stored=True, tokenizer_name="raw", index_option="basic")
    builder.add_text_field("document", stored=False, tokenizer_name="raw", index_option="basic")
    builder.add_text_field("text", stored=False, tokenizer_name=ANALYZER, index_option="freq")
    return builder.build()


def weighted_text(fields: Sequence[str], weights: Sequence[float] = FIELD_WEIGHTS) -> str:
    """The one indexed text of a chunk: each field repeated by its weight (rounded, at least
    once when the weight is positive), on lines of their own. Pure."""
    parts: list[str] = []
    for text, weight in zip(fields, weights, strict=True):
        if text:
            parts.extend([text] * max(1, round(weight)) if weight > 0 else [])
    return "\n".join(parts)


def idf_boost(frequency: int, rows: int) -> float:
    """The factor that turns Tantivy's idf, ``ln(1 + (N - n + 0.5) / (n + 0.5))``, into
    FTS5's, ``ln((N - n + 0.5) / (n + 0.5))`` floored at
    :data:`~lorebase.store.terms.MIN_IDF`. Lucene's form never lets a word's weight fall to
    zero; FTS5's makes a word in most chunks count for almost nothing (keyword nDCG@10 +.0015
    on CISI, on top of the term counts below). ``n`` may exceed ``N`` for a moment (a term's
    frequency still counts deleted chunks that a merge has not dropped yet): it is taken as
    ``N`` then. Pure."""
    if frequency <= 0 or rows <= 0:
        return 1.0
    frequency = min(frequency, rows)
    ratio = (rows - frequency + 0.5) / (frequency + 0.5)
    return bm25_idf(frequency, rows) / math.log1p(ratio)


def query_tokens(text: str, analyse: Any) -> dict[str, int]:
    """The analysed tokens of raw user text's search terms, in order, each with the number of
    terms it came from. A term of several tokens (``don't``, ``e.g.``) contributes each of
    them; two terms with one stem (``retrieval``, ``retrieved``) count that stem twice, as
    FTS5 scores each term as a phrase of its own. Leaving the count out cost .03 keyword
    nDCG@10 on CISI's long questions (.330 against .360), nothing on Cranfield's."""
    tokens: dict[str, int] = {}
    for term in search_terms(text):
        for token in analyse.analyze(term):
            tokens[token] = tokens.get(token, 0) + 1
    return tokens


def ceiling(searcher: Any, tokens: dict[str, int]) -> float:
    """The most a chunk of this index can score for these tokens (see
    :func:`~lorebase.store.terms.bm25_ceiling`), from the index's own statistics."""
    rows = searcher.num_docs
    frequencies = [
        searcher.doc_freq("text", token) for token, count in tokens.items() for _ in range(count)
    ]
    return bm25_ceiling(frequencies, rows)


def id_words(chunk_id: str) -> tuple[int, int] | None:
    """A stored chunk id (:func:`lorebase.store.stored_chunk_id`: 32 lower-case hex digits) as
    two 64-bit words, and back with :func:`id_of`; None for any other id. Pure."""
    if not _STORED_ID.fullmatch(chunk_id):
        return None
    return int(chunk_id[:16], 16), int(chunk_id[16:], 16)


_STORED_ID = re.compile(f"[0-9a-f]{{{STORED_CHUNK_ID_HEX_CHARS}}}")
STORED_ELSEWHERE = (1 << 64) - 1
"""Both words of a chunk whose id is not 32 hex digits: its id is in the stored field."""


def id_of(high: int, low: int) -> str:
    return f"{high:016x}{low:016x}"


def base_query(
    schema: Any, searcher: Any, tokens: dict[str, int], document_ids: Sequence[str] | None
) -> Any:
    """The tokens OR-ed, each weighted by its count and so that its BM25 idf is FTS5's
    (see :func:`idf_boost`) from this base's own document frequencies; restricted to
    ``document_ids`` when given."""
    t = tantivy()
    rows = searcher.num_docs
    should = []
    for token, count in tokens.items():
        term = t.Query.term_query(schema, "text", token)
        boost = count * idf_boost(searcher.doc_freq("text", token), rows)
        should.append((t.Occur.Should, t.Query.boost_query(term, boost)))
    query = should[0][1] if len(should) == 1 else t.Query.boolean_query(should)
    if document_ids is not None:
        allowed = t.Query.term_set_query(schema, "document", list(document_ids))
        query = t.Query.boolean_query([(t.Occur.Must, query), (t.Occur.Must, allowed)])
    return query


def hit_ids(searcher: Any, hits: Sequence[tuple[float, Any]]) -> list[str]:
    """The chunk ids of search hits, from their fast fields."""
    addresses = [address for _, address in hits]
    highs = searcher.fast_field_values("id_high", addresses)
    lows = searcher.fast_field_values("id_low", addresses)
    return [
        searcher.doc(address)["chunk"][0] if high == low == STORED_ELSEWHERE else id_of(high, low)
        for address, high, low in zip(addresses, highs, lows, strict=True)
    ]
