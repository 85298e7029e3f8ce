"""The relational store is written once: the SQLite and PostgreSQL backends hold only what
truly differs (their lexical and vector engines, their schema, the hooks of
:mod:`lorebase.store.relational`). This counts the lines the two write alike — after folding
the backends' names and placeholders, leaving out blank lines, comments, imports and lone
punctuation — so that a feature written twice shows up here rather than in review."""

from __future__ import annotations

import collections
import re
from pathlib import Path

import lorebase

PACKAGE = Path(lorebase.__file__).parent
TWINS = [
    *(
        (f"store/sqlite/{path.name}", f"store/postgres/{path.name}")
        for path in sorted((PACKAGE / "store" / "sqlite").glob("*.py"))
        if (PACKAGE / "store" / "postgres" / path.name).is_file()
    ),
    ("accounts/sqlite.py", "accounts/postgres.py"),
    ("accounts/schema.py", "accounts/postgres_schema.py"),
    ("vault/storage.py", "vault/postgres_storage.py"),
    ("ingest/queue.py", "ingest/jobs_postgres.py"),
]
CEILING = 154
"""Lines alike today (154, two of them the stores' constructors' ``def __init__(`` and
``) -> None:``, wrapped in both since the SQLite store's took ``follow_writes``; 152 before,
six of them the DDL of the grants, usage and own-embedder-key tables both schemas make — their
key and check clauses; 146 before, two of them the table of notes'
earlier versions both schemas make; 144 before, two of them the indexes of the fields searches
filter on and of the regions OCR read, which both schemas make; 142 before, seven of them the
signatures of the maintenance role each backend implements: its check hook, repair, reclaimable,
vacuum, backup, its class and database; 133 before, six of them the DDL of two tables both
schemas make: a document's container and metadata, a base's languages; 127 before them; 229
before the read side, the stores' composition, the databases' life, the accounts' opening and
the queues' admission and sweep were written once; 825 before the relational core). What is left
is mostly the signatures of one interface implemented twice (the hooks of ``RelationalRole``,
the keyword engines, ``BlobStorage``, the job queues), the schemas and their migrations, and a
few idioms. Lower it as it falls."""

_SKIPPED = {"(", ")", "[", "]", "{", "}", ":", ",", '"""', "'''", "),", "],", "):"}
_BACKEND_NAMES = re.compile(r"(?i)sqlite|postgres(ql)?|pg")


def normalised(line: str) -> str | None:
    """A line as both backends would write it, or ``None`` for one that says nothing."""
    text = line.strip()
    if not text or text.startswith(("#", "import ", "from ")) or text in _SKIPPED:
        return None
    text = re.sub(r"\s+", " ", _BACKEND_NAMES.sub("X", text.replace("%s", "?")))
    return text if len(text) >= 8 else None


def alike(first: str, second: str) -> int:
    """How many lines of ``second`` stand in ``first`` too (each counted as often as both
    hold it)."""
    lines = [
        collections.Counter(n for n in map(normalised, text.splitlines()) if n)
        for text in (first, second)
    ]
    return sum((lines[0] & lines[1]).values())


def test_normalising_folds_names_and_placeholders_only() -> None:
    assert normalised("    rows = conn.execute('SELECT 1 WHERE id = %s')") == normalised(
        "rows = conn.execute('SELECT 1 WHERE id = ?')"
    )
    assert normalised("class SqliteStore(Store):") == normalised("class PostgresStore(Store):")
    assert normalised("from lorebase import x") is None
    assert normalised("    ),") is None
    assert alike("a = compute(one)\nb = compute(two)\n", "b = compute(two)\n") == 1


def test_the_backends_write_little_twice() -> None:
    counts = {
        pair: alike((PACKAGE / pair[0]).read_text(), (PACKAGE / pair[1]).read_text())
        for pair in TWINS
    }
    total = sum(counts.values())
    worst = sorted(counts.items(), key=lambda item: -item[1])[:3]
    assert total <= CEILING, f"{total} lines written in both backends; most in {worst}"
