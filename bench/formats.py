"""The formats of issue 29, measured: how long each real file of ../shared/data/formats takes to
read in a bounded extraction worker (as ingestion reads it), and the two spreadsheet readers —
python-calamine and openpyxl's streaming reader — on one generated workbook, each in a fresh
process (CPU seconds and the peak resident memory it added), read in the same run.

    python bench/formats.py [--rows 100000] [--repeat 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path, PurePath
from typing import Any

from lorebase.errors import ExtractionFailed
from lorebase.extract.sandbox import ExtractionPool
from lorebase.formats import format_for
from lorebase.settings import ExtractSettings

REPO = Path(__file__).resolve().parents[1]
FORMATS = REPO.parent / "shared" / "data" / "formats"

_READ = """
import io, resource, sys, time
path, reader = sys.argv[1], sys.argv[2]
data = open(path, "rb").read()
import openpyxl, python_calamine
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
cpu = time.process_time()
cells = 0
if reader == "calamine":
    book = python_calamine.CalamineWorkbook.from_filelike(io.BytesIO(data))
    for index in range(len(book.sheet_names)):
        for row in book.get_sheet_by_index(index).iter_rows():
            cells += sum(1 for value in row if value != "")
else:
    book = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    for sheet in book.worksheets:
        for row in sheet.iter_rows(values_only=True):
            cells += sum(1 for value in row if value is not None)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(time.process_time() - cpu, (after - before) / 1024, cells)
"""


def workbook(path: Path, rows: int) -> None:
    """``rows`` × 10 mixed cells (text, integers, decimals, dates), written streaming."""
    import datetime

    import openpyxl  # type: ignore[import-untyped]

    book = openpyxl.Workbook(write_only=True)
    sheet = book.create_sheet("Data")
    sheet.append([f"column {n}" for n in range(10)])
    day = datetime.date(2024, 1, 1)
    for n in range(rows):
        sheet.append(
            [f"item {n}", n, n * 0.25, day, "north", n % 7, f"note {n % 13}", n * 3, "x", n]
        )
    book.save(path)


def readers(path: Path, repeat: int) -> dict[str, dict[str, float]]:
    found: dict[str, dict[str, float]] = {}
    for reader in ("calamine", "openpyxl"):
        runs = []
        for _ in range(repeat):
            out = subprocess.run(
                [sys.executable, "-c", _READ, str(path), reader],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.split()
            runs.append((float(out[0]), float(out[1]), int(out[2])))
        found[reader] = {
            "cpu_s": statistics.median(r[0] for r in runs),
            "peak_mb": statistics.median(r[1] for r in runs),
            "cells": runs[0][2],
        }
    return found


def real_files(repeat: int) -> list[dict[str, Any]]:
    rows = []
    with ExtractionPool(ExtractSettings()) as pool:
        pool.extract(b"# warm\n\nup\n", PurePath("warm.md"))
        for path in sorted(p for p in FORMATS.rglob("*") if p.is_file()):
            if format_for(path) is None:
                continue
            data = path.read_bytes()
            times, outcome = [], "read"
            for _ in range(repeat):
                started = time.perf_counter()
                try:
                    extracted = pool.extract(data, path)
                    outcome = f"{len(extracted.text):,} chars, {len(extracted.parts)} parts"
                except ExtractionFailed as failure:
                    outcome = failure.reason.value
                times.append(time.perf_counter() - started)
            rows.append(
                {
                    "file": path.relative_to(FORMATS).as_posix(),
                    "kb": len(data) / 1024,
                    "ms": statistics.median(times) * 1000,
                    "outcome": outcome,
                }
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        book = Path(folder) / "book.xlsx"
        workbook(book, args.rows)
        sheets = readers(book, args.repeat)
    files = real_files(args.repeat) if FORMATS.is_dir() else []
    if args.json:
        print(json.dumps({"spreadsheet": sheets, "files": files}, indent=2))
        return
    print(f"spreadsheet of {args.rows:,} rows x 10 (median of {args.repeat}, fresh processes):")
    for reader, figures in sheets.items():
        print(
            f"  {reader:9} {figures['cpu_s']:6.2f} s CPU  +{figures['peak_mb']:6.1f} MB peak"
            f"  {figures['cells']:,} cells"
        )
    ratio = sheets["openpyxl"]["cpu_s"] / max(sheets["calamine"]["cpu_s"], 1e-9)
    print(f"  openpyxl / calamine CPU: {ratio:.1f}x")
    if files:
        print("real files, in a bounded worker (median ms):")
        for row in files:
            print(f"  {row['file']:55} {row['kb']:8.1f} KB {row['ms']:8.1f} ms  {row['outcome']}")


if __name__ == "__main__":
    main()
