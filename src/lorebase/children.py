"""Child Python processes that run lorebase code (extraction workers, the model's int8 build)."""

from __future__ import annotations

import os
from pathlib import Path

SOURCE_ROOT = str(Path(__file__).resolve().parents[1])
"""The folder this lorebase was imported from."""


def child_environment() -> dict[str, str]:
    """This process's environment, with the folder lorebase came from first on the path: the
    child imports the same lorebase as this process, wherever that came from."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (SOURCE_ROOT, env.get("PYTHONPATH")) if p)
    return env
