"""Passes over a large folder: an unchanged re-sync, and touching 1% of the files.

Builds a tree of N small Markdown files (default 10,000), indexes it once with the fake
embedder (the pass logic is what is measured, not the model), then times:

- a re-sync with nothing changed (goal: ≤ 2 s for 10,000 files; no file is read);
- a re-sync after rewriting 1% of the files with new content, against the first full pass
  per file (time should be proportional to the changed files), with vector reuse counted;
- a re-sync after only touching 1% (new mtime, same bytes): hashed, not processed.

    python bench/sync.py [--files N] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
import time
from pathlib import Path

from lorebase.app import Lorebase, open_lorebase
from lorebase.embed.fake import FakeEmbedder
from lorebase.settings import Settings

WORDS = (
    "retrieval",
    "index",
    "passage",
    "vector",
    "lexical",
    "folder",
    "sync",
    "chunk",
    "model",
    "query",
    "answer",
    "citation",
    "heading",
    "page",
    "line",
)


def write_tree(root: Path, files: int, rng: random.Random) -> list[Path]:
    paths = []
    for n in range(files):
        path = root / f"d{n % 100:02}" / f"note{n:05}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        body = " ".join(rng.choice(WORDS) for _ in range(rng.randint(40, 160)))
        path.write_text(f"# Note {n}\n\n## Section\n\n{body}\n")
        paths.append(path)
    return paths


def timed_sync(lb: Lorebase, kb: str) -> tuple[float, dict[str, int]]:
    started = time.perf_counter()
    report = lb.sync(kb)[kb]
    seconds = time.perf_counter() - started
    return seconds, {
        "unchanged": report.unchanged,
        "added": report.added,
        "updated": report.updated,
        "embedded": report.embedded,
        "reused": report.reused,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rng = random.Random(1)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "tree"
        paths = write_tree(root, args.files, rng)
        settings = Settings(data_dir=Path(tmp) / "data")
        with open_lorebase(settings=settings, embedder=FakeEmbedder()) as lb:
            lb.create_kb("tree", sources=[root])
            first, first_counts = timed_sync(lb, "tree")
            unchanged, unchanged_counts = timed_sync(lb, "tree")
            changed = rng.sample(paths, max(1, args.files // 100))
            for path in changed:
                path.write_text(path.read_text() + "\nAn added line about reranking.\n")
            edited, edited_counts = timed_sync(lb, "tree")
            touched = rng.sample(paths, max(1, args.files // 100))
            for path in touched:
                os.utime(path, (time.time() + 5, time.time() + 5))
            touch, touch_counts = timed_sync(lb, "tree")
    per_file_first = first / args.files
    per_file_edited = edited / len(changed)
    result = {
        "files": args.files,
        "first pass s": round(first, 2),
        "unchanged re-sync s": round(unchanged, 3),
        "1% rewritten re-sync s": round(edited, 3),
        "1% touched re-sync s": round(touch, 3),
        "per changed file vs first pass per file": round(per_file_edited / per_file_first, 2),
        "counts": {
            "first": first_counts,
            "unchanged": unchanged_counts,
            "rewritten": edited_counts,
            "touched": touch_counts,
        },
    }
    print(json.dumps(result, indent=2 if not args.json else None))


if __name__ == "__main__":
    main()
