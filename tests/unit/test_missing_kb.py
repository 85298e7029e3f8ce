"""What a missing knowledge base's name gets: the nearest visible name, or how to go on."""

from __future__ import annotations

from lorebase.service.names import missing_kb


def test_a_close_name_is_suggested_in_any_case() -> None:
    assert missing_kb("ntoes", ["notes", "handbook"]) == (
        "no knowledge base named 'ntoes'; did you mean 'notes'?"
    )
    assert missing_kb("HANDBOK", ["notes", "Handbook"]).endswith("did you mean 'Handbook'?")


def test_without_a_close_name_it_says_how_to_go_on() -> None:
    assert missing_kb("zzzz", ["notes"]) == (
        "no knowledge base named 'zzzz'; list them to see the names"
    )
    assert "add files with `lorebase add`" in missing_kb("notes", [])


def test_an_api_caller_is_not_told_the_name_back_nor_a_command() -> None:
    assert missing_kb("ntoes", ["notes"], named_in_message=False) == (
        "no such knowledge base; did you mean 'notes'?"
    )
    told = missing_kb("secret", [], named_in_message=False)
    assert told == "no such knowledge base; you can see none yet"
    assert "lorebase" not in told
