"""Ingest throughput: ``lorebase add`` end to end against the raw embedder on the same chunks.

For each corpus, in one run and with one embedder instance (the bundled MiniLM, per-channel
int8, quantised and warmed up before any clock starts):

1. **lorebase**: ``open_lorebase(...).add([folder])`` into a fresh data directory: walk,
   extract, chunk, look up the vector cache, embed, write every document in its own
   transaction. Time spent inside the model during the pass is recorded separately.
2. **raw**: ``embedder.embed_documents`` on exactly the chunk texts the pass produced
   (``embed_text`` of every chunk, re-chunked with the same functions), in one call.

Each arm also reports the process's peak resident memory while it ran (``VmHWM``, reset before
the arm through ``/proc/self/clear_refs``; onnxruntime keeps what an earlier arm grew, so the
first arm's figure, lorebase's in round one, is the one to quote). ``--max-tokens-per-call`` and
``--memory-pattern`` set the embedder's memory settings (``--max-tokens-per-call 8192
--memory-pattern`` is how it ran before issue 15).

The figure to quote is the ratio lorebase/raw of chunks per second (goal >= 0.9): everything
lorebase adds on top of the model (I/O, extraction, chunking, SQLite, batching) shows in it.
The arms run minutes apart on a shared machine, so the ratio of process CPU time is reported
too (less sensitive to what else runs), and ``--repeat`` alternates which arm goes first.

Corpora: ``docs`` is ``../shared/data/docs`` (every supported file, failures included, as in a
real folder); ``cranfield`` writes each record of ``../shared/data/ir/cranfield/corpus.jsonl``
as one ``.txt`` file (title, blank line, text) into a temporary folder.

    python bench/ingest.py [--corpus docs|cranfield|all] [--limit N] [--repeat N]
                           [--threads N] [--max-tokens-per-call N] [--memory-pattern]
                           [--profile FILE] [--json]

``--limit N`` keeps files (smallest first, so many kinds stay in) until about N chunks, to
make a quick run; the full docs set is ~6,800 chunks (~4 min per arm on 2 cores).
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lorebase.app import open_lorebase
from lorebase.chunk import chunk_document
from lorebase.embed.base import EmbedKind
from lorebase.embed.onnx import DEFAULT_MAX_TOKENS_PER_CALL, OnnxEmbedder
from lorebase.errors import ExtractionFailed
from lorebase.extract import extract_file
from lorebase.formats import document_kind
from lorebase.ingest.sources import iter_files
from lorebase.settings import ChunkSettings, ExtractSettings, Settings
from lorebase.types import Chunk

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"
DOCS = SHARED / "docs"
CRANFIELD = SHARED / "ir" / "cranfield" / "corpus.jsonl"
KB = "bench"
WARMUP_TEXTS = 64
PROFILE_LINES = 25
GOAL_RATIO = 0.9


@dataclass(frozen=True, slots=True)
class Corpus:
    name: str
    folder: Path
    files: int


def cranfield_folder(target: Path) -> Corpus:
    """One ``.txt`` per Cranfield record (title, blank line, text)."""
    target.mkdir(parents=True, exist_ok=True)
    count = 0
    for line in CRANFIELD.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        text = f"{record.get('title', '').strip()}\n\n{record.get('text', '').strip()}\n"
        (target / f"cran-{int(record['_id']):04d}.txt").write_text(text, encoding="utf-8")
        count += 1
    return Corpus("cranfield", target, count)


def supported_files(folder: Path) -> list[Path]:
    """The files of ``folder`` lorebase reads (walked as ``lorebase add`` walks it)."""
    return [p for p in iter_files(folder.resolve()) if document_kind(p) is not None]


def chunks_of(folder: Path) -> list[Chunk]:
    """Every chunk ``lorebase add`` makes of ``folder``, with the same functions and settings
    (files that fail to extract make none, as in the pass)."""
    out: list[Chunk] = []
    extract, chunk = ExtractSettings(), ChunkSettings()
    for path in supported_files(folder):
        try:
            out.extend(chunk_document(extract_file(path, extract), chunk))
        except ExtractionFailed:
            continue
    return out


def subsample(folder: Path, limit: int, target: Path) -> Corpus:
    """Copy files, smallest first, until about ``limit`` chunks: a quick run that still has
    every kind of file in it."""
    extract, chunk = ExtractSettings(), ChunkSettings()
    files = sorted(supported_files(folder), key=lambda p: p.stat().st_size)
    total = kept = 0
    for path in files:
        try:
            count = len(chunk_document(extract_file(path, extract), chunk))
        except ExtractionFailed:
            count = 0
        if total + count > limit and kept:
            continue
        destination = target / folder.name / path.relative_to(folder)
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, destination)
        total += count
        kept += 1
    return Corpus(folder.name, target / folder.name, kept)


def reset_peak_rss() -> None:
    """Start a new peak: writing 5 to ``clear_refs`` resets ``VmHWM`` (Linux 4.0+)."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as handle:
            handle.write("5")
    except OSError:
        pass  # then the peak is the process's since it started


def peak_rss_mb() -> float:
    """The peak resident memory (``VmHWM``) since the last reset, in MB."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


class ModelClock:
    """Sums the time an embedder spends in ``embed_batch`` (the model call itself)."""

    def __init__(self, embedder: OnnxEmbedder) -> None:
        self.seconds = 0.0
        self.batches = 0
        self._inner = embedder.embed_batch
        embedder.embed_batch = self._timed  # type: ignore[method-assign]

    def _timed(self, texts: Sequence[str], kind: EmbedKind) -> Any:
        start = time.perf_counter()
        try:
            return self._inner(texts, kind)
        finally:
            self.seconds += time.perf_counter() - start
            self.batches += 1

    def reset(self) -> None:
        self.seconds = 0.0
        self.batches = 0


def lorebase_pass(
    corpus: Corpus, embedder: OnnxEmbedder, clock: ModelClock, profile: Path | None
) -> dict[str, float]:
    """One ``lorebase add`` of the corpus folder into a fresh data directory."""
    with tempfile.TemporaryDirectory(prefix="lorebase-ingest-") as data:
        settings = Settings(data_dir=Path(data))
        with open_lorebase(settings=settings, embedder=embedder) as lb:
            clock.reset()
            profiler = cProfile.Profile() if profile else None
            reset_peak_rss()
            start, cpu_start = time.perf_counter(), time.process_time()
            if profiler:
                profiler.enable()
            report = lb.add([corpus.folder], kb=KB)
            if profiler:
                profiler.disable()
            seconds = time.perf_counter() - start
            cpu_seconds = time.process_time() - cpu_start
            peak = peak_rss_mb()
            if profiler and profile:
                profiler.dump_stats(profile)
        files = {p.name: p.stat().st_size for p in Path(data).glob("lorebase.db*")}
        db_bytes = sum(files.values())
    return {
        "seconds": seconds,
        "cpu_seconds": cpu_seconds,
        "chunks": report.chunks,
        "embedded": report.embedded,
        "reused": report.reused,
        "failed_files": len(report.failed),
        "model_seconds": clock.seconds,
        "model_batches": clock.batches,
        "db_bytes": db_bytes,
        "peak_rss_mb": peak,
    }


def raw_pass(texts: list[str], embedder: OnnxEmbedder, clock: ModelClock) -> dict[str, float]:
    """The raw embedder alone on the given texts, one call."""
    clock.reset()
    reset_peak_rss()
    start, cpu_start = time.perf_counter(), time.process_time()
    embedder.embed_documents(texts)
    return {
        "seconds": time.perf_counter() - start,
        "cpu_seconds": time.process_time() - cpu_start,
        "peak_rss_mb": peak_rss_mb(),
        "model_seconds": clock.seconds,
        "model_batches": clock.batches,
    }


def measure(
    corpus: Corpus,
    embedder: OnnxEmbedder,
    clock: ModelClock,
    repeat: int,
    profile: Path | None,
) -> dict[str, Any]:
    chunks = chunks_of(corpus.folder)
    every = [c.embed_text for c in chunks]
    unique = list({c.content_hash: c.embed_text for c in chunks}.values())
    rounds: list[dict[str, Any]] = []
    for round_number in range(repeat):
        # Alternate which arm goes first so a slow spell on the shared machine hits both.
        arms: list[tuple[str, Callable[[], dict[str, float]]]] = [
            ("lorebase", lambda: lorebase_pass(corpus, embedder, clock, None)),
            ("raw", lambda: raw_pass(every, embedder, clock)),
        ]
        if len(unique) != len(every):
            arms.append(("raw_unique", lambda: raw_pass(unique, embedder, clock)))
        if round_number % 2:
            arms.reverse()
        result: dict[str, Any] = {name: run() for name, run in arms}
        result.setdefault("raw_unique", result["raw"])
        lb, raw, raw_unique = result["lorebase"], result["raw"], result["raw_unique"]
        if lb["chunks"] != len(every) or lb["embedded"] != len(unique):
            sys.exit(
                f"{corpus.name}: the pass made {lb['chunks']} chunks / embedded "
                f"{lb['embedded']}, re-chunking gives {len(every)} / {len(unique)}"
            )
        result["ratio"] = raw["seconds"] / lb["seconds"]
        result["cpu_ratio"] = raw["cpu_seconds"] / lb["cpu_seconds"]
        result["ratio_unique"] = raw_unique["seconds"] / lb["seconds"]
        rounds.append(result)
    if profile is not None:  # an extra, untimed pass: the profiler slows what it watches
        lorebase_pass(corpus, embedder, clock, profile.with_suffix(f".{corpus.name}.prof"))
    lb_rate = [len(every) / r["lorebase"]["seconds"] for r in rounds]
    raw_rate = [len(every) / r["raw"]["seconds"] for r in rounds]
    last = rounds[-1]["lorebase"]
    return {
        "corpus": corpus.name,
        "files": corpus.files,
        "chunks": len(every),
        "unique_chunks": len(unique),
        "lorebase_chunks_per_s": statistics.median(lb_rate),
        "raw_chunks_per_s": statistics.median(raw_rate),
        "ratio": statistics.median(r["ratio"] for r in rounds),
        "ratio_unique": statistics.median(r["ratio_unique"] for r in rounds),
        "cpu_ratio": statistics.median(r["cpu_ratio"] for r in rounds),
        "ratios_per_round": [round(r["ratio"], 3) for r in rounds],
        "load_average": os.getloadavg(),
        "lorebase_model_share": last["model_seconds"] / last["seconds"],
        "lorebase_model_vs_raw_model": last["model_seconds"]
        / rounds[-1]["raw_unique"]["model_seconds"],
        "db_bytes_per_chunk": last["db_bytes"] / max(1, len(every)),
        "lorebase_peak_rss_mb": max(r["lorebase"]["peak_rss_mb"] for r in rounds),
        "raw_peak_rss_mb": max(r["raw"]["peak_rss_mb"] for r in rounds),
        "first_arm_peak_rss_mb": rounds[0]["lorebase"]["peak_rss_mb"],
        "rounds": rounds,
    }


def print_profile(path: Path) -> None:
    stats = pstats.Stats(str(path))
    stats.sort_stats("cumulative").print_stats(PROFILE_LINES)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", choices=("docs", "cranfield", "all"), default="all")
    parser.add_argument("--limit", type=int, default=0, help="about this many chunks per corpus")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--max-tokens-per-call", type=int, default=DEFAULT_MAX_TOKENS_PER_CALL)
    parser.add_argument("--memory-pattern", action="store_true")
    parser.add_argument("--profile", type=Path, help="cProfile an extra pass: FILE.<corpus>.prof")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="lorebase-ingest-src-") as scratch:
        root = Path(scratch)
        embedder = OnnxEmbedder(
            root / "models",
            threads=args.threads,
            max_tokens_per_call=args.max_tokens_per_call,
            memory_pattern=args.memory_pattern,
        )
        if embedder.variant != "int8":
            sys.exit(f"the int8 model did not build: {embedder.fallback_reason}")
        embedder.embed_documents(["warm up " * n for n in range(WARMUP_TEXTS)])
        clock = ModelClock(embedder)

        corpora: list[Corpus] = []
        if args.corpus in ("docs", "all"):
            if not DOCS.is_dir():
                sys.exit(f"{DOCS} is absent")
            corpora.append(Corpus("docs", DOCS, len(supported_files(DOCS))))
        if args.corpus in ("cranfield", "all"):
            if not CRANFIELD.is_file():
                sys.exit(f"{CRANFIELD} is absent")
            corpora.append(cranfield_folder(root / "cranfield"))
        if args.limit:
            corpora = [subsample(c.folder, args.limit, root / f"sample-{c.name}") for c in corpora]
        results = []
        for corpus in corpora:  # each result as soon as it is measured: runs are long
            results.append(measure(corpus, embedder, clock, args.repeat, args.profile))
            print(
                json.dumps({k: v for k, v in results[-1].items() if k != "rounds"}),
                file=sys.stderr,
                flush=True,
            )

    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print(
            "| corpus | files | chunks | lorebase chunks/s | raw chunks/s | lorebase/raw |"
            " model share of pass | bytes/chunk on disk | peak RSS MB lorebase, raw |"
        )
        print("|" + " --- |" * 9)
        for r in results:
            print(
                f"| {r['corpus']} | {r['files']} | {r['chunks']} | "
                f"{r['lorebase_chunks_per_s']:.1f} | {r['raw_chunks_per_s']:.1f} | "
                f"{r['ratio']:.3f} | {r['lorebase_model_share']:.1%} | "
                f"{r['db_bytes_per_chunk']:.0f} | "
                f"{r['lorebase_peak_rss_mb']:.0f}, {r['raw_peak_rss_mb']:.0f} |"
            )
        for r in results:
            verdict = "meets" if r["ratio"] >= GOAL_RATIO else "misses"
            print(
                f"- {r['corpus']}: ratio {r['ratio']:.3f} {verdict} the {GOAL_RATIO} goal; "
                f"model time inside the pass / raw model time = "
                f"{r['lorebase_model_vs_raw_model']:.3f}; unique-text ratio "
                f"{r['ratio_unique']:.3f}"
            )
    if args.profile:
        for r in results:
            print_profile(args.profile.with_suffix(f".{r['corpus']}.prof"))


if __name__ == "__main__":
    main()
