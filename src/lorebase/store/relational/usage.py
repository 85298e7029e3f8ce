"""Usage accounting, written once: ``usage_hours``, one row per bucket, added to by upserts."""

from __future__ import annotations

from collections.abc import Sequence

from lorebase.store.relational.role import RelationalRole
from lorebase.usage import HOUR, Role, UsageKey, UsageRow

_KEY = "hour, kb_id, user_name, model, role"


class UsageMixin(RelationalRole):
    """:class:`~lorebase.store.base.Usage` over a relational database."""

    def add_usage(self, rows: Sequence[UsageRow]) -> None:
        if not rows:
            return
        with self._writing() as tx:
            tx.many(
                f"INSERT INTO usage_hours ({_KEY}, calls, texts, tokens, seconds) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
                f"ON CONFLICT ({_KEY}) DO UPDATE SET calls = usage_hours.calls + excluded.calls, "
                "texts = usage_hours.texts + excluded.texts, "
                "tokens = usage_hours.tokens + excluded.tokens, "
                "seconds = usage_hours.seconds + excluded.seconds",
                [
                    (
                        row.key.hour,
                        row.key.kb_id,
                        row.key.user,
                        row.key.model,
                        str(row.key.role),
                        row.calls,
                        row.texts,
                        row.tokens,
                        row.seconds,
                    )
                    for row in rows
                ],
            )

    def usage(self, since: float | None = None, user: str | None = None) -> list[UsageRow]:
        where = ["hour >= ?"]
        params: list[object] = [int(since or 0) // HOUR * HOUR]
        if user is not None:
            where.append("user_name = ?")
            params.append(user)
        with self._reading() as tx:
            found = tx.all(
                "SELECT min(hour), kb_id, user_name, model, role, sum(calls), sum(texts), "
                f"sum(tokens), sum(seconds) FROM usage_hours WHERE {' AND '.join(where)} "
                "GROUP BY kb_id, user_name, model, role ORDER BY sum(tokens) DESC, kb_id, "
                "user_name, model, role",
                params,
            )
        return [
            UsageRow(
                UsageKey(int(hour), int(kb_id), str(name), str(model), Role(role)),
                int(calls),
                int(texts),
                int(tokens),
                float(seconds),
            )
            for hour, kb_id, name, model, role, calls, texts, tokens, seconds in found
        ]
