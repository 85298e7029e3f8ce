"""How much work a property test does: all of it in `make test`, a fifth in the fast lane
(`make test-fast` sets LOREBASE_TEST_LANE=fast), so a developer's loop stays under a minute
while the full run keeps every example it had."""

from __future__ import annotations

import os

FAST_LANE = os.environ.get("LOREBASE_TEST_LANE") == "fast"
FAST_SHARE = 5
FAST_FLOOR = 10


def examples(full: int) -> int:
    """``full`` examples, or a fifth of them (at least ten) in the fast lane."""
    return max(FAST_FLOOR, full // FAST_SHARE) if FAST_LANE else full
