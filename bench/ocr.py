"""OCR accuracy, speed and memory on the scanned pages of ../shared/data/docs/pdf_scanned.

Every file is read as ingestion reads it: in a bounded extraction worker (the default 1 GB
address space and 60 CPU seconds a file). It prints:

- the character error rate (CER) of linn.pdf against linn.groundtruth.txt beside it:
  Levenshtein distance / reference length, both with their whitespace normalised
  (:func:`character_error_rate`);
- OCR pages per second: one warm worker reading the scanned pages one file after another
  (CPU seconds per page too), and two workers reading the one-page scans side by side (the
  machine's throughput); the first file of a cold worker, which loads the models, apart;
- the worker's peak resident memory (VmHWM) and peak address space (VmPeak, what
  ``max_memory_bytes`` bounds) after the run.

    python bench/ocr.py [--docs PATH] [--repeat N] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from lorebase.extract.sandbox import ExtractionPool
from lorebase.settings import ExtractSettings

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DOCS = REPO.parent / "shared" / "data" / "docs"


def normalise(text: str) -> str:
    """Runs of whitespace as one space, none at the ends. Pure."""
    return " ".join(text.split())


def levenshtein(a: str, b: str) -> int:
    """Edits (insertions, deletions, substitutions) that turn ``a`` into ``b``. Pure.

    One row of the table at a time, each computed with numpy: the insertion chain along a
    row is a running minimum (``min_k<=j tmp[k] + j - k``), so a 4,500-character page takes
    well under a second instead of a minute of Python loops.
    """
    import numpy as np

    if not a or not b:
        return len(a) + len(b)
    target = np.array([ord(char) for char in b], dtype=np.int64)
    offsets = np.arange(len(b) + 1, dtype=np.int64)
    previous = offsets.copy()
    for row, char in enumerate(a, start=1):
        cost = (target != ord(char)).astype(np.int64)
        step = np.empty_like(previous)
        step[0] = row
        step[1:] = np.minimum(previous[1:] + 1, previous[:-1] + cost)
        previous = np.minimum.accumulate(step - offsets) + offsets
    return int(previous[-1])


def character_error_rate(hypothesis: str, reference: str) -> float:
    """Levenshtein distance / reference length, whitespace normalised in both. Pure."""
    hypothesis, reference = normalise(hypothesis), normalise(reference)
    return levenshtein(hypothesis, reference) / max(len(reference), 1)


def _status(pid: int) -> dict[str, int]:
    """A process's peak and current memory, in MB, from /proc."""
    found: dict[str, int] = {}
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            key = line.split(":")[0]
            if key in ("VmPeak", "VmSize", "VmHWM", "VmRSS"):
                found[key] = int(line.split()[1]) // 1024
    return found


def _read(pool: ExtractionPool, path: Path) -> tuple[str, int]:
    extracted = pool.extract(path.read_bytes(), path)
    return extracted.text, len(extracted.metadata.get("ocr_pages", ()))


def _cpu(pid: int) -> float:
    """CPU seconds a process has used (user + system), from /proc."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(docs: Path, repeat: int) -> dict[str, object]:
    scans = docs / "pdf_scanned"
    files = sorted(scans.glob("*.pdf"))
    settings = ExtractSettings(workers=1)
    report: dict[str, object] = {}
    with ExtractionPool(settings) as pool:
        start = time.perf_counter()
        text, _ = _read(pool, scans / "linn.pdf")
        report["cold_first_file_s"] = round(time.perf_counter() - start, 2)
        reference = (scans / "linn.groundtruth.txt").read_text(encoding="utf-8")
        report["linn_cer"] = round(character_error_rate(text, reference), 4)
        (pid,) = pool.worker_pids()
        pages, cpu, start = 0, _cpu(pid), time.perf_counter()
        for _ in range(repeat):
            for path in files:
                pages += _read(pool, path)[1]
        wall = time.perf_counter() - start
        report["pages"] = pages
        report["pages_per_s_one_worker"] = round(pages / wall, 3)
        if pool.worker_pids() != [pid]:
            sys.exit("the worker was replaced during the run: its figures would mix two")
        report["cpu_s_per_page"] = round((_cpu(pid) - cpu) / max(pages, 1), 2)
        report["worker_memory_mb"] = _status(pid)
    # Side by side on one-page files, so neither worker waits for the other's long file.
    single = [path for path in files if path.name != "cardinal.pdf"]
    with ExtractionPool(ExtractSettings(workers=2)) as pool, ThreadPoolExecutor(2) as threads:
        list(threads.map(lambda path: _read(pool, path), single[:2]))  # both workers warm
        jobs = [path for _ in range(2 * repeat) for path in single]
        start = time.perf_counter()
        pages = sum(found for _, found in threads.map(lambda path: _read(pool, path), jobs))
        report["pages_per_s_two_workers"] = round(pages / (time.perf_counter() - start), 3)
    report["load_average"] = os.getloadavg()[0]
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=Path, default=DEFAULT_DOCS)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if not (args.docs / "pdf_scanned" / "linn.pdf").is_file():
        sys.exit(f"no scanned PDFs under {args.docs}/pdf_scanned")
    report = measure(args.docs, args.repeat)
    if args.json:
        print(json.dumps(report, indent=2))
        return
    memory = report["worker_memory_mb"]
    print(f"linn.pdf CER                {report['linn_cer']:.2%}  (goal: at most 5%)")
    print(f"pages read                  {report['pages']}")
    print(f"pages/s, one warm worker    {report['pages_per_s_one_worker']}")
    print(f"pages/s, two workers        {report['pages_per_s_two_workers']}")
    print(f"CPU seconds per page        {report['cpu_s_per_page']}")
    print(f"cold worker, first file     {report['cold_first_file_s']} s (loads the models)")
    print(f"worker memory (MB)          {memory}")
    print(f"load average (1 min)        {report['load_average']:.2f} (other work slows both)")


if __name__ == "__main__":
    main()
