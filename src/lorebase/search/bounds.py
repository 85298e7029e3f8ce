"""What a search may ask: which arms it runs (:class:`Mode`) and the bounds of its fields.
Every surface reads them (the command line's options, the API's and the agents' schemas), and
they load without the request and its hits: ``lorebase --help`` builds every option from them."""

from __future__ import annotations

import re
from enum import StrEnum

MAX_TOP_K = 100
MAX_NEIGHBORS = 2
MAX_QUERY_CHARS = 2000
MAX_PATH_PREFIX_CHARS = 1024
MAX_LANGUAGE_CHARS = 32
# A language name as the extractors give it: python, cpp, csharp, objective-c, f#, c++.
LANGUAGE_PATTERN = re.compile(r"[a-z0-9][a-z0-9_+#.-]*")


class Mode(StrEnum):
    """Which arms a search runs: both fused (the default), BM25 keywords only, or vectors
    only."""

    HYBRID = "hybrid"
    KEYWORD = "keyword"
    DENSE = "dense"
