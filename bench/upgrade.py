"""An upgrade, end to end: a base made by the release before index versions (issue 31) is
read again by one ``lorebase sync`` of today's code.

1. ``git worktree add`` the older release (default ``b2a81eb``, the release before this work)
   and index a corpus with it — its own code, run as ``python -m lorebase`` with
   ``PYTHONPATH`` on the worktree's ``src`` (this virtualenv holds the dependencies) — into a
   fresh data directory, with the bundled embedding model; that first pass is timed.
2. With today's code over the same data directory: ``status --json`` must show every document
   stale (made before versions were recorded); one ``lorebase sync`` is timed; ``status
   --json`` must then show none stale.

The figures: the sync's time over the first pass's (the issue's goal: at most 0.5, because the
vectors of unchanged chunk texts are reused, found by content hash), and the embeddings the sync
made and reused (each reused one an embedding call saved). Both passes are whole processes
(start, model load, pass), timed from outside. The worktree is removed at the end.

The corpus: a BEIR folder (``corpus.jsonl``; default ``../shared/data/ir/cisi``) is written out
as one ``.txt`` file per record (the layout ``lorebase eval`` indexes, ``--limit`` keeps the
first N records), any other folder is indexed as it is.

    python bench/upgrade.py [--corpus FOLDER] [--limit N] [--old COMMIT] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from corpora import DEFAULT_CORPUS, REPO, write_beir
from lorebase.eval.datasets import (
    BeirSet,
    is_beir,
)

OLD_RELEASE = "b2a81eb"
"""The release before issue 31's index versions: its documents record none."""
KB = "upgrade"
GOAL_RATIO = 0.5
"""The issue's goal: the sync that reads every stale document again takes at most half the
first pass."""


def lorebase(
    data_dir: Path, *args: str, src: Path | None = None
) -> tuple[float, dict[str, Any] | list[Any]]:
    """Run ``python -m lorebase --data-dir DATA ARGS --json`` (with ``src`` first on the
    path: another release's code); its wall time and its JSON output."""
    env = dict(os.environ)
    env.pop("LOREBASE_STORE", None)
    env["LOREBASE_EMBEDDER"] = "onnx"
    if src is not None:
        env["PYTHONPATH"] = str(src)
    command = [sys.executable, "-m", "lorebase", "--data-dir", str(data_dir), *args, "--json"]
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"{' '.join(args)} exited {done.returncode}: {done.stderr[-2000:]}")
    parsed: dict[str, Any] | list[Any] = json.loads(done.stdout)
    return seconds, parsed


def which_code(src: Path | None) -> str:
    """The folder ``lorebase`` is imported from with ``src`` first on the path (checks that
    the old release really runs its own code)."""
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = str(src)
    probe = "import lorebase, pathlib; print(pathlib.Path(lorebase.__file__).parent)"
    return subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()


def status_of(data_dir: Path) -> dict[str, Any]:
    """The base's entry in today's ``status --json``."""
    _, status = lorebase(data_dir, "status")
    assert isinstance(status, dict)
    return next(kb for kb in status["knowledge_bases"] if kb["name"] == KB)


def report_of(output: dict[str, Any] | list[Any]) -> dict[str, Any]:
    """A pass's report from ``add --json`` / ``sync --json`` (the base's, when keyed by base)."""
    if isinstance(output, dict) and KB in output and isinstance(output[KB], dict):
        return dict(output[KB])
    if isinstance(output, dict) and isinstance(output.get("reports"), dict):
        return dict(output["reports"].get(KB, {}))
    assert isinstance(output, dict), output
    return output


def counts(report: dict[str, Any]) -> dict[str, Any]:
    keys = ("files", "added", "updated", "unchanged", "chunks", "embedded", "reused", "seconds")
    return {key: report.get(key) for key in keys}


def run(corpus: Path, limit: int, old: str, scratch: Path) -> dict[str, Any]:
    worktree = Path(tempfile.gettempdir()) / f"lorebase-{old}"
    if worktree.exists():
        sys.exit(f"{worktree} exists (a run cut short?): `git worktree remove --force {worktree}`")
    subprocess.run(
        ["git", "-C", str(REPO), "worktree", "add", "--detach", str(worktree), old],
        check=True,
        capture_output=True,
    )
    try:
        old_src = worktree / "src"
        if which_code(old_src) != str(old_src / "lorebase"):
            sys.exit("the older release's code is not the one imported: check PYTHONPATH")
        if is_beir(corpus):
            folder = scratch / "corpus" / BeirSet(corpus).name
            documents = write_beir(BeirSet(corpus), folder, limit)
        else:
            folder, documents = corpus, sum(1 for p in corpus.rglob("*") if p.is_file())
        data_dir = scratch / "data"
        first_s, first = lorebase(data_dir, "add", str(folder), "--kb", KB, src=old_src)
    finally:
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "remove", "--force", str(worktree)],
            check=True,
            capture_output=True,
        )
    before = status_of(data_dir)
    sync_s, synced = lorebase(data_dir, "sync", "--kb", KB)
    after = status_of(data_dir)
    sync_report = report_of(synced)
    ratio = sync_s / first_s
    return {
        "corpus": str(corpus),
        "files": documents,
        "old release": old,
        "first pass (old release) s": round(first_s, 2),
        "stale before sync": before["stale_documents"],
        "documents": before["documents"],
        "sync (today) s": round(sync_s, 2),
        "stale after sync": after["stale_documents"],
        "sync / first pass": round(ratio, 3),
        "goal met (≤ 0.5, all stale before, none after)": ratio <= GOAL_RATIO
        and before["stale_documents"] == before["documents"]
        and after["stale_documents"] == 0,
        "embeddings saved (reused)": sync_report.get("reused"),
        "embeddings made by the sync": sync_report.get("embedded"),
        "first pass": counts(report_of(first)),
        "sync": counts(sync_report),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--limit", type=int, default=0, help="the first N records (0: all)")
    parser.add_argument("--old", default=OLD_RELEASE, help="the older release's commit")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if not args.corpus.is_dir():
        sys.exit(f"{args.corpus} is not a folder")
    with tempfile.TemporaryDirectory(prefix="lorebase-upgrade-") as scratch:
        result = run(args.corpus.resolve(), args.limit, args.old, Path(scratch))
    print(json.dumps(result, indent=None if args.json else 2, ensure_ascii=False))


if __name__ == "__main__":
    main()
