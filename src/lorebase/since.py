"""The start of a time window people give (``--since``, ``?since=``): a date, a month, a
year or an ISO time, read as UTC — the same forms a search's date filters take."""

from __future__ import annotations

import datetime as dt

from lorebase.errors import InvalidInput
from lorebase.fields import DATE_FORMS, date_key, normalize_date

SINCE_FORMS = f"{DATE_FORMS} (UTC unless the time says otherwise)"


def parse_since(text: str) -> float:
    """``text`` as seconds since the epoch, or ``InvalidInput`` naming the accepted forms (never
    the text itself). Pure."""
    value = text.strip()
    canonical = normalize_date(value) if value and not value.startswith("D:") else None
    if canonical is None or not value[:4].isdigit():
        raise InvalidInput(f"a date must be one of {SINCE_FORMS}, like 2026-12-01")
    if canonical.endswith("Z"):
        moment = dt.datetime.fromisoformat(canonical[:-1]).replace(tzinfo=dt.UTC)
    else:
        moment = dt.datetime.fromisoformat(date_key(canonical)).replace(tzinfo=dt.UTC)
    return moment.timestamp()
