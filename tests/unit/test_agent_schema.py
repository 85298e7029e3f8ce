"""The tool schemas are strict JSON Schema, and validation enforces exactly what they say."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from lorebase.agent.schema import SPECS, SPECS_BY_NAME, ArgumentError, validate

NAMES = [
    "list_knowledge_bases",
    "search_knowledge_base",
    "read_document",
    "read_surrounding_chunks",
    "save_note",
]

CASES: list[tuple[str, Any]] = [
    ("search_knowledge_base", {"query": "vacation"}),
    (
        "search_knowledge_base",
        {"query": "v", "top_k": 20, "mode": "keyword", "knowledge_base": "t"},
    ),
    ("search_knowledge_base", {"query": "v", "top_k": None, "mode": None, "document_id": None}),
    ("search_knowledge_base", {"query": ""}),
    ("search_knowledge_base", {"query": "x" * 2001}),
    ("search_knowledge_base", {"query": "v", "top_k": 0}),
    ("search_knowledge_base", {"query": "v", "top_k": 21}),
    ("search_knowledge_base", {"query": "v", "top_k": "5"}),
    ("search_knowledge_base", {"query": "v", "top_k": True}),
    ("search_knowledge_base", {"query": "v", "top_k": 2.5}),
    ("search_knowledge_base", {"query": "v", "mode": "fuzzy"}),
    ("search_knowledge_base", {"query": "v", "document_id": "../etc"}),
    ("search_knowledge_base", {"query": "v", "extra": 1}),
    ("search_knowledge_base", {"top_k": 3}),
    ("search_knowledge_base", {"query": 5}),
    ("search_knowledge_base", {"query": "v", "collapse": False}),
    ("search_knowledge_base", {"query": "v", "collapse": None}),
    ("search_knowledge_base", {"query": "v", "collapse": "no"}),
    ("search_knowledge_base", {"query": "v", "collapse": 0}),
    ("read_document", {"document_id": "ab12", "knowledge_base": "team"}),
    (
        "read_document",
        {"document_id": "ab12", "knowledge_base": "team", "start": 10, "max_chars": 20000},
    ),
    ("read_document", {"document_id": "ab12", "knowledge_base": "team", "max_chars": 20001}),
    ("read_document", {"document_id": "ab12", "knowledge_base": "team", "start": -1}),
    ("read_document", {"document_id": "ab12"}),
    ("read_document", {"document_id": "ab\n12", "knowledge_base": "team"}),
    ("read_surrounding_chunks", {"chunk_id": "c1", "knowledge_base": "team", "window": 3}),
    ("read_surrounding_chunks", {"chunk_id": "c1", "knowledge_base": "team", "window": 4}),
    ("read_surrounding_chunks", {"chunk_id": "c1", "knowledge_base": ""}),
    ("save_note", {"knowledge_base": "team", "text": "Decided: ship on Friday."}),
    ("save_note", {"knowledge_base": "team", "text": "t", "title": "Ship day"}),
    ("save_note", {"knowledge_base": "team", "text": ""}),
    ("save_note", {"knowledge_base": "team", "text": "x" * 60_001}),
    ("save_note", {"knowledge_base": "team", "text": "t", "title": "x" * 201}),
    ("save_note", {"text": "t"}),
    ("list_knowledge_bases", {}),
    ("list_knowledge_bases", {"anything": 1}),
]


def test_the_tools_have_strict_schemas() -> None:
    assert [spec.name for spec in SPECS] == NAMES
    for spec in SPECS:
        schema = spec.parameters
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        assert set(schema["required"]) <= set(schema["properties"])
        for rule in schema["properties"].values():
            assert rule.get("description")
            if "integer" in rule["type"]:
                assert "minimum" in rule
    bounds = SPECS_BY_NAME["search_knowledge_base"].parameters["properties"]["top_k"]
    assert (bounds["minimum"], bounds["maximum"], bounds["default"]) == (1, 20, 5)
    window = SPECS_BY_NAME["read_surrounding_chunks"].parameters["properties"]["window"]
    assert (window["minimum"], window["maximum"], window["default"]) == (0, 3, 1)


def test_openai_function_format() -> None:
    tool = SPECS_BY_NAME["read_document"].openai()
    assert tool["type"] == "function"
    assert set(tool["function"]) == {"name", "description", "parameters"}
    assert tool["function"]["parameters"]["required"] == ["document_id", "knowledge_base"]


@pytest.mark.parametrize(("name", "arguments"), CASES)
def test_validation_agrees_with_the_schema(name: str, arguments: Any) -> None:
    spec = SPECS_BY_NAME[name]
    valid = jsonschema.Draft202012Validator(spec.parameters).is_valid(arguments)
    try:
        cleaned = validate(spec, arguments)
    except ArgumentError as error:
        assert not valid, str(error)
        assert str(error).startswith(f"invalid arguments for {name}: ")
    else:
        assert valid
        for key, rule in spec.parameters["properties"].items():
            if arguments.get(key) is None:
                assert cleaned[key] == rule.get("default")


def test_errors_say_what_is_wrong_without_echoing_values() -> None:
    spec = SPECS_BY_NAME["search_knowledge_base"]
    with pytest.raises(ArgumentError) as caught:
        validate(spec, {"query": "secret plans", "top_k": 50, "bogus": 1})
    message = str(caught.value)
    assert "top_k must be an integer from 1 to 20" in message
    assert "unknown argument(s) bogus" in message
    assert "secret plans" not in message
    with pytest.raises(ArgumentError, match="JSON object"):
        validate(spec, ["query"])
