"""`lorebase add` in a real process whose output is not a terminal (a log, CI, a pipe): plain
progress lines on stderr — files and chunks done, chunks per second, time left — and no bar."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

LINE = re.compile(
    r"^indexing: (\d+)/(\d+) files · ([\d,]+)/([\d,]+) chunks done · ([\d,]+) searchable by "
    r"keyword( · [\d,.]+ chunks/s)? · (estimating time left|about .+ left|finishing) · .+ elapsed$"
)


def test_add_prints_plain_progress_lines_when_not_on_a_terminal(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    for n in range(40):
        body = "\n\n".join(f"## Part {p}\n\n" + f"note {n} part {p} words " * 60 for p in range(3))
        (folder / f"note{n:02}.md").write_text(f"# Note {n}\n\n{body}\n")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "lorebase",
            "--data-dir",
            str(tmp_path / "data"),
            "--embedder",
            "fake",
            "add",
            str(folder),
            "--kb",
            "notes",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)  # stdout stays the report alone
    lines = [line for line in result.stderr.splitlines() if line.startswith("indexing:")]
    assert len(lines) >= 2, result.stderr  # the first report's line and the last one's
    assert "\x1b" not in result.stderr and "━" not in result.stderr  # no bar, no escapes
    parsed = [LINE.match(line) for line in lines]
    assert all(parsed), lines
    last = parsed[-1]
    assert last is not None
    files_done, files_total, done, expected, searchable = (
        int(last.group(i).replace(",", "")) for i in range(1, 6)
    )
    assert files_done == files_total == 40
    assert done == expected == searchable == report["chunks"] > 40
