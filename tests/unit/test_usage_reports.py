"""Reading usage while the database will not take this process's latest counts: the read
answers from what is written, and the counts wait for the next write."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from lorebase.service.usage import UsageReports
from lorebase.usage import Role, UsageMeter, UsageRow


class Refusing:
    """A store whose writes fail (a locked database) and whose reads answer."""

    def __init__(self) -> None:
        self.written: list[UsageRow] = []
        self.refuse = True

    def add_usage(self, rows: Sequence[UsageRow]) -> None:
        if self.refuse:
            raise sqlite3.OperationalError("database is locked")
        self.written.extend(rows)

    def usage(self, since: float | None, user: str | None) -> list[UsageRow]:
        return list(self.written)


def test_a_read_answers_when_the_latest_counts_cannot_be_written_yet() -> None:
    store = Refusing()
    meter = UsageMeter(store, clock=lambda: 7200.0)
    meter.record(1, "model", Role.EMBEDDING, texts=2, tokens=20, seconds=0.1, user="alice")
    store_any: Any = store
    reports = UsageReports(store_any, meter)
    assert reports.usage() == []  # answered, from what is written (nothing yet)
    store.refuse = False
    assert len(reports.usage()) == 1  # the counts waited for the next write
