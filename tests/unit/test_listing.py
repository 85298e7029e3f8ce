"""A document listing (filter, order, page) is one value applied by one pure function."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lorebase.errors import InvalidInput
from lorebase.service.listing import SORT_KEYS, DocumentListing, SortKey, page_of
from lorebase.store.base import DocumentRecord
from lorebase.store.states import DocumentState


def record(n: int, name: str, size: int) -> DocumentRecord:
    return DocumentRecord(
        id=f"{n:04}",
        kb_id=1,
        path=name,
        kind="text",
        size=size,
        content_hash=str(n),
        state=DocumentState.INDEXED,
        mtime=None,
        title=None,
        page_count=None,
        reason=None,
        chunk_count=n % 3,
        identity_key=None,
        settings_key=None,
        updated_at=float(n % 5),
    )


def records(names: list[str]) -> list[DocumentRecord]:
    return [record(n, name, len(name)) for n, name in enumerate(names)]


NAMES = st.lists(st.sampled_from(["Plan.md", "plan-b.txt", "Notes.md", "budget.xlsx", "ä.md"]))


@given(NAMES, st.sampled_from([None, *SORT_KEYS]), st.booleans(), st.integers(1, 4))
def test_pages_partition_what_matches(
    names: list[str], sort: SortKey | None, descending: bool, limit: int
) -> None:
    docs = records(names)
    whole = page_of(docs, DocumentListing(sort=sort, descending=descending), lambda d: d.path)
    pages = []
    for offset in range(0, len(docs) + limit, limit):
        listing = DocumentListing(sort=sort, descending=descending, limit=limit, offset=offset)
        page = page_of(docs, listing, lambda d: d.path)
        assert page.total == len(docs)
        assert len(page.documents) <= limit
        pages.extend(page.documents)
    assert pages == whole.documents  # no document twice, none left out, one order


@given(NAMES, st.sampled_from(["plan", "PLAN", ".md", "ä", "zz"]))
def test_a_name_filter_keeps_the_names_that_contain_it_in_any_case(
    names: list[str], needle: str
) -> None:
    page = page_of(records(names), DocumentListing(name_contains=needle), lambda d: d.path)
    assert [d.path for d in page.documents] == [
        n for n in names if needle.casefold() in n.casefold()
    ]
    assert page.total == len(page.documents)


def test_names_are_read_only_when_the_filter_or_order_needs_them() -> None:
    read: list[str] = []

    def name_of(document: DocumentRecord) -> str:
        read.append(document.id)
        return document.path

    docs = records(["a", "b"])
    page_of(docs, DocumentListing(sort="size", limit=1), name_of)
    assert read == []
    page_of(docs, DocumentListing(sort="name"), name_of)
    assert sorted(read) == ["0000", "0001"]


def test_by_name_sorts_without_case_and_ties_by_id() -> None:
    page = page_of(records(["b", "A", "a"]), DocumentListing(sort="name"), lambda d: d.path)
    assert [d.id for d in page.documents] == ["0001", "0002", "0000"]


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"sort": "colour"}, "sort must be one of"),
        ({"limit": 0}, "limit must be between 1"),
        ({"limit": 1001}, "limit must be between 1"),
        ({"offset": -1}, "offset must be 0 or more"),
        ({"name_contains": "x" * 201}, "at most 200"),
    ],
)
def test_a_listing_out_of_range_says_what_is_accepted(
    fields: dict[str, object], words: str
) -> None:
    with pytest.raises(InvalidInput, match=words):
        DocumentListing(**fields)  # type: ignore[arg-type]
