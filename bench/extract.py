"""Extraction + chunking throughput over ../shared/data/docs, against the raw parsers.

For each document kind it times lorebase (extract in a bounded worker process, as ingestion
and ``lorebase extract`` do, + chunk), the same in this process (``extract_file``: what
lorebase did before the workers) and, in the same run, the bare parser library doing the least
it can (pdfium text of every page, python-docx paragraph text, selectolax body text,
markdown-it parse, a UTF-8 decode), so the figures to quote are the ratios lorebase / raw and
lorebase / in-process. Peak memory is the resident-set growth of a fresh process reading one
file. The worker's cost per document is measured apart: a warm round trip of a tiny file, and
the start of a worker.

    python bench/extract.py [--docs PATH] [--repeat N] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path, PurePath

from lorebase.chunk import chunk_document
from lorebase.errors import ExtractionFailed
from lorebase.extract import extract_file
from lorebase.extract.registry import extract_bytes, read_file
from lorebase.extract.sandbox import ExtractionPool
from lorebase.formats import document_kind
from lorebase.ingest.sources import iter_files
from lorebase.settings import ChunkSettings, ExtractSettings

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DOCS = REPO.parent / "shared" / "data" / "docs"

_PEAK_SCRIPT = """
import os, sys, tracemalloc
from pathlib import Path
from lorebase.chunk import chunk_document
from lorebase.extract import extract_file
from lorebase.settings import ChunkSettings, ExtractSettings
import lorebase.extract.pdf, lorebase.extract.docx, lorebase.extract.html
import lorebase.extract.markdown, lorebase.extract.text

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

before = rss()
tracemalloc.start()
chunks = chunk_document(extract_file(Path(sys.argv[1]), ExtractSettings()), ChunkSettings())
peak = tracemalloc.get_traced_memory()[1]
tracemalloc.stop()
print(before, rss(), peak, len(chunks))
"""


def raw_parse(path: Path) -> None:
    """The bare library doing the least it can for this kind of file."""
    kind = document_kind(path)
    data = path.read_bytes()
    if kind is None:
        return
    if kind == "pdf":
        import pypdfium2 as pdfium

        pdf = pdfium.PdfDocument(data)
        for index in range(len(pdf)):
            page = pdf[index]
            textpage = page.get_textpage()
            textpage.get_text_bounded()
            textpage.close()
            page.close()
        pdf.close()
    elif kind == "docx":
        import io

        import docx

        document = docx.Document(io.BytesIO(data))
        "\n".join(p.text for p in document.paragraphs)
    elif kind == "html":
        from selectolax.lexbor import LexborHTMLParser

        tree = LexborHTMLParser(data)
        body = tree.body
        if body is not None:
            body.text(separator="\n")
    elif kind == "md":
        from markdown_it import MarkdownIt

        MarkdownIt("commonmark").enable("table").parse(data.decode("utf-8", "replace"))
    else:
        data.decode("utf-8", "replace")


def timed(function: Callable[..., object], *args: object) -> float:
    start = time.perf_counter()
    with contextlib.suppress(Exception):  # broken files are part of the corpus
        function(*args)
    return time.perf_counter() - start


def lorebase_one(
    path: Path, extract: ExtractSettings, chunk: ChunkSettings, pool: ExtractionPool
) -> int:
    try:
        return len(chunk_document(pool.extract(read_file(path, extract), path), chunk))
    except ExtractionFailed:
        return 0


def in_process_one(path: Path, extract: ExtractSettings, chunk: ChunkSettings) -> int:
    try:
        return len(chunk_document(extract_file(path, extract), chunk))
    except ExtractionFailed:
        return 0


def throughput(docs: Path, repeat: int, pool: ExtractionPool) -> dict[str, dict[str, float]]:
    extract, chunk = ExtractSettings(), ChunkSettings()
    files = [p for p in iter_files(docs) if document_kind(p) is not None]
    for path in files:  # warm imports and caches so the first kind is not penalised
        lorebase_one(path, extract, chunk, pool)
        in_process_one(path, extract, chunk)
        timed(raw_parse, path)
    per_kind: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for _ in range(repeat):
        for path in files:
            kind = document_kind(path) or "other"
            row = per_kind[kind]
            start = time.perf_counter()
            row["chunks"] += lorebase_one(path, extract, chunk, pool)
            row["lorebase_s"] += time.perf_counter() - start
            row["in_process_s"] += timed(in_process_one, path, extract, chunk)
            row["raw_s"] += timed(raw_parse, path)
            row["files"] += 1
            row["bytes"] += path.stat().st_size
    total: dict[str, float] = defaultdict(float)
    for row in per_kind.values():
        for key, value in row.items():
            total[key] += value
    per_kind["all"] = total
    result = {}
    for kind, row in per_kind.items():
        result[kind] = {
            "files": row["files"] / repeat,
            "MB": row["bytes"] / repeat / 1e6,
            "chunks": row["chunks"] / repeat,
            "MB/s": row["bytes"] / 1e6 / row["lorebase_s"],
            "files/s": row["files"] / row["lorebase_s"],
            "chunks/s": row["chunks"] / row["lorebase_s"],
            "in-process MB/s": row["bytes"] / 1e6 / row["in_process_s"],
            "raw MB/s": row["bytes"] / 1e6 / row["raw_s"],
            "lorebase/raw time": row["lorebase_s"] / row["raw_s"],
            "lorebase/in-process time": row["lorebase_s"] / row["in_process_s"],
        }
    return result


def worker_cost(pool: ExtractionPool, rounds: int = 500) -> dict[str, float]:
    """What the worker process adds to one document: the median warm round trip of a tiny
    Markdown file against extracting it here, and the start of a fresh worker (spawn, import
    the readers, first reply)."""
    data, path, settings = b"# Notes\n\nA short note.\n", PurePath("note.md"), pool.settings
    pool.extract(data, path)
    through, here = [], []
    for _ in range(rounds):
        start = time.perf_counter()
        pool.extract(data, path)
        through.append(time.perf_counter() - start)
        start = time.perf_counter()
        extract_bytes(data, path, settings)
        here.append(time.perf_counter() - start)
    starts = []
    for _ in range(5):
        start = time.perf_counter()
        with ExtractionPool(settings) as fresh:
            fresh.extract(data, path)
        starts.append(time.perf_counter() - start)
    return {
        "tiny file through a warm worker ms": statistics.median(through) * 1e3,
        "tiny file in process ms": statistics.median(here) * 1e3,
        "overhead per document ms": (statistics.median(through) - statistics.median(here)) * 1e3,
        "worker start ms": statistics.median(starts) * 1e3,
    }


def peak_memory(path: Path) -> dict[str, float]:
    """Memory of a fresh process extracting and chunking one file: the Python heap's peak
    (tracemalloc) and the resident-set growth with the chunks still held (covers pdfium's
    C++ allocations, which tracemalloc does not see)."""
    out = subprocess.run(
        [sys.executable, "-c", _PEAK_SCRIPT, str(path)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    before, after, peak, chunks = (int(x) for x in out)
    return {
        "file MB": path.stat().st_size / 1e6,
        "Python heap peak MB": peak / 1e6,
        "RSS growth MB (results held)": (after - before) / 1e6,
        "chunks": chunks,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=Path, default=DEFAULT_DOCS)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if not args.docs.is_dir():
        sys.exit(f"{args.docs} is absent: pass --docs with a folder of documents")
    pdfs = sorted(args.docs.rglob("*.pdf"), key=lambda p: p.stat().st_size)
    texts = sorted(args.docs.rglob("*.txt"), key=lambda p: p.stat().st_size)
    with ExtractionPool(ExtractSettings()) as pool:
        rates = throughput(args.docs, args.repeat, pool)
        cost = worker_cost(pool)
    peaks = {
        "largest PDF " + pdfs[-1].name: peak_memory(pdfs[-1]),
        "largest text " + texts[-1].name: peak_memory(texts[-1]),
    }
    report = {"throughput": rates, "worker": cost, "peak_memory": peaks}
    if args.json:
        print(json.dumps(report, indent=2))
        return
    columns = [
        "files",
        "MB",
        "chunks",
        "MB/s",
        "files/s",
        "chunks/s",
        "in-process MB/s",
        "raw MB/s",
        "lorebase/raw time",
        "lorebase/in-process time",
    ]
    print("| kind | " + " | ".join(columns) + " |")
    print("|" + " --- |" * (len(columns) + 1))
    for kind, row in sorted(rates.items(), key=lambda kv: kv[0] == "all"):
        print(f"| {kind} | " + " | ".join(f"{row[c]:.2f}" for c in columns) + " |")
    print()
    print("- worker: " + ", ".join(f"{k} {v:.3f}" for k, v in cost.items()))
    for name, peak in peaks.items():
        print(f"- {name}: " + ", ".join(f"{k} {v:.1f}" for k, v in peak.items()))


if __name__ == "__main__":
    main()
