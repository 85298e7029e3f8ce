"""lorebase: a local-first knowledge base with hybrid retrieval and cited answers.

import lorebase
with lorebase.open("~/.lorebase") as lb:
    lb.add([Path("~/notes")], kb="notes")
    for hit in lb.search("vacation policy", kb="notes").hits:
        print(hit.provenance.citation(), hit.snippet)
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lorebase.app import Lorebase

__version__ = "0.1.0"

__all__ = ["__version__", "open"]


def open(data_dir: Path | str | None = None) -> Lorebase:
    """Open (creating if needed) the lorebase whose data lives in ``data_dir``."""
    from lorebase.app import open_lorebase

    return open_lorebase(Path(data_dir).expanduser() if data_dir is not None else None)
