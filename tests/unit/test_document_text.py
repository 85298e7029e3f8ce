"""A document's text stored as the gaps between its chunks: rebuilt exactly from chunks that
are slices of it (overlapping or not, covering it or not), stored whole otherwise; rows written
before (the whole text) read as they did."""

from __future__ import annotations

import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lorebase.errors import DamagedText
from lorebase.store.document_text import GAPS, Span, needs_chunks, read_text, stored_text


@st.composite
def text_and_chunks(draw: st.DrawFn) -> tuple[str, list[Span]]:
    text = draw(st.text(min_size=0, max_size=300))
    spans: list[Span] = []
    for _ in range(draw(st.integers(min_value=0, max_value=8))):
        start = draw(st.integers(min_value=0, max_value=len(text)))
        end = draw(st.integers(min_value=start, max_value=len(text)))
        spans.append((start, end, text[start:end]))
    return text, spans


@given(text_and_chunks())
def test_chunks_and_gaps_rebuild_the_text(case: tuple[str, list[Span]]) -> None:
    text, spans = case
    blob = stored_text(text, spans)
    assert needs_chunks(blob) == ("\x00" not in text)
    assert read_text(blob, list(reversed(spans))) == text  # in any order


def test_chunks_that_cover_the_text_leave_only_its_gaps() -> None:
    text = "# Title\n\nFirst paragraph about leave.\n\n## Part\n\nSecond paragraph.\n"
    first = text.index("First")
    second = text.index("## Part")
    spans = [(0, first - 2, text[: first - 2]), (first, len(text) - 1, text[first:-1])]
    blob = stored_text(text, spans)
    assert len(blob) < len(zlib.compress(text.encode()))
    assert read_text(blob, spans) == text
    assert second > first


def test_a_chunk_that_is_not_a_slice_keeps_the_whole_text() -> None:
    text = "Some text with  two spaces."
    rewritten = [(0, len(text), "Some text with two spaces.")]  # whitespace folded
    blob = stored_text(text, rewritten)
    assert not needs_chunks(blob)
    assert read_text(blob) == text
    beyond = [(5, 99, "text")]
    assert read_text(stored_text(text, beyond)) == text


def test_rows_written_before_read_as_they_did_and_damage_is_named() -> None:
    assert read_text(zlib.compress(b"old row")) == "old row"
    assert read_text(None) == "" and read_text(b"") == ""
    text = "alpha beta gamma"
    spans = [(0, 5, "alpha"), (6, 16, "beta gamma")]
    blob = stored_text(text, spans)
    assert blob.startswith(GAPS)
    with pytest.raises(DamagedText, match="sync --full"):
        read_text(blob, spans[:1])  # a chunk lost: the text cannot be rebuilt


def test_a_text_a_database_would_change_in_its_chunks_is_kept_whole() -> None:
    text = "zebra\x00stripes"
    blob = stored_text(text, [(0, len(text), text)])
    assert not needs_chunks(blob) and read_text(blob) == text
