"""The keyword arm over PostgreSQL full-text search, as pure functions: the text search
configuration, what a chunk's ``tsvector`` holds, and the SQL that ranks chunks by BM25.

**Text.** Each field is analysed by :mod:`lorebase.analysis` in the chunk's language — the
same terms the Tantivy index beside SQLite holds: ICU words in every script, the language's
Snowball stemmer, accents folded where the language allows — and handed to PostgreSQL as terms
one space apart, which the ``lorebase_terms`` configuration only splits and lower-cases (the
``simple`` dictionary, no stop words: stop words are indexed so that lengths count every term,
and a question leaves them out itself). A question is analysed as each language the selected
bases hold (:func:`query_terms`). Databases from before kept the ``lorebase`` configuration
(``unaccent`` then English Snowball) for their older rows: for English text it gives the same
terms.

**Fields.** A chunk's ``lexemes`` concatenate its fields under weight labels: A the document's
title, B the heading trail, C the code symbol, D the path and the body. Path and body share a
label because they share a weight (1); :data:`LABEL_WEIGHTS` is built from
:data:`lorebase.store.terms.FIELD_WEIGHTS` and checks that.

**BM25** is FTS5's ``bm25()`` (k1 1.2, b 0.75, the same field weights), computed per query over
the *selected* bases: N and the average length are sums over their documents' rows
(``chunk_count``, ``lexical_tokens``), each term's document frequency is the count of their
chunks matching it (found through the GIN index), and a term's weighted frequency in a chunk is
``ts_rank_cd`` of that term alone with the label weights and no normalisation, which is exactly
the sum of the weights of its occurrences (of a phrase's, for a term of several words: each
occurrence is a cover of its own). Nothing is counted ahead in rows that concurrent writers
would share. Query text never reaches ``tsquery`` syntax: each term, reduced like the fields, is
a parameter of ``phraseto_tsquery``; the terms are OR-joined by PostgreSQL's own rendering of
those queries.

:data:`RANKINGS` also offers ``ts_rank_cd`` over the OR query (cover density, log-length
normalised): cheaper, not BM25; kept so its cost and quality can be measured beside BM25.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from lorebase.analysis import analysis, merged, query_variants
from lorebase.store.terms import (
    ANCHOR_SHARE,
    BM25_B,
    BM25_K1,
    FIELD_WEIGHTS,
    LEXICAL_FIELDS,
    SPLIT_FROM_ROWS,
)

TS_CONFIG = "lorebase"
"""The configuration of migration 2 (English analysis inside PostgreSQL), kept for the record."""
TERMS_CONFIG = "lorebase_terms"
"""What chunks and questions are read with now: terms lorebase analysed, split and lower-cased."""
TS_DICTIONARY = "lorebase_english"
TOKEN_TYPES = ("asciiword", "word", "numword", "uint", "int")
"""What PostgreSQL's parser finds in text reduced to letters, digits and spaces."""

FIELD_LABELS = {"title": "A", "headings": "B", "symbol": "C", "path": "D", "body": "D"}
LABELS = ("D", "C", "B", "A")
"""The order of ``ts_rank_cd``'s weight array."""

Ranking = Literal["bm25", "ts_rank_cd"]
RANKINGS: tuple[Ranking, ...] = ("bm25", "ts_rank_cd")
DEFAULT_RANKING: Ranking = "bm25"
TS_RANK_CD_NORMALIZATION = 1
"""``ts_rank_cd``'s normalisation for the simple ranking: divide by 1 + log(length)."""

_TOKEN = re.compile(r"[^\W_]+")


def _label_weights() -> dict[str, float]:
    weights: dict[str, float] = {}
    for field, weight in zip(LEXICAL_FIELDS, FIELD_WEIGHTS, strict=True):
        label = FIELD_LABELS[field]
        if weights.setdefault(label, weight) != weight:
            raise ValueError(f"fields under label {label} need one weight")
    return weights


LABEL_WEIGHTS = _label_weights()
WEIGHT_SCALE = max(LABEL_WEIGHTS.values())
RANK_WEIGHTS = [LABEL_WEIGHTS.get(label, 0.0) / WEIGHT_SCALE for label in LABELS]
"""``ts_rank_cd`` takes weights up to 1: the field weights over the largest; its result is
multiplied back by :data:`WEIGHT_SCALE`."""


def tokens(text: str, language: str | None = None) -> list[str]:
    """The terms of ``text`` in ``language`` (see :mod:`lorebase.analysis`)."""
    return analysis(language).terms(text)


def lexical_text(text: str, language: str | None = None) -> str:
    """``text`` as PostgreSQL's parser should see it: its terms, one space apart."""
    return " ".join(tokens(text, language))


@dataclass(frozen=True, slots=True)
class LexicalFields:
    """A chunk's five fields reduced for indexing, and its length in tokens."""

    title: str
    headings: str
    path: str
    symbol: str
    body: str
    length: int


def lexical_fields(
    title: str,
    headings: str,
    path: str,
    symbol: str,
    body: str,
    language: str | None,
    document_language: str | None,
) -> LexicalFields:
    """A chunk's fields as terms: its own in its ``language``, its document's title and path
    in the language most of the document's chunks are in (``document_language``)."""
    reduced = [
        tokens(title, document_language),
        tokens(headings, language),
        tokens(path, document_language),
        tokens(symbol, language),
        tokens(body, language),
    ]
    t, h, p, s, b = (" ".join(field) for field in reduced)
    return LexicalFields(t, h, p, s, b, length=sum(len(field) for field in reduced))


def text_search_config_sql() -> tuple[str, ...]:
    """The dictionary and configuration the index and the queries use."""
    return (
        f"CREATE TEXT SEARCH DICTIONARY {TS_DICTIONARY} (TEMPLATE = snowball, LANGUAGE = english)",
        f"CREATE TEXT SEARCH CONFIGURATION {TS_CONFIG} (PARSER = default)",
        f"ALTER TEXT SEARCH CONFIGURATION {TS_CONFIG} ADD MAPPING FOR {', '.join(TOKEN_TYPES)} "
        f"WITH unaccent, {TS_DICTIONARY}",
    )


def lexemes_sql(title: str, headings: str, symbol: str, path_body: str) -> str:
    """The ``tsvector`` of a chunk from four SQL expressions (its reduced fields; path and body
    joined by a space)."""
    parts = (
        (title, FIELD_LABELS["title"]),
        (headings, FIELD_LABELS["headings"]),
        (symbol, FIELD_LABELS["symbol"]),
        (path_body, FIELD_LABELS["body"]),
    )
    return " || ".join(
        f"setweight(to_tsvector('{TERMS_CONFIG}', {expression}), '{label}')"
        for expression, label in parts
    )


def terms_config_sql() -> tuple[str, ...]:
    """The configuration chunks and questions are read with since migration 7 (never edit:
    a released migration runs it)."""
    return (
        f"CREATE TEXT SEARCH CONFIGURATION {TERMS_CONFIG} (PARSER = default)",
        f"ALTER TEXT SEARCH CONFIGURATION {TERMS_CONFIG} ADD MAPPING FOR {', '.join(TOKEN_TYPES)} "
        "WITH simple",
    )


def query_terms(text: str, languages: Iterable[str]) -> list[str]:
    """The terms of raw user text analysed as each of ``languages`` (the analyses of the
    selected bases' chunks), each term as often as the most words of one analysis give it."""
    return expanded(merged(query_variants(text, languages)))


def expanded(terms: dict[str, int]) -> list[str]:
    """Each term as many times as it counts (the SQL scores each entry as a term). Pure."""
    return [term for term, count in terms.items() for _ in range(count)]


_TERMS_CTE = (
    # One tsquery per term (a phrase when it has several words); terms PostgreSQL finds no
    # lexeme in are dropped, then the rest are OR-joined through their own text rendering.
    "terms AS MATERIALIZED (SELECT t.i, phraseto_tsquery('{config}', t.term) AS q "
    "FROM unnest(%(terms)s::text[]) WITH ORDINALITY AS t(term, i) "
    "WHERE numnode(phraseto_tsquery('{config}', t.term)) > 0), "
    "any_term AS MATERIALIZED (SELECT string_agg('(' || q::text || ')', ' | ')::tsquery AS q "
    "FROM terms)"
)


def bm25_sql(*, with_documents: bool, anchored: bool = False, prefilter: bool = False) -> str:
    """BM25 over the chunks of some bases (parameters: ``terms`` text[], ``kbs`` bigint[],
    ``weights`` float4[], ``scale``, ``k1``, ``b``, ``limit`` [, ``documents`` text[]]).
    Statistics cover the bases; the document filter only narrows what is scored. Rows are
    ``(chunk id, score)``, best first, ties by chunk order.

    The matched chunks' lexemes are copied out of TOAST once (``|| ''``) and each term is
    scored against them once (``hits``): reading them from the table for every term cost
    most of the time (a CISI question has ~17 terms).

    ``anchored`` (the plan for large selections, see :func:`plan_anchors`): only chunks holding
    one of the terms numbered ``anchors`` (int[]) are scored, and each term's document
    frequency comes in ``dfs`` (float8[], by term number) instead of being counted from the
    hits: what the plain plan spends on a frequent term is its whole posting list.
    ``prefilter`` (with ``anchored``): of the chunks holding an anchor, only the ``prefilter``
    (int) shortest are scored (see :data:`MAX_SCORED_ROWS`)."""
    documents = " WHERE h.document_id = ANY(%(documents)s)" if with_documents else ""
    shortest = ""
    if anchored:
        selector = (
            "selector AS MATERIALIZED (SELECT string_agg('(' || q::text || ')', ' | ')::tsquery "
            "AS q FROM terms WHERE i = ANY(%(anchors)s)), "
        )
        frequency = "(%(dfs)s::float8[])[t.i] AS df "
        if prefilter:
            shortest = (
                "shortest AS MATERIALIZED (SELECT p.seq FROM chunks AS p "
                "WHERE p.kb_id = ANY(%(kbs)s) AND p.lexemes @@ (SELECT q FROM selector) "
                "ORDER BY p.lexical_length, p.seq LIMIT %(prefilter)s), "
            )
    else:
        selector = "selector AS MATERIALIZED (SELECT q FROM any_term), "
        frequency = "count(*) OVER (PARTITION BY t.i) AS df "
    return (
        "WITH "
        + _TERMS_CTE.format(config=TERMS_CONFIG)
        + ", "
        + selector
        + shortest
        + "stats AS MATERIALIZED (SELECT sum(chunk_count)::float8 AS n, "
        "sum(lexical_tokens)::float8 AS tokens FROM documents WHERE kb_id = ANY(%(kbs)s)), "
        "matched AS MATERIALIZED (SELECT c.seq, c.id, c.document_id, c.lexical_length, "
        "c.lexemes || ''::tsvector AS lexemes FROM "
        + (
            # the shortest chunks, fetched by key: they already hold an anchor
            "shortest AS p JOIN chunks AS c ON c.seq = p.seq), "
            if shortest
            else "chunks AS c WHERE c.kb_id = ANY(%(kbs)s) "
            "AND c.lexemes @@ (SELECT q FROM selector)), "
        )
        + "hits AS MATERIALIZED (SELECT m.seq, m.id, m.document_id, m.lexical_length, "
        "ts_rank_cd(%(weights)s::float4[], m.lexemes, t.q, 0) * %(scale)s AS tf, "
        + frequency
        + "FROM matched AS m JOIN terms AS t ON m.lexemes @@ t.q), "
        # Every value a score needs is in its hits: joining them back to ``matched`` made the
        # planner (which expects a CTE of one row) loop over it once per hit.
        "scored AS (SELECT h.seq, h.id, sum(greatest(ln((s.n - h.df + 0.5) / (h.df + 0.5)), "
        "1e-6) * h.tf * (%(k1)s + 1) / (h.tf + %(k1)s * "
        "(1 - %(b)s + %(b)s * h.lexical_length / (s.tokens / s.n)))) AS score "
        "FROM hits AS h CROSS JOIN stats AS s" + documents + " GROUP BY h.seq, h.id) "
        "SELECT id, score FROM scored ORDER BY score DESC, seq LIMIT %(limit)s"
    )


# -- the plan for large selections -------------------------------------------------------------
#
# The plain statement scores every chunk holding any term: at 100k chunks a question's
# "what" or "has" matches three quarters of them, and scoring them is seconds. As the SQLite
# backend does (store/sqlite/fts.py), past SPLIT_FROM_ROWS the rarest terms become anchors (as
# many as fit ANCHOR_SHARE of the rows) and only chunks holding an anchor are scored — with
# every term, so their scores are the plain plan's; what is left out is chunks holding only
# frequent terms, which weigh least. A term's document frequency is counted through the GIN
# index up to just past the anchors' budget; a term more frequent than that gets the frequency
# ANALYZE measured for its lexeme (pg_stats' most common elements of chunks.lexemes); one the
# statistics do not list is counted on up to MAX_SCORED_ROWS, and past that gets the least
# frequency they record (a term they leave out is rarer than every one they keep). Without
# any statistics (never analysed) such a term is counted in full.

MAX_SCORED_ROWS = 2_000
"""The most chunks one keyword search scores. PostgreSQL spends ~10 µs fetching a chunk's
lexemes and ~2 µs scoring it per term (bench/README.md), so a question whose every term is
frequent ("how can", "what") would score tens of thousands at 100k chunks; past this many the
shortest chunks holding its rarest term are scored — BM25 favours short chunks among those
holding a term once, and such a question's terms weigh little anyway. Only in the plan for
large selections (never below SPLIT_FROM_ROWS)."""

SELECTED_ROWS_SQL = "SELECT coalesce(sum(chunk_count), 0) FROM documents WHERE kb_id = ANY(%s)"


def term_counts_sql() -> str:
    """Each term's number, lexemes and document frequency among the bases, counted up to
    ``cap`` (parameters: ``terms``, ``kbs``, ``cap``)."""
    return (
        "WITH "
        + _TERMS_CTE.format(config=TERMS_CONFIG).partition("), any_term")[0]
        + ") SELECT t.i, tsvector_to_array(to_tsvector('"
        + TERMS_CONFIG
        + "', u.term)), (SELECT count(*) FROM (SELECT 1 FROM chunks AS c "
        "WHERE c.kb_id = ANY(%(kbs)s) AND c.lexemes @@ t.q LIMIT %(cap)s) AS capped) "
        "FROM terms AS t JOIN unnest(%(terms)s::text[]) WITH ORDINALITY AS u(term, i) "
        "ON u.i = t.i ORDER BY t.i"
    )


def term_count_sql() -> str:
    """One term's document frequency among the bases, counted up to ``cap`` (parameters:
    ``term``, ``kbs``, ``cap``)."""
    return (
        "SELECT count(*) FROM (SELECT 1 FROM chunks AS c WHERE c.kb_id = ANY(%(kbs)s) "
        f"AND c.lexemes @@ phraseto_tsquery('{TERMS_CONFIG}', %(term)s) LIMIT %(cap)s) AS capped"
    )


LEXEME_STATS_SQL = (
    "SELECT most_common_elems::text::text[], most_common_elem_freqs FROM pg_stats "
    "WHERE schemaname = current_schema() AND tablename = 'chunks' AND attname = 'lexemes'"
)


def lexeme_frequencies(row: tuple[object, object] | None) -> dict[str, float] | None:
    """pg_stats' most common lexemes of ``chunks.lexemes`` with the share of rows holding
    each, and the least recorded share under the key ``""`` (None: never analysed)."""
    if row is None or row[0] is None or row[1] is None:
        return None
    lexemes, shares = row
    assert isinstance(lexemes, list) and isinstance(shares, list)
    # The shares end with three more: the least and most share of any element, and nulls'.
    recorded = [float(share) for share in shares[: len(lexemes)]]
    frequencies = {str(lexeme): share for lexeme, share in zip(lexemes, recorded, strict=True)}
    frequencies[""] = min(recorded) if recorded else 0.0
    return frequencies


@dataclass(frozen=True, slots=True)
class AnchorPlan:
    """Which terms (by number) anchor the scored chunks, every term's frequency, and how many
    of the chunks holding an anchor are scored at most (None: all of them)."""

    anchors: list[int]
    dfs: list[float]
    prefilter: int | None = None


def plan_anchors(dfs: dict[int, float], budget: int) -> AnchorPlan | None:
    """The anchors for these document frequencies (by term number): the rarest terms whose
    chunks fit the budget (at least one), or None when the plain plan is as cheap (every term
    fits the budget and the chunks they hold are few enough to score). Pure."""
    if sum(dfs.values()) <= budget:
        return None
    anchors: list[int] = []
    spent = 0.0
    for number in sorted(dfs, key=lambda n: (dfs[n], n)):
        if anchors and spent + dfs[number] > budget:
            break
        anchors.append(number)
        spent += dfs[number]
    prefilter = MAX_SCORED_ROWS if spent > MAX_SCORED_ROWS else None
    if len(anchors) == len(dfs) and prefilter is None:
        return None
    frequencies = [dfs.get(n, 0.0) for n in range(1, max(dfs) + 1)]
    return AnchorPlan(anchors, frequencies, prefilter)


def ts_rank_cd_sql(*, with_documents: bool) -> str:
    """The simpler ranking: ``ts_rank_cd`` of the OR query, log-length normalised (same
    parameters as :func:`bm25_sql`; ``k1``, ``b`` and ``scale`` unused)."""
    documents = " AND c.document_id = ANY(%(documents)s)" if with_documents else ""
    return (
        "WITH "
        + _TERMS_CTE.format(config=TERMS_CONFIG)
        + " SELECT c.id, ts_rank_cd(%(weights)s::float4[], c.lexemes, a.q, "
        f"{TS_RANK_CD_NORMALIZATION}) AS score FROM chunks AS c CROSS JOIN any_term AS a "
        f"WHERE c.kb_id = ANY(%(kbs)s) AND c.lexemes @@ (SELECT q FROM any_term){documents} "
        "ORDER BY score DESC, c.seq LIMIT %(limit)s"
    )


PLAN_FROM_ROWS = 5_000
"""PostgreSQL's plain statement scores every chunk holding any term at ~10 µs each: 150 ms at
10k chunks (SQLite's FTS5 needs the plan only from SPLIT_FROM_ROWS, 50k). From this many
chunks in the selected bases the plan is used, with at least MIN_ANCHOR_ROWS for the anchors so
that a mid-size base keeps every chunk that holds a term of any weight."""
MIN_ANCHOR_ROWS = 1_000


def anchor_budget(rows: int) -> int | None:
    """How many chunks the anchors may hold among ``rows`` (None: the plain plan)."""
    if rows < min(PLAN_FROM_ROWS, SPLIT_FROM_ROWS):
        return None
    return max(int(ANCHOR_SHARE * rows), MIN_ANCHOR_ROWS)


def keyword_query(
    ranking: Ranking,
    terms: Sequence[str],
    kb_ids: Sequence[int],
    limit: int,
    document_ids: Sequence[str] | None,
    plan: AnchorPlan | None = None,
) -> tuple[str, dict[str, object]]:
    """The statement and parameters of one keyword search (``plan``: BM25's anchored plan)."""
    if ranking not in RANKINGS:
        raise ValueError(f"unknown ranking {ranking!r}")
    if plan is not None and ranking == "bm25":
        sql = bm25_sql(
            with_documents=document_ids is not None,
            anchored=True,
            prefilter=plan.prefilter is not None,
        )
        params = _bm25_params(terms, kb_ids, limit, document_ids)
        params.update(anchors=plan.anchors, dfs=plan.dfs, prefilter=plan.prefilter)
        return sql, params
    build = bm25_sql if ranking == "bm25" else ts_rank_cd_sql
    params = _bm25_params(terms, kb_ids, limit, document_ids)
    sql = build(with_documents=document_ids is not None)
    if ranking != "bm25":
        for unused in ("scale", "k1", "b"):
            del params[unused]
    return sql, params


def _bm25_params(
    terms: Sequence[str], kb_ids: Sequence[int], limit: int, document_ids: Sequence[str] | None
) -> dict[str, object]:
    params: dict[str, object] = {
        "terms": list(terms),
        "kbs": list(kb_ids),
        "weights": RANK_WEIGHTS,
        "scale": WEIGHT_SCALE,
        "k1": BM25_K1,
        "b": BM25_B,
        "limit": limit,
    }
    if document_ids is not None:
        params["documents"] = list(document_ids)
    return params
