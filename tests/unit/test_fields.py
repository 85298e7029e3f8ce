"""lorebase.fields: the filter language (CLI and REST forms), dates in every accepted form,
and the rows a document's metadata becomes."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lorebase.errors import InvalidInput
from lorebase.fields import (
    DATE_FORMS,
    MAX_CONDITIONS,
    Condition,
    Op,
    checked,
    conditions_from_json,
    date_key,
    field_rows,
    normalize_date,
    parse_condition,
    unknown_field_message,
    unknown_fields,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("tags=policy", Condition("tags", Op.EQ, ("policy",))),
        ("Author = Ann Lee", Condition("author", Op.EQ, ("ann lee",))),
        ("author=Ann|Bob|ann", Condition("author", Op.EQ, ("ann", "bob"))),
        ("status!=Draft", Condition("status", Op.NE, ("draft",))),
        ("date>=2025-01-01", Condition("date", Op.GE, ("2025-01-01",))),
        ("date<2025", Condition("date", Op.LT, ("2025",))),
        (
            "modified<=2025-03-04T10:00:00+02:00",
            Condition("modified", Op.LE, ("2025-03-04T08:00:00Z",)),
        ),
        ("date=2025-03", Condition("date", Op.EQ, ("2025-03",))),
        ("review.owner=ann", Condition("review.owner", Op.EQ, ("ann",))),
    ],
)
def test_the_cli_form(text: str, expected: Condition) -> None:
    assert parse_condition(text) == expected


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("tags", "FIELD=VALUE"),
        ("tags=", "FIELD=VALUE"),
        ("=policy", "FIELD=VALUE"),
        ("date>=yesterday", DATE_FORMS),
        ("date>=2025-13", DATE_FORMS),
        ("date=2025-02-30", DATE_FORMS),
        ("author>=Ann", "ranges (>, >=, <, <=) compare dates"),
        ("published>=2025", "use = or != on published"),
        ("ta gs=x", "FIELD=VALUE"),
        ("t$gs=x", "a filter field is a name"),
        ("date>=2025|2026", DATE_FORMS),
    ],
)
def test_a_malformed_condition_says_the_accepted_forms(text: str, says: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_condition(text)
    assert says in str(caught.value)


def test_the_json_form() -> None:
    assert conditions_from_json(None) == []
    assert conditions_from_json(
        {
            "tags": "Policy",
            "author": ["Ann", "Bob"],
            "status": {"$ne": "draft", "$nin": ["old"]},
            "date": {"$gte": "2025-01-01", "$lt": "2026"},
            "pages": 12,
        }
    ) == [
        Condition("tags", Op.EQ, ("policy",)),
        Condition("author", Op.EQ, ("ann", "bob")),
        Condition("status", Op.NE, ("draft",)),
        Condition("status", Op.NE, ("old",)),
        Condition("date", Op.GE, ("2025-01-01",)),
        Condition("date", Op.LT, ("2026",)),
        Condition("pages", Op.EQ, ("12",)),
    ]


def test_and_holds_several_conditions_on_one_field() -> None:
    assert conditions_from_json({"$and": [{"tags": "a"}, {"tags": {"$in": ["b", "c"]}}]}) == [
        Condition("tags", Op.EQ, ("a",)),
        Condition("tags", Op.EQ, ("b", "c")),
    ]


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (["tags"], "must be an object"),
        ({"tags": {"$like": "x"}}, "unknown filter operator"),
        ({"tags": {"a": 1}}, "unknown filter operator"),
        ({"tags": [{"nested": 1}]}, "a string, a number"),
        ({"tags": []}, "a string, a number"),
        ({"tags": None}, "a string, a number"),
        ({"date": {"$gte": ["2025", "2026"]}}, "a string, a number"),
        ({f"f{i}": "x" for i in range(MAX_CONDITIONS + 1)}, "at most"),
        ({"tags": ["x"] * 51}, "at most"),
        ({"$and": {"tags": "a"}}, "list of filter objects"),
        ({"$and": ["tags=a"]}, "must be an object"),
        ({"$and": [{"$and": [{"tags": "a"}]}]}, "list of filter objects"),
        ({"$and": [{"t": "x"}] * (MAX_CONDITIONS + 5)}, "at most"),
        ({"$and": [{}] * (MAX_CONDITIONS + 1) + [{"tags": "x"}]}, "at most"),
    ],
)
def test_a_malformed_json_filter_is_refused(body: object, says: str) -> None:
    with pytest.raises(InvalidInput, match=says):
        conditions_from_json(body)


@pytest.mark.parametrize(
    ("given", "canonical"),
    [
        ("2025", "2025"),
        ("2025-03", "2025-03"),
        ("2025-03-04", "2025-03-04"),
        ("2025-03-04T10:00", "2025-03-04T10:00:00Z"),
        ("2025-03-04 10:00:05.123", "2025-03-04T10:00:05Z"),
        ("2025-03-04T10:00:00Z", "2025-03-04T10:00:00Z"),
        ("2025-03-04T01:00:00+02:00", "2025-03-03T23:00:00Z"),
        ("D:20250304101500+01'00'", "2025-03-04T09:15:00Z"),
        ("D:20250304", "2025-03-04"),
        ("Tue, 4 Mar 2025 10:00:00 +0100", "2025-03-04T09:00:00Z"),
        ("last week", None),
        ("2025-00", None),
        ("0000", None),
        ("", None),
    ],
)
def test_dates_in_every_accepted_form(given: str, canonical: str | None) -> None:
    assert normalize_date(given) == canonical


moments = st.datetimes(
    min_value=dt.datetime(1900, 1, 1), max_value=dt.datetime(2200, 1, 1), timezones=st.just(dt.UTC)
)


@given(moments, moments)
def test_canonical_dates_sort_as_the_moments_do(a: dt.datetime, b: dt.datetime) -> None:
    first, second = (normalize_date(m.isoformat()) for m in (a, b))
    assert first is not None and second is not None
    a, b = a.replace(microsecond=0), b.replace(microsecond=0)
    assert (first < second) == (a < b) and (first == second) == (a == b)
    assert normalize_date(first) == first  # canonical stays canonical


@given(moments)
def test_a_day_bounds_every_moment_in_it(moment: dt.datetime) -> None:
    canonical = normalize_date(moment.isoformat())
    assert canonical is not None
    for precision in (4, 7, 10):
        prefix = canonical[:precision]
        low, high = Condition("date", Op.LE, (prefix,)).bounds()
        assert low is None and high is not None and canonical < high
        low, high = Condition("date", Op.GT, (prefix,)).bounds()
        assert low is not None and high is None and not canonical >= low
        low, _ = Condition("date", Op.GE, (prefix,)).bounds()
        assert low is not None and date_key(prefix) >= low


def test_a_documents_rows() -> None:
    rows = field_rows(
        {
            "tags": ("Policy", "HR", "policy "),
            "author": "Ann  Lee",
            "date": "2025-03-04T10:00:00+01:00",
            "created": "not a date",
            "Bad Key!": "x",
        },
        title="Leave",
        kind="md",
        mtime=0.0,
    )
    assert sorted(rows) == [
        ("author", "Ann Lee", "ann lee"),
        ("date", "2025-03-04T09:00:00Z", "2025-03-04T09:00:00Z"),
        ("kind", "md", "md"),
        ("modified", "1970-01-01T00:00:00Z", "1970-01-01T00:00:00Z"),
        ("tags", "HR", "hr"),
        ("tags", "Policy", "policy"),
        ("title", "Leave", "leave"),
    ]
    assert ("date", "2025", "2025-01-01") in field_rows({"date": "2025"})
    # A modification date of its own wins over the file's.
    assert [r for r in field_rows({"modified": "2024-01-02"}, mtime=0.0) if r[0] == "modified"] == [
        ("modified", "2024-01-02", "2024-01-02")
    ]


def test_unknown_fields_are_named_with_those_known() -> None:
    wanted = checked([parse_condition("tags=x"), parse_condition("colour=red")])
    assert unknown_fields(wanted, ["status"]) == ["colour"]
    assert unknown_fields(wanted, ["colour"]) == []
    message = unknown_field_message(["colour"], ["status"])
    assert "colour" in message and "status" in message and "tags" in message and "date" in message
