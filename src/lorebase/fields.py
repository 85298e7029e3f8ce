"""What people know about a document — its tags, author, title, dates, kind and any other key
of its metadata — as fields a search filters on.

A document's fields are its extracted metadata (front matter, document properties, mail
headers), its title and kind, the file's modification time when its own properties give
none, and the tags users set (kept apart: a new reading of the file leaves them alone). Each
is stored as rows of ``(field, value, folded)`` (:func:`field_rows`): one per value of a list,
``folded`` the value case-folded, or, for a date, in one canonical ISO form
(:func:`normalize_date`; a year or month standing for its first day, :func:`date_key`), so
that equality ignores case and a date range is a range of text.

A filter (:class:`Condition`) is a field, an operator and values: ``tags=policy`` (a list
field matches when any of its values does), ``author=Ann|Bob`` (any of these), ``status!=draft``
(no value equal), ``date>=2025-01-01`` (ranges only over dates: ``2025``, ``2025-03``,
``2025-03-04`` and full ISO times are accepted; ``date<=2025`` holds for every day of 2025).
Several conditions must all hold. :func:`parse_condition` reads the CLI's form,
:func:`conditions_from_json` the REST body's ``filter`` object. Pure; no imports beyond the
standard library.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from lorebase.errors import InvalidInput

TAGS = "tags"
BUILTIN_FIELDS = ("tags", "author", "title", "date", "created", "modified", "kind")
"""Fields every base knows (a document may still have no value for one)."""
DATE_FIELDS = frozenset({"date", "created", "modified"})
"""Fields whose values are dates: normalised when stored, and the only ones ranges apply to."""
MAX_FIELD_CHARS = 200
"""A stored value (and a value filtered on) is cut to this many characters."""
MAX_VALUES_PER_CONDITION = 50
MAX_CONDITIONS = 20
MAX_FIELD_NAME = 64
DATE_FORMS = "YYYY, YYYY-MM, YYYY-MM-DD or YYYY-MM-DDTHH:MM[:SS][Z|±HH:MM]"
_FIELD_NAME = re.compile(r"^[a-z0-9][a-z0-9_.:-]{0,63}$")
PAST_PREFIX = "~"
"""Sorts after every character of a canonical date: ``value + "~"`` bounds all its refinements
(``2025-03`` < ``2025-03-04T10:00:00Z`` < ``2025-03~``)."""


class Op(StrEnum):
    EQ = "="
    NE = "!="
    GT = ">"
    GE = ">="
    LT = "<"
    LE = "<="

    @property
    def is_range(self) -> bool:
        return self not in (Op.EQ, Op.NE)


_JSON_OPS = {
    "$eq": Op.EQ,
    "$in": Op.EQ,
    "$ne": Op.NE,
    "$nin": Op.NE,
    "$gt": Op.GT,
    "$gte": Op.GE,
    "$lt": Op.LT,
    "$lte": Op.LE,
}
_CLI_FORM = re.compile(r"^\s*([^=!<>\s]+)\s*(!=|>=|<=|=|>|<)\s*(.*?)\s*$", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Condition:
    """``field op values``: for ``=`` any of ``values`` (folded), for ``!=`` none of them, for a
    range the one canonical date in ``values``."""

    field: str
    op: Op
    values: tuple[str, ...]

    def bounds(self) -> tuple[str | None, str | None]:
        """A range's folded values as ``lower <= folded < upper`` (None: unbounded). Pure."""
        (value,) = self.values
        past = value + PAST_PREFIX
        return {
            Op.GE: (value, None),
            Op.GT: (past, None),
            Op.LT: (None, value),
            Op.LE: (None, past),
        }[self.op]

    def __str__(self) -> str:
        return f"{self.field}{self.op}{'|'.join(self.values)}"


_CONTROL = dict.fromkeys([*range(32), 127], " ")


def fold(value: str) -> str:
    """A value as matched: case-folded, control characters and runs of whitespace one space,
    bounded. Pure."""
    return " ".join(value.translate(_CONTROL).casefold().split())[:MAX_FIELD_CHARS]


def normalize_date(value: str) -> str | None:
    """A date in one canonical form — ``2025``, ``2025-03``, ``2025-03-04`` or, with a time,
    ``2025-03-04T10:00:00Z`` in UTC — or None when ``value`` is none of the accepted forms
    (see :data:`DATE_FORMS`; PDF dates ``D:20250304…`` and mail dates are read too). Pure."""
    text = value.strip()
    if text.startswith("D:"):  # PDF: D:YYYYMMDDHHmmSS+HH'mm'
        text = _pdf_date(text[2:]) or ""
    if re.fullmatch(r"\d{4}", text):
        return text if int(text) >= 1 else None
    if m := re.fullmatch(r"(\d{4})-(\d{2})", text):
        return text if 1 <= int(m[2]) <= 12 else None
    try:
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
            return dt.date.fromisoformat(text).isoformat()
        moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00").replace(" ", "T", 1))
    except ValueError:
        return _mail_date(value)
    if moment.tzinfo is not None:
        moment = moment.astimezone(dt.UTC).replace(tzinfo=None)
    return moment.replace(microsecond=0).isoformat() + "Z"


_PDF_DATE = re.compile(
    r"(\d{4})(\d{2})?(\d{2})?(\d{2})?(\d{2})?(\d{2})?([Zz+-])?(\d{2})?'?(\d{2})?"
)


def _pdf_date(text: str) -> str | None:
    m = _PDF_DATE.match(text)
    if m is None:
        return None
    year, month, day, hour, minute, second, sign, tz_h, tz_m = m.groups()
    if hour is None:
        return "-".join(p for p in (year, month, day) if p)
    zone = ""
    if sign in ("+", "-") and tz_h:
        zone = f"{sign}{tz_h}:{tz_m or '00'}"
    elif sign in ("Z", "z"):
        zone = "+00:00"
    return f"{year}-{month}-{day}T{hour}:{minute or '00'}:{second or '00'}{zone}"


def _mail_date(value: str) -> str | None:
    from email.utils import parsedate_to_datetime  # only for the odd mail date

    try:
        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if moment.tzinfo is not None:
        moment = moment.astimezone(dt.UTC).replace(tzinfo=None)
    return moment.replace(microsecond=0).isoformat() + "Z"


def date_key(canonical: str) -> str:
    """A stored date as it is matched: a year or a month stands for its first day, so that it
    sorts among full dates (``2025`` is ``2025-01-01``: on or after ``2025-01-01``, before
    ``2025-02``). Pure."""
    return canonical + {4: "-01-01", 7: "-01"}.get(len(canonical), "")


def timestamp_date(seconds: float) -> str:
    """A file's modification time (seconds since the epoch) as a canonical UTC date. Pure."""
    moment = dt.datetime.fromtimestamp(seconds, dt.UTC).replace(tzinfo=None, microsecond=0)
    return moment.isoformat() + "Z"


def field_rows(
    metadata: Mapping[str, str | Sequence[str]],
    *,
    title: str | None = None,
    kind: str | None = None,
    mtime: float | None = None,
) -> list[tuple[str, str, str]]:
    """A document's stored fields as ``(field, value, folded)`` rows, one per value, each
    once: every metadata key (its name as a field; a date field's value normalised, dropped
    when it is not a date), the title and kind, and ``modified`` from ``mtime`` when the
    metadata has none. Pure."""
    found: dict[tuple[str, str], str] = {}

    def add(name: str, value: str) -> None:
        value = " ".join(value.translate(_CONTROL).split())[:MAX_FIELD_CHARS]
        if name in DATE_FIELDS:
            canonical = normalize_date(value)
            if canonical is None:
                return
            value, folded = canonical, date_key(canonical)
        else:
            folded = fold(value)
        if value and _FIELD_NAME.match(name):
            found.setdefault((name, folded), value)

    for name, given in metadata.items():
        for value in [given] if isinstance(given, str) else given:
            add(name, value)
    if title:
        add("title", title)
    if kind:
        add("kind", kind)
    if mtime is not None and not any(name == "modified" for name, _ in found):
        add("modified", timestamp_date(mtime))
    return [(name, value, folded) for (name, folded), value in found.items()]


def parse_condition(text: str) -> Condition:
    """A condition in the CLI's form ``field<op>value`` (``=`` values may be ``a|b``: any of
    them). ``InvalidInput`` saying the form when it is not one."""
    m = _CLI_FORM.match(text)
    if m is None or not m[3]:
        raise InvalidInput(
            "a filter is FIELD=VALUE, FIELD!=VALUE or a date range such as 'date>=2025-01-01' "
            "(=, !=, >, >=, <, <=; VALUE may list alternatives as a|b)"
        )
    field_name, op, value = m[1], Op(m[2]), m[3]
    return condition(field_name, op, value.split("|") if not op.is_range else [value])


def conditions_from_json(body: object, *, nested: bool = False) -> list[Condition]:
    """Conditions from a REST ``filter`` object: ``{"tags": "policy"}``, ``{"author":
    ["Ann", "Bob"]}`` (any of), ``{"date": {"$gte": "2025-01-01", "$lt": "2026"}}``,
    ``{"status": {"$ne": "draft"}}`` (``$eq $in $ne $nin $gt $gte $lt $lte``), and
    ``{"$and": [{"tags": "a"}, {"tags": "b"}]}`` (all of them: tagged both)."""
    if body is None:
        return []
    if not isinstance(body, Mapping):
        raise InvalidInput('filter must be an object such as {"tags": "policy"}')
    found: list[Condition] = []
    for name, given in body.items():
        if not isinstance(name, str):
            raise InvalidInput("filter fields are strings")
        if name == "$and":  # every one of several filter objects (two conditions on a field)
            if nested or not isinstance(given, list):
                raise InvalidInput('$and takes a list of filter objects: [{"tags": "a"}, …]')
            if len(given) > MAX_CONDITIONS:
                raise InvalidInput(f"$and takes at most {MAX_CONDITIONS} filter objects")
            for part in given:
                found += conditions_from_json(part, nested=True)
        elif isinstance(given, Mapping):
            for op_name, value in given.items():
                op = _JSON_OPS.get(str(op_name))
                if op is None:
                    raise InvalidInput(
                        f"unknown filter operator {str(op_name)[:20]!r}; use one of "
                        + ", ".join(_JSON_OPS)
                    )
                found.append(condition(name, op, _json_values(value, single=op.is_range)))
        else:
            found.append(condition(name, Op.EQ, _json_values(given, single=False)))
    return checked(found)


def _json_values(value: object, *, single: bool) -> list[str]:
    values = value if isinstance(value, list) and not single else [value]
    if not values or not all(isinstance(v, str | int | float) for v in values):
        raise InvalidInput("a filter value is a string, a number or (for =) a list of them")
    return [str(v) for v in values]


def condition(field_name: str, op: Op, values: Iterable[str]) -> Condition:
    """A checked condition: a well-formed field name, values folded (a range's one value a
    date in its canonical form); ``InvalidInput`` saying what is accepted otherwise."""
    name = field_name.strip().casefold()
    if not _FIELD_NAME.match(name):
        raise InvalidInput(
            "a filter field is a name of letters, digits, '_', '.', ':' or '-' "
            f"(at most {MAX_FIELD_NAME} characters), such as tags, author or date"
        )
    given = [v for v in (str(v).strip() for v in values) if v]
    if not given:
        raise InvalidInput(f"the filter on {name} needs a value")
    if len(given) > MAX_VALUES_PER_CONDITION:
        raise InvalidInput(f"a filter lists at most {MAX_VALUES_PER_CONDITION} values")
    if op.is_range and name not in DATE_FIELDS:
        raise InvalidInput(
            f"ranges (>, >=, <, <=) compare dates: the fields {', '.join(sorted(DATE_FIELDS))}; "
            f"use = or != on {name}"
        )
    if name in DATE_FIELDS:
        dates = [normalize_date(v) for v in given]
        if any(d is None for d in dates):
            raise InvalidInput(f"{name} takes dates: {DATE_FORMS}")
        if op.is_range and len(dates) != 1:
            raise InvalidInput("a range compares with one date")
        return Condition(name, op, tuple(dict.fromkeys(d for d in dates if d)))
    return Condition(name, op, tuple(dict.fromkeys(fold(v) for v in given)))


def checked(conditions: Sequence[Condition]) -> list[Condition]:
    """At most :data:`MAX_CONDITIONS` conditions."""
    if len(conditions) > MAX_CONDITIONS:
        raise InvalidInput(f"a search takes at most {MAX_CONDITIONS} filters")
    return list(conditions)


def unknown_fields(conditions: Iterable[Condition], known: Iterable[str]) -> list[str]:
    """The fields ``conditions`` name that neither every base knows nor ``known`` holds."""
    names = {*BUILTIN_FIELDS, *known}
    return sorted({c.field for c in conditions} - names)


def unknown_field_message(unknown: Sequence[str], known: Iterable[str]) -> str:
    names = sorted({*BUILTIN_FIELDS, *known})
    shown = ", ".join(names[:40]) + (" …" if len(names) > 40 else "")
    return f"no document has the field {', '.join(unknown)}; the fields known here: {shown}"
