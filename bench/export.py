"""Export and import of one base, against the first indexing pass of the same base in the
same run (issue 31).

1. A corpus is indexed into a fresh SQLite data directory (``lorebase add``, in process, with
   the embedder the environment configures: by default the bundled model); that first pass is
   timed.
2. The base is exported (``Lorebase.export_kb``) to one file: timed, and its size taken.
3. The file is imported into a second fresh SQLite data directory (``Lorebase.import_kb``,
   vectors kept): timed (its first use of the embedder, to check the identity, loads the
   model); then once more under another name (the model loaded, every id taken here, so every
   document gets a new one). With ``--postgres`` it is imported into a PostgreSQL database too
   (``--store-url``, else a throwaway server's) and exported from there, and the same files
   are indexed there by PostgreSQL itself (another base) to tell its own ranking from the
   import's.
4. The top five of the corpus's first ``--queries`` queries, keyword and hybrid, are compared
   between the base and its import (document paths and order).

The figures: export and import time over the first pass's, and the file's size against the
corpus's and against the source data directory's.

The corpus: a BEIR folder (``corpus.jsonl``; default ``../shared/data/ir/cisi``) is written
out as one ``.txt`` file per record (``--limit`` keeps the first N); without it, a synthetic
one of ``--synthetic N`` files.

    python bench/export.py [--corpus FOLDER] [--limit N] [--queries N]
                           [--postgres [--store-url URL]] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from corpora import DEFAULT_CORPUS, queries_of, top5, write_beir, write_synthetic
from lorebase.app import open_lorebase
from lorebase.eval.datasets import (
    BeirSet,
    is_beir,
)
from lorebase.settings import Settings
from lorebase.vault.keys import DataKey

KB = "bench"


@contextlib.contextmanager
def postgres_url(given: str | None) -> Iterator[str]:
    """A fresh database: of the server ``given`` names (its URL, used as is), else of a
    throwaway server started for the run (``tests/postgres_server.py``)."""
    if given:
        yield given
        return
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    import postgres_server

    with postgres_server.running(tcp=False) as server:
        yield server.new_database("bench")


def folder_bytes(folder: Path, leave_out: str | None = None) -> int:
    """The bytes of the files under ``folder`` (not those under its ``leave_out`` folder)."""
    skip = folder / leave_out if leave_out else None
    return sum(
        p.stat().st_size
        for p in folder.rglob("*")
        if p.is_file() and (skip is None or not p.is_relative_to(skip))
    )


def run(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="lorebase-export-bench-") as scratch:
        root = Path(scratch)
        files = root / "corpus"
        corpus = Path(args.corpus)
        if is_beir(corpus):
            count = write_beir(BeirSet(corpus), files, args.limit)
            label = f"{corpus.name} ({count} records)"
        else:
            count = write_synthetic(files, args.synthetic)
            label = f"synthetic ({count} files)"
        queries = queries_of(corpus, args.queries)
        with open_lorebase(settings=Settings.from_env(root / "source")) as lb:
            started = time.perf_counter()
            report = lb.add([files], kb=KB)
            first_pass = time.perf_counter() - started
            kb = lb.kb(KB)
            before = top5(lb, queries, KB)
            started = time.perf_counter()
            exported = lb.export_kb(KB, root / "bench.zip")
            export_seconds = time.perf_counter() - started
            model = kb.identity_key
        source_bytes = folder_bytes(root / "source", "models")  # not the model cache
        with open_lorebase(settings=Settings.from_env(root / "target")) as lb:
            started = time.perf_counter()
            imported = lb.import_kb(root / "bench.zip")
            import_seconds = time.perf_counter() - started
            after = top5(lb, queries, KB)
            # Again under another name, the embedder loaded now and every id taken (renumbered).
            started = time.perf_counter()
            again = lb.import_kb(root / "bench.zip", name="again")
            again_seconds = time.perf_counter() - started
        result: dict[str, Any] = {
            "corpus": label,
            "corpus_bytes": folder_bytes(files),
            "embedding_identity": model,
            "documents": kb.documents,
            "chunks": kb.chunks,
            "vectors": exported.vectors,
            "first_pass_seconds": round(first_pass, 2),
            "first_pass_files_failed": len(report.failed),
            "export_seconds": round(export_seconds, 2),
            "import_seconds": round(import_seconds, 2),
            "import_again_seconds": round(again_seconds, 2),
            "import_again_renumbered": again.renumbered,
            "export_over_first_pass": round(export_seconds / first_pass, 4),
            "import_over_first_pass": round(import_seconds / first_pass, 4),
            "import_again_over_first_pass": round(again_seconds / first_pass, 4),
            "file_bytes": exported.bytes,
            "source_data_dir_bytes": source_bytes,
            "file_over_corpus": round(exported.bytes / max(1, folder_bytes(files)), 3),
            "file_over_data_dir": round(exported.bytes / max(1, source_bytes), 3),
            "imported_documents": imported.documents,
            "imported_vectors": imported.vectors,
            "top5_identical": sum(a == b for a, b in zip(before, after, strict=True)),
            "top5_compared": len(before),
        }
        if args.postgres:
            with postgres_url(args.store_url) as url:
                settings = Settings.from_env(root / "pg", store_url=url)
                with open_lorebase(settings=settings, data_key=DataKey.generate()) as lb:
                    started = time.perf_counter()
                    lb.import_kb(root / "bench.zip")
                    pg_seconds = time.perf_counter() - started
                    on_pg = top5(lb, queries, KB)
                    pg_hybrid = [r for i, r in enumerate(on_pg) if i % 2]
                    started = time.perf_counter()
                    pg_export = lb.export_kb(KB, root / "pg.zip")
                    pg_export_seconds = time.perf_counter() - started
                    # The same files indexed by PostgreSQL itself: what its own ranking gives.
                    lb.add([files], kb="native")
                    native = top5(lb, queries, "native")
            result["postgres_import_seconds"] = round(pg_seconds, 2)
            result["postgres_import_over_first_pass"] = round(pg_seconds / first_pass, 4)
            result["postgres_export_seconds"] = round(pg_export_seconds, 2)
            result["postgres_export_over_first_pass"] = round(pg_export_seconds / first_pass, 4)
            result["postgres_file_bytes"] = pg_export.bytes
            result["postgres_top5_identical"] = sum(
                a == b for a, b in zip(before, on_pg, strict=True)
            )
            result["postgres_hybrid_top5_identical"] = sum(
                a == b for a, b in zip(before[1::2], pg_hybrid, strict=True)
            )
            result["postgres_top5_same_documents"] = sum(
                sorted(a) == sorted(b) for a, b in zip(before, on_pg, strict=True)
            )
            result["postgres_native_top5_identical"] = sum(
                a == b for a, b in zip(native, on_pg, strict=True)
            )
            result["postgres_native_keyword_top5_identical"] = sum(
                a == b for a, b in zip(native[::2], on_pg[::2], strict=True)
            )
            result["postgres_native_vs_sqlite_top5_identical"] = sum(
                a == b for a, b in zip(native, before, strict=True)
            )
        return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", default=str(DEFAULT_CORPUS))
    parser.add_argument("--limit", type=int, default=0, help="first N records (0: all)")
    parser.add_argument("--synthetic", type=int, default=1000, help="files without a corpus")
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--postgres", action="store_true", help="also into PostgreSQL and out")
    parser.add_argument("--store-url", default=None, help="that PostgreSQL (default: a new one)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = run(args)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    for key, value in result.items():
        print(f"{key:32} {value}")


if __name__ == "__main__":
    main()
