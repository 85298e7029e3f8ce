"""The REST schemas are spellings of the service's own values."""

from __future__ import annotations


def test_the_rest_search_body_spells_the_one_search_request() -> None:
    """Every field of the REST body is a field of SearchRequest (bases aside: by id here, the
    service resolves them), so a new option is added once and reaches every surface."""
    import dataclasses

    from lorebase.api.schemas import SearchIn
    from lorebase.search.query import Mode, SearchRequest

    request_fields = {field.name for field in dataclasses.fields(SearchRequest)}
    assert set(SearchIn.model_fields) - {"knowledge_bases"} <= request_fields
    # What only an evaluation or the service itself sets stays off the wire.
    assert request_fields - set(SearchIn.model_fields) == {
        "fusion",
        "kb_ids",
        "no_answer_threshold",
        "explain",
    }
    body = SearchIn(query="leave", top_k=3, mode="keyword", document_ids=["a"], knowledge_bases=[2])
    assert body.request() == SearchRequest("leave", top_k=3, mode=Mode.KEYWORD, document_ids=("a",))
