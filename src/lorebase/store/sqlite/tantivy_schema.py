"""What the Tantivy keyword engine indexes and how it scores a query, as pure functions over
the ``tantivy`` module (the index's life cycle is in :mod:`.tantivy_index`).

Ranking: one text field holding the chunk's title, headings, path, symbol and body, each
repeated by its integer weight of :data:`lorebase.store.terms.FIELD_WEIGHTS` (a word in a
title counts twice, as FTS5's column weights make it), analysed by :mod:`lorebase.analysis` in
the chunk's language (ICU words in every script, the language's Snowball stemmer, accents folded
where the language allows it) and handed to Tantivy as terms, which it only splits at spaces.
A question is analysed as each language the base's chunks are in
(:func:`~lorebase.analysis.query_variants`) and its terms OR-ed; BM25 with Tantivy's k1 = 1.2,
b = 0.75, the values FTS5 uses. A stem that several words of a question share counts once per
word, and each term's idf is FTS5's, from the base's own statistics (:func:`idf_boost`).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence
from typing import Any

from lorebase.analysis import ANALYSIS_VERSION, index_text
from lorebase.store import STORED_CHUNK_ID_HEX_CHARS
from lorebase.store.terms import FIELD_WEIGHTS, bm25_ceiling, bm25_idf

LAYOUT_VERSION = 200 + ANALYSIS_VERSION
"""Of the schema, analyser and field composition below (and of the analysis of
:mod:`lorebase.analysis`): an index of another version is rebuilt."""
ANALYZER = "lorebase"


def tantivy() -> Any:
    """The tantivy module, imported when an index is first used (not at import)."""
    import tantivy

    return tantivy


def analyzer() -> Any:
    """Terms one space apart: the text was analysed before it reached Tantivy."""
    t = tantivy()
    return t.TextAnalyzerBuilder(t.Tokenizer.whitespace()).build()


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
    # The document again as a 64-bit code (:func:`document_code`), a column read for the hits
    # only: a filtered search ranks the base deeper and keeps the hits of allowed documents
    # by their codes (asking SQLite whose chunks they are cost ~40 us a hit at 1M chunks).
    builder.add_unsigned_field("document_code", stored=False, indexed=False, fast=True)
    builder.add_text_field("text", stored=False, tokenizer_name=ANALYZER, index_option="freq")
    return builder.build()


def weighted_text(
    fields: Sequence[str], language: str | None, weights: Sequence[float] = FIELD_WEIGHTS
) -> str:
    """The one indexed text of a chunk: each field's terms (analysed in the chunk's
    ``language``) repeated by its weight (rounded, at least once when the weight is
    positive), on lines of their own."""
    parts: list[str] = []
    for text, weight in zip(fields, weights, strict=True):
        terms = index_text(text, language) if text else ""
        if terms:
            parts.extend([terms] * max(1, round(weight)) if weight > 0 else [])
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


def ceiling(searcher: Any, variants: Sequence[dict[str, int]]) -> float:
    """The most a chunk of this index can score for a question (see
    :func:`~lorebase.store.terms.bm25_ceiling`), from the index's own statistics: a chunk
    matches the terms of its own language's variant, so the least of the variants' ceilings
    (the ceiling errs low: keyword evidence is judged leniently, never more strictly)."""
    rows = searcher.num_docs
    # Each distinct term asked once: a base of 26 languages made a question of 5 distinct
    # terms 52 lookups (1.2 ms, more than the search).
    frequencies: dict[str, int] = {}
    for terms in variants:
        for term in terms:
            if term not in frequencies:
                frequencies[term] = searcher.doc_freq("text", term)
    return min(
        (
            bm25_ceiling([frequencies[t] for t, count in terms.items() for _ in range(count)], rows)
            for terms in variants
        ),
        default=0.0,
    )


def document_code(document_id: str) -> int:
    """A document id as 64 bits (the first of its BLAKE2b digest): what the index keeps of a
    chunk's document to filter hits by. Two documents of a base share a code with odds of
    about n² / 2^65 (3e-11 at 33k documents); the worst a shared code can do is let one
    document's passage through another's filter, within the same base. Pure."""
    return int.from_bytes(hashlib.blake2b(document_id.encode(), digest_size=8).digest(), "big")


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
        # Scored zero: a restriction changes which chunks match, never their BM25 (the
        # relevance floor compares it with the ceiling, filtered or not).
        allowed = t.Query.boost_query(
            t.Query.term_set_query(schema, "document", list(document_ids)), 0.0
        )
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
