"""An embedder per base (issue 18): what a re-embed costs, whether searches keep answering while
it runs, and what searching bases of two models in one search costs.

On Cranfield (each record of ``../shared/data/ir/cranfield/corpus.jsonl`` written as one
``.txt``), in one run, with **one** bundled MiniLM instance (per-channel int8, warmed up before
any clock starts) shared by every arm: each lorebase is opened with it as the process embedder
and it is adopted as the named embedder ``bundled``; a second named embedder ``fast`` is the
fake one (384 dimensions, floor -1: every hit passes), which costs next to nothing.

1. **raw**: ``embed_documents`` on exactly the chunk texts ``lorebase add`` makes
   (``chunks_of``), one call: chunks/s, the reference.
2. **add**: a fresh data directory, ``create_kb("cran", embedder="bundled")`` then
   ``add([folder])``: seconds, chunks/s and the ratio to raw.
3. **re-embed**: a fresh data directory, the base made with ``fast`` and added (timed too),
   then ``reembed_kb("cran", "bundled")`` and ``sync("cran")`` timed: chunks/s, ratio to raw
   and to arm 2. While the pass runs a second thread searches the base (dense, Cranfield
   questions) every ``--interval`` seconds, and for a moment after it: latency p50/p95 during
   the pass against the same searches on the idle base just before it (ratio during/idle), and
   a check that every search answered from one identity (``resp.identities``: never two), the
   old one (the fake's) until the switch and the new one (MiniLM's) after it, never back.
4. **two models in one search**: a fresh data directory, Cranfield split in halves, the first
   made with ``bundled``, the second with ``fast``. The same ``--queries`` Cranfield
   questions search both bases together and the bundled half alone (alternating which goes
   first), hybrid and dense: p50/p95 wall latency and ``timings_ms["embed"]`` p50. The ratio
   both/alone is the cost of embedding the query once more (with the fake: almost nothing)
   and merging two models' rankings.

The machine is shared: ``os.getloadavg()`` is recorded before and after each arm; quote the
ratios (the arms of one run see the same machine), not absolute times alone. Arms 1-3 also
give the ratios by process CPU time, and the share of each pass spent inside the model
(``ModelClock``) with its number of model calls: the figure least moved by other load (what
lorebase does around the model).

    python bench/reembed.py [--limit N] [--queries N] [--interval S] [--models DIR] [--json]

``--limit N`` keeps the first N documents (a quick run); the full set is 1,400 documents
(~1,500 chunks; ~30-60 s per model-bound arm on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ingest import CRANFIELD, WARMUP_TEXTS, ModelClock, chunks_of, cranfield_folder
from lorebase.app import open_lorebase
from lorebase.embed.onnx import OnnxEmbedder
from lorebase.settings import Settings
from lorebase.settings.embedders import EmbedderConfig
from search import bundled_embedder, percentiles

QUERIES = CRANFIELD.parent / "queries.jsonl"
DEFAULT_MODELS = Path("/tmp/lorebase-bench-reembed")
FAST = "fast"
BUNDLED = "bundled"
KB = "cran"
DURING_QUERIES = 8  # the questions the searching thread cycles through
IDLE_SEARCHES = 40
AFTER_SECONDS = 1.5  # the searching thread goes on this long after the pass returns
MODES = ("hybrid", "dense")


def settings(data_dir: Path) -> Settings:
    fast = EmbedderConfig(FAST, kind="fake", dimensions=384, no_answer_threshold=-1.0)
    return Settings(data_dir=data_dir, embedders=(fast,))


def opened(data_dir: Path, warmed: OnnxEmbedder) -> Any:
    """A lorebase in ``data_dir`` answering with the shared, warmed model for ``bundled``."""
    lb = open_lorebase(settings=settings(data_dir), embedder=warmed)
    lb.embedders.adopt(BUNDLED, warmed)
    return lb


def questions(count: int) -> list[str]:
    lines = QUERIES.read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["text"] for line in lines if line.strip()][:count]


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def arm(name: str, run: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Run one arm with the load average before and after it; print it as soon as done."""
    before = load()
    result = run()
    result["load_before"], result["load_after"] = before, load()
    shown = {k: v for k, v in result.items() if k not in ("searches",)}
    print(json.dumps({"arm": name, **shown}), file=sys.stderr, flush=True)
    return result


def limited(source: Path, target: Path, limit: int) -> Path:
    """The first ``limit`` documents of ``source`` (all when 0), copied to ``target``."""
    target.mkdir(parents=True)
    files = sorted(source.glob("*.txt"))
    for path in files[:limit] if limit else files:
        shutil.copy2(path, target / path.name)
    return target


def halves(source: Path, first: Path, second: Path) -> None:
    files = sorted(source.glob("*.txt"))
    middle = len(files) // 2
    for folder, part in ((first, files[:middle]), (second, files[middle:])):
        folder.mkdir(parents=True)
        for path in part:
            shutil.copy2(path, folder / path.name)


# -- arms ----------------------------------------------------------------------------------------
def raw_arm(texts: list[str], warmed: OnnxEmbedder) -> dict[str, Any]:
    start, cpu = time.perf_counter(), time.process_time()
    warmed.embed_documents(texts)
    seconds = time.perf_counter() - start
    return {
        "chunks": len(texts),
        "seconds": seconds,
        "chunks_per_s": len(texts) / seconds,
        "cpu_seconds": time.process_time() - cpu,
    }


def add_arm(
    folder: Path, chunks: int, warmed: OnnxEmbedder, clock: ModelClock, scratch: Path
) -> dict[str, Any]:
    data = scratch / "add"
    with opened(data, warmed) as lb:
        lb.create_kb(KB, embedder=BUNDLED)
        clock.reset()
        start, cpu = time.perf_counter(), time.process_time()
        report = lb.add([folder], kb=KB)
        seconds = time.perf_counter() - start
        cpu_seconds = time.process_time() - cpu
    shutil.rmtree(data, ignore_errors=True)
    if report.chunks != chunks:
        sys.exit(f"add made {report.chunks} chunks, chunks_of gives {chunks}")
    return {
        "chunks": report.chunks,
        "embedded": report.embedded,
        "seconds": seconds,
        "chunks_per_s": chunks / seconds,
        "cpu_seconds": cpu_seconds,
        "model_seconds": clock.seconds,
        "model_batches": clock.batches,
    }


@dataclass(slots=True)
class Searcher:
    """Searches one base every ``interval`` seconds on its own thread until stopped."""

    lb: Any
    texts: Sequence[str]
    interval: float
    stop: threading.Event = field(default_factory=threading.Event)
    searches: list[dict[str, Any]] = field(default_factory=list)
    error: BaseException | None = None

    def run(self, origin: float) -> None:
        try:
            n = 0
            while not self.stop.is_set():
                text = self.texts[n % len(self.texts)]
                started = time.perf_counter()
                response = self.lb.search(text, kb=[KB], mode="dense")
                ms = (time.perf_counter() - started) * 1000
                self.searches.append(
                    {
                        "at": started - origin,
                        "ms": ms,
                        "identities": sorted(set(response.identities.values())),
                        "hits": len(response.hits),
                        "warnings": [w.split(":")[0] for w in response.warnings],
                    }
                )
                n += 1
                self.stop.wait(self.interval)
        except BaseException as error:  # reported by the main thread
            self.error = error


def check_order(searches: list[dict[str, Any]], old: str, new: str) -> dict[str, Any]:
    """Every search answered from one identity, ``old`` until the switch, ``new`` after."""
    mixed = sum(1 for s in searches if len(s["identities"]) != 1)
    keys = [s["identities"][0] if len(s["identities"]) == 1 else None for s in searches]
    unknown = sum(1 for k in keys if k not in (old, new))
    first_new = next((i for i, k in enumerate(keys) if k == new), len(keys))
    old_after_new = sum(1 for k in keys[first_new:] if k == old)
    return {
        "mixed": mixed,
        "unknown_or_none": unknown,
        "old_answers": first_new,
        "new_answers": len(keys) - first_new,
        "old_after_switch": old_after_new,
        "ok": mixed == 0 and unknown == 0 and old_after_new == 0 and first_new < len(keys),
        "first_new_at_s": searches[first_new]["at"] if first_new < len(keys) else None,
    }


def reembed_arm(
    folder: Path,
    chunks: int,
    warmed: OnnxEmbedder,
    clock: ModelClock,
    scratch: Path,
    interval: float,
) -> dict[str, Any]:
    data = scratch / "reembed"
    texts = questions(DURING_QUERIES)
    with opened(data, warmed) as lb:
        lb.create_kb(KB, embedder=FAST)
        start = time.perf_counter()
        lb.add([folder], kb=KB)
        fast_add = time.perf_counter() - start
        old = lb.embedders.get(FAST).identity.key
        new = warmed.identity.key

        lb.search(texts[0], kb=[KB], mode="dense")  # first search: loads the matrix
        idle = []
        for n in range(IDLE_SEARCHES):
            started = time.perf_counter()
            response = lb.search(texts[n % len(texts)], kb=[KB], mode="dense")
            idle.append((time.perf_counter() - started) * 1000)
            if set(response.identities.values()) != {old}:
                sys.exit(f"the idle base answered from {response.identities}, not {old}")

        lb.reembed_kb(KB, BUNDLED)
        searcher = Searcher(lb, texts, interval)
        clock.reset()
        origin, cpu = time.perf_counter(), time.process_time()
        thread = threading.Thread(target=searcher.run, args=(origin,), daemon=True)
        thread.start()
        reports = lb.sync(KB)
        seconds = time.perf_counter() - origin
        cpu_seconds = time.process_time() - cpu
        model_seconds, model_batches = clock.seconds, clock.batches
        time.sleep(AFTER_SECONDS)
        searcher.stop.set()
        thread.join()
        if searcher.error is not None:
            raise searcher.error
        base = lb.kb(KB, totals=False)
    shutil.rmtree(data, ignore_errors=True)
    report = reports[KB]
    during = [s["ms"] for s in searcher.searches if s["at"] + s["ms"] / 1000 <= seconds]
    idle_p = percentiles(idle)
    during_p = percentiles(during) if during else {"p50": float("nan"), "p95": float("nan")}
    order = check_order(searcher.searches, old, new)
    warnings = sorted({w for s in searcher.searches for w in s["warnings"]})
    return {
        "chunks": chunks,
        "fast_add_seconds": fast_add,
        "seconds": seconds,
        "chunks_per_s": chunks / seconds,
        "embedded": report.embedded,
        "reused": report.reused,
        "cpu_seconds": cpu_seconds,
        "model_seconds": model_seconds,
        "model_batches": model_batches,
        "switched": base.identity_key == new and base.embedder == BUNDLED,
        "embedder_next_after": base.embedder_next,
        "idle_ms": {k: idle_p[k] for k in ("p50", "p95")},
        "during_ms": {k: during_p[k] for k in ("p50", "p95")},
        "during_idle_p50": during_p["p50"] / idle_p["p50"],
        "during_idle_p95": during_p["p95"] / idle_p["p95"],
        "searches_during": len(during),
        "searches_total": len(searcher.searches),
        "search_warnings": warnings,
        "order": order,
        "old_identity": old,
        "new_identity": new,
        "searches": searcher.searches,
    }


def two_models_arm(folder: Path, warmed: OnnxEmbedder, scratch: Path, count: int) -> dict[str, Any]:
    data = scratch / "two"
    first, second = scratch / "half-bundled", scratch / "half-fast"
    halves(folder, first, second)
    texts = questions(count)
    with opened(data, warmed) as lb:
        lb.create_kb("bund", embedder=BUNDLED)
        lb.add([first], kb="bund")
        lb.create_kb("quick", embedder=FAST)
        lb.add([second], kb="quick")
        scopes = {"both": ["bund", "quick"], "alone": ["bund"]}
        for kbs in scopes.values():  # load each base's matrix before any clock
            lb.search(texts[0], kb=kbs, mode="dense")
        out: dict[str, Any] = {"queries": len(texts)}
        for mode in MODES:
            wall: dict[str, list[float]] = {"both": [], "alone": []}
            embed: dict[str, list[float]] = {"both": [], "alone": []}
            for n, text in enumerate(texts):
                order = ["both", "alone"] if n % 2 == 0 else ["alone", "both"]
                for scope in order:
                    started = time.perf_counter()
                    response = lb.search(text, kb=scopes[scope], mode=mode)
                    wall[scope].append((time.perf_counter() - started) * 1000)
                    embed[scope].append(response.timings_ms.get("embed", float("nan")))
                    models = len(set(response.identities.values()))
                    if models != len(scopes[scope]):
                        sys.exit(f"{mode} {scope}: {response.identities} {response.warnings}")
            result: dict[str, Any] = {}
            for scope in scopes:
                p = percentiles(wall[scope])
                result[scope] = {
                    "p50": p["p50"],
                    "p95": p["p95"],
                    "embed_p50": percentiles(embed[scope])["p50"],
                }
            result["ratio_p50"] = result["both"]["p50"] / result["alone"]["p50"]
            result["ratio_p95"] = result["both"]["p95"] / result["alone"]["p95"]
            out[mode] = result
    shutil.rmtree(data, ignore_errors=True)
    return out


# -- main ----------------------------------------------------------------------------------------
def table(r: dict[str, Any]) -> str:
    raw, add, re, two = r["raw"], r["add"], r["reembed"], r["two_models"]
    lines = [
        f"Cranfield: {r['documents']} documents, {r['chunks']} chunks",
        "",
        "| arm | seconds | chunks/s | / raw | / add | by CPU time: / raw, / add |"
        " load before -> after |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]

    def row(name: str, a: dict[str, Any], to_add: str, cpu: str) -> str:
        return (
            f"| {name} | {a['seconds']:.1f} | {a['chunks_per_s']:.1f} | "
            f"{a['chunks_per_s'] / raw['chunks_per_s']:.3f} | {to_add} | {cpu} | "
            f"{a['load_before']} -> {a['load_after']} |"
        )

    lines.append(row("raw embed_documents", raw, "", ""))
    lines.append(row("add (bundled)", add, "1", f"{add['cpu_ratio_raw']:.3f}, 1"))
    lines.append(
        row(
            "re-embed fast -> bundled",
            re,
            f"{re['ratio_add']:.3f}",
            f"{re['cpu_ratio_raw']:.3f}, {re['cpu_ratio_add']:.3f}",
        )
    )
    o = re["order"]
    lines += [
        "",
        f"time inside the model: add {add['model_seconds'] / add['seconds']:.1%} of the pass "
        f"({add['model_batches']} batches), re-embed {re['model_seconds'] / re['seconds']:.1%} "
        f"({re['model_batches']} batches)",
        "",
        f"(the base first added with the fake embedder in {re['fast_add_seconds']:.1f} s)",
        "",
        "| dense search on the base | p50 ms | p95 ms | searches |",
        "| --- | --- | --- | --- |",
        f"| idle, before the re-embed | {re['idle_ms']['p50']:.1f} | "
        f"{re['idle_ms']['p95']:.1f} | {IDLE_SEARCHES} |",
        f"| during the re-embed | {re['during_ms']['p50']:.1f} | "
        f"{re['during_ms']['p95']:.1f} | {re['searches_during']} |",
        f"| during / idle | {re['during_idle_p50']:.2f} | {re['during_idle_p95']:.2f} | |",
        "",
        f"identities: {o['old_answers']} searches answered from the old (fake) vectors, then "
        f"{o['new_answers']} from the new (MiniLM); mixed {o['mixed']}, old after the switch "
        f"{o['old_after_switch']}, other {o['unknown_or_none']} -> "
        f"{'OK' if o['ok'] else 'FAILED'}; switched: {re['switched']}; warnings seen: "
        f"{', '.join(re['search_warnings']) or 'none'}",
        "",
        f"two models in one search ({two['queries']} queries; load {two['load_before']} -> "
        f"{two['load_after']}):",
        "",
        "| mode | bundled half alone p50 / p95 ms | both bases p50 / p95 ms | both/alone p50 |"
        " both/alone p95 | embed p50 ms alone, both |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for mode in MODES:
        m = two[mode]
        lines.append(
            f"| {mode} | {m['alone']['p50']:.1f} / {m['alone']['p95']:.1f} | "
            f"{m['both']['p50']:.1f} / {m['both']['p95']:.1f} | {m['ratio_p50']:.2f} | "
            f"{m['ratio_p95']:.2f} | {m['alone']['embed_p50']:.1f}, {m['both']['embed_p50']:.1f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--limit", type=int, default=0, help="the first N documents only")
    parser.add_argument("--queries", type=int, default=100, help="for two models in one search")
    parser.add_argument("--interval", type=float, default=0.3, help="seconds between searches")
    parser.add_argument("--models", type=Path, default=DEFAULT_MODELS, help="model cache")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if not CRANFIELD.is_file():
        sys.exit(f"{CRANFIELD} is absent")

    with tempfile.TemporaryDirectory(prefix="lorebase-reembed-") as scratch:
        root = Path(scratch)
        corpus = cranfield_folder(root / "all")
        folder = limited(corpus.folder, root / "cranfield", args.limit)
        documents = len(list(folder.glob("*.txt")))
        texts = [c.embed_text for c in chunks_of(folder)]

        warmed = bundled_embedder(args.models)
        if warmed.variant != "int8":
            sys.exit(f"the int8 model did not build: {warmed.fallback_reason}")
        warmed.embed_documents(["warm up " * n for n in range(WARMUP_TEXTS)])
        clock = ModelClock(warmed)

        result: dict[str, Any] = {
            "date": time.strftime("%Y-%m-%d"),
            "cpus": os.cpu_count(),
            "documents": documents,
            "chunks": len(texts),
        }
        result["raw"] = arm("raw", lambda: raw_arm(texts, warmed))
        result["add"] = arm("add", lambda: add_arm(folder, len(texts), warmed, clock, root))
        result["reembed"] = arm(
            "reembed",
            lambda: reembed_arm(folder, len(texts), warmed, clock, root, args.interval),
        )
        result["two_models"] = arm(
            "two_models", lambda: two_models_arm(folder, warmed, root, args.queries)
        )
        raw_rate = result["raw"]["chunks_per_s"]
        result["add"]["ratio_raw"] = result["add"]["chunks_per_s"] / raw_rate
        result["reembed"]["ratio_raw"] = result["reembed"]["chunks_per_s"] / raw_rate
        result["reembed"]["ratio_add"] = (
            result["reembed"]["chunks_per_s"] / result["add"]["chunks_per_s"]
        )
        # The same ratios by process CPU time (less sensitive to what else runs; the re-embed's
        # includes the searching thread's, ~1-2%).
        for name in ("raw", "add", "reembed"):
            result[name]["cpu_chunks_per_s"] = len(texts) / result[name]["cpu_seconds"]
        raw_cpu = result["raw"]["cpu_chunks_per_s"]
        result["add"]["cpu_ratio_raw"] = result["add"]["cpu_chunks_per_s"] / raw_cpu
        result["reembed"]["cpu_ratio_raw"] = result["reembed"]["cpu_chunks_per_s"] / raw_cpu
        result["reembed"]["cpu_ratio_add"] = (
            result["reembed"]["cpu_chunks_per_s"] / result["add"]["cpu_chunks_per_s"]
        )

    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(table(result))
    if not result["reembed"]["order"]["ok"] or not result["reembed"]["switched"]:
        sys.exit("the re-embed did not answer from one identity at a time, or did not switch")


if __name__ == "__main__":
    main()
