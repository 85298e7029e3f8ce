"""Check, repair, backup, restore and vacuum of one base, against its first indexing pass in
the same run (issue 31).

1. A corpus is indexed into a fresh SQLite data directory (``Lorebase.add``, in process, with
   the embedder the environment configures: by default the bundled model); that first pass is
   timed.
2. ``check`` (the database's integrity check, the keyword index's files, count and a sample of
   terms, the vectors against their chunks) is timed on the sound store.
3. The largest file of the base's keyword index is cut in half; ``check`` finds it, and
   ``check(repair=True)`` (a rebuild of that index from the chunks, then a check again) is
   timed; the top five of the queries, keyword and hybrid, are compared with before.
4. ``backup`` into an empty folder is timed (its files and bytes taken), then ``restore`` of it
   into a fresh data directory, and the restored directory's top five compared.
5. A third of the files are deleted and a sync drops them; the reclaimable bytes are read, and
   ``vacuum`` is timed with the bytes before and after.

The corpus: a BEIR folder (``corpus.jsonl``; default ``../shared/data/ir/cisi``) written out as
one ``.txt`` file per record (``--limit`` keeps the first N); without it, a synthetic one of
``--synthetic N`` files.

    python bench/maintenance.py [--corpus FOLDER] [--limit N] [--queries N] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from corpora import DEFAULT_CORPUS, queries_of, write_beir, write_synthetic
from corpora import top5 as top5_of
from lorebase.app import Lorebase, open_lorebase
from lorebase.eval.datasets import (
    BeirSet,
    is_beir,
)
from lorebase.settings import Settings

KB = "bench"


def write_corpus(corpus: Path, folder: Path, limit: int, synthetic: int) -> str:
    if is_beir(corpus):
        return f"{corpus.name} ({write_beir(BeirSet(corpus), folder, limit)} records)"
    return f"synthetic ({write_synthetic(folder, synthetic)} files)"


def file_sizes(database: Path) -> dict[str, int]:
    """The bytes of the database, its WAL and its keyword indexes."""
    wal = database.with_name(database.name + "-wal")
    lexical = database.with_suffix(".lexical")
    return {
        "database": database.stat().st_size,
        "wal": wal.stat().st_size if wal.exists() else 0,
        "keyword_indexes": sum(p.stat().st_size for p in lexical.rglob("*") if p.is_file()),
    }


def timed(started: float) -> float:
    return time.perf_counter() - started


def run(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="lorebase-maintenance-bench-") as scratch:
        root = Path(scratch)
        files = root / "corpus"
        corpus = Path(args.corpus)
        label = write_corpus(corpus, files, args.limit, args.synthetic)
        queries = queries_of(corpus, args.queries)
        source = Settings.from_env(root / "source")
        result: dict[str, Any] = {"corpus": label}
        with open_lorebase(settings=source) as lb:
            started = time.perf_counter()
            lb.add([files], kb=KB)
            first_pass = timed(started)
            kb = lb.kb(KB)
            before = top5_of(lb, queries, KB, by="chunk")

            started = time.perf_counter()
            sound = lb.check()
            check_seconds = timed(started)

            index = source.database.with_suffix(".lexical") / f"kb{kb.id}"
            largest = max(
                (p for p in index.iterdir() if p.is_file()), key=lambda p: p.stat().st_size
            )
            os.truncate(largest, largest.stat().st_size // 2)
            damaged = lb.check()
            started = time.perf_counter()
            repaired = lb.check(repair=True)
            repair_seconds = timed(started)
            after_repair = top5_of(lb, queries, KB, by="chunk")

            started = time.perf_counter()
            made = lb.backup(root / "backup")
            backup_seconds = timed(started)
        target = Settings.from_env(root / "restored")
        started = time.perf_counter()
        restored = Lorebase.restore(root / "backup", target)
        restore_seconds = timed(started)
        with open_lorebase(settings=target) as lb:
            after_restore = top5_of(lb, queries, KB, by="chunk")
            for path in sorted(files.iterdir())[::3]:
                path.unlink()
            lb.sync(KB)
            left = lb.kb(KB).documents
            top5_of(lb, queries, KB, by="chunk")  # the keyword index caught up with the deletes
            files_before = file_sizes(target.database)
            reclaimable = lb.reclaimable()
            started = time.perf_counter()
            vacuumed = lb.vacuum()
            vacuum_seconds = timed(started)
            after_vacuum = lb.reclaimable()
            files_after = file_sizes(target.database)
            still_sound = lb.check().ok
        result |= {
            "documents": kb.documents,
            "chunks": kb.chunks,
            "embedding_identity": kb.identity_key,
            "first_pass_seconds": round(first_pass, 2),
            "check_seconds": round(check_seconds, 2),
            "check_ok": sound.ok,
            "truncated_found": [f.area.value for f in damaged.remaining],
            "repair_seconds": round(repair_seconds, 2),
            "repair_ok": repaired.ok,
            "backup_seconds": round(backup_seconds, 2),
            "backup_files": made.files,
            "backup_bytes": made.bytes,
            "restore_seconds": round(restore_seconds, 2),
            "restored_bytes": restored.bytes,
            "vacuum_seconds": round(vacuum_seconds, 2),
            "documents_after_deletes": left,
            "reclaimable_bytes_before_vacuum": reclaimable.total,
            "reclaimable_database_bytes": reclaimable.database_bytes,
            "reclaimable_index_bytes": reclaimable.index_bytes,
            "files_before_vacuum": files_before,
            "files_after_vacuum": files_after,
            "reclaimable_bytes_after_vacuum": after_vacuum.total,
            "vacuum_before_bytes": vacuumed.before_bytes,
            "vacuum_after_bytes": vacuumed.after_bytes,
            "sound_after_vacuum": still_sound,
            "check_over_first_pass": round(check_seconds / first_pass, 4),
            "repair_over_first_pass": round(repair_seconds / first_pass, 4),
            "backup_over_first_pass": round(backup_seconds / first_pass, 4),
            "restore_over_first_pass": round(restore_seconds / first_pass, 4),
            "vacuum_over_first_pass": round(vacuum_seconds / first_pass, 4),
            "top5_identical_after_repair": sum(
                a == b for a, b in zip(before, after_repair, strict=True)
            ),
            "top5_identical_after_restore": sum(
                a == b for a, b in zip(before, after_restore, strict=True)
            ),
            "top5_compared": len(before),
        }
        return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", default=str(DEFAULT_CORPUS))
    parser.add_argument("--limit", type=int, default=0, help="records of the corpus (0: all)")
    parser.add_argument("--synthetic", type=int, default=1500, help="files without a corpus")
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    result = run(parser.parse_args())
    if parser.parse_args().json:
        print(json.dumps(result, indent=1))
        return
    for key, value in result.items():
        print(f"{key}: {value}")


if __name__ == "__main__":
    main()
