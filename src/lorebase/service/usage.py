"""Reading usage: what model calls cost, as a caller may see it (administrators: everyone's;
a user: their own), written out first so this process's latest counts are in it."""

from __future__ import annotations

import logging

from lorebase.accounts.access import Caller
from lorebase.store.base import Store
from lorebase.usage import UsageMeter, UsageRow

log = logging.getLogger(__name__)


class UsageReports:
    """Usage rows for callers (see :mod:`lorebase.usage` for how they are counted)."""

    def __init__(self, store: Store, meter: UsageMeter) -> None:
        self._store = store
        self._meter = meter

    def usage(self, caller: Caller | None = None, since: float | None = None) -> list[UsageRow]:
        """The counts since ``since`` summed per base, user, model and role: every user's for
        an administrator (or the operator, without a caller), the caller's own otherwise."""
        try:
            self._meter.flush()  # what this process counted since its last write
        except Exception as error:  # a busy or unreachable database: answer from what is written
            log.warning("usage counts could not be written yet (%s)", type(error).__name__)
        mine = caller is not None and not caller.is_admin
        return self._store.usage(since, caller.user.name if mine and caller else None)
