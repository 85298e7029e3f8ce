"""Search latency of this checkout against another commit, on one index, in one run.

Each side runs in its own process (this checkout's ``src``, or the other commit's checked out
as a git worktree under ``bench/results/worktrees``), alternating, so both see the same machine
load; each asks every question of a dev set (``../shared/data/ir``, indexed by
``bench/eval.py`` into ``bench/results/eval/<set>``) ``--rounds`` times through the library's
search (``top_k`` 10, hybrid, query embedding included) after one untimed question. Prints each
side's p50 / p95 and the median of each step's timing, and the ratio of the p50s.

    python bench/search_ab.py --against 28d3551 [--set cranfield] [--rounds 2] [--pairs 2]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
IR = REPO.parent / "shared" / "data" / "ir"
DATA = REPO / "bench" / "results" / "eval"
WORKTREES = REPO / "bench" / "results" / "worktrees"


def child(name: str, rounds: int) -> None:
    """Time the searches in this process (whatever ``lorebase`` PYTHONPATH gives it)."""
    from lorebase.app import open_lorebase
    from lorebase.settings import Settings

    lines = (IR / name / "queries.jsonl").read_text("utf-8").splitlines()
    queries = [json.loads(line)["text"][:2000] for line in lines if line.strip()]
    with open_lorebase(settings=Settings(data_dir=DATA / name)) as lb:
        kb = f"eval-{name}"
        lb.search(queries[0], kb=kb)
        latencies: list[float] = []
        steps: dict[str, list[float]] = {}
        for _ in range(rounds):
            for query in queries[:300]:
                started = time.perf_counter()
                response = lb.search(query, kb=kb, top_k=10)
                latencies.append((time.perf_counter() - started) * 1000)
                for step, ms in response.timings_ms.items():
                    steps.setdefault(step, []).append(ms)
    latencies.sort()
    print(
        json.dumps(
            {
                "p50": statistics.median(latencies),
                "p95": latencies[int(0.95 * (len(latencies) - 1))],
                "steps": {step: statistics.median(ms) for step, ms in steps.items()},
            }
        )
    )


def worktree(revision: str) -> Path:
    folder = WORKTREES / revision
    if not folder.is_dir():
        WORKTREES.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "add", "--detach", str(folder), revision],
            check=True,
            capture_output=True,
        )
    return folder


def run(source: Path, name: str, rounds: int) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(source / "src")}
    done = subprocess.run(
        [sys.executable, __file__, "--child", "--set", name, "--rounds", str(rounds)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", help="the other commit (a revision git knows)")
    parser.add_argument("--set", default="cranfield")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--pairs", type=int, default=2, help="alternations of the two sides")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.set, args.rounds)
        return
    if not args.against:
        parser.error("--against REVISION is required")
    other = worktree(args.against)
    for pair in range(1, args.pairs + 1):
        before = run(other, args.set, args.rounds)
        after = run(REPO, args.set, args.rounds)
        ratio = float(str(after["p50"])) / float(str(before["p50"]))
        print(f"pair {pair}: {args.against} {json.dumps(before)}")
        print(f"pair {pair}: this checkout {json.dumps(after)}")
        print(f"pair {pair}: p50 ratio (this / {args.against}) {ratio:.2f}")


if __name__ == "__main__":
    main()
