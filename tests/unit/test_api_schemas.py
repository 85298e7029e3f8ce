"""The REST schemas are spellings of the service's own values."""

from __future__ import annotations


def test_the_rest_search_body_spells_the_one_search_request() -> None:
    """Every field of the REST body is a field of SearchRequest (bases aside: by id here, the
    service resolves them), so a new option is added once and reaches every surface."""
    import dataclasses

    from lorebase.api.schemas import SearchIn
    from lorebase.search.bounds import Mode
    from lorebase.search.query import SearchRequest

    request_fields = {field.name for field in dataclasses.fields(SearchRequest)}
    # The wire's one `filter` object (Chroma's spelling) is the request's conditions.
    wire = {"filters" if name == "filter" else name for name in SearchIn.model_fields}
    assert wire - {"knowledge_bases"} <= request_fields
    # What only an evaluation or the service itself sets stays off the wire.
    assert request_fields - wire == {
        "fusion",
        "kb_ids",
        "no_answer_threshold",
        "explain",
    }
    body = SearchIn(query="leave", top_k=3, mode="keyword", document_ids=["a"], knowledge_bases=[2])
    assert body.request() == SearchRequest("leave", top_k=3, mode=Mode.KEYWORD, document_ids=("a",))


def test_the_filter_object_becomes_the_requests_conditions() -> None:
    from lorebase.api.schemas import SearchIn
    from lorebase.fields import Condition, Op

    body = SearchIn(query="leave", filter={"tags": "Policy", "date": {"$gte": "2025-01"}})
    assert body.request().filters == (
        Condition("tags", Op.EQ, ("policy",)),
        Condition("date", Op.GE, ("2025-01",)),
    )
