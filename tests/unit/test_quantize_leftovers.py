"""A build of the int8 model killed half way leaves its work folder; the next build sweeps it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from lorebase.embed.quantize import WORK_PREFIX, sweep_leftovers


def test_work_folders_of_dead_builds_are_swept_and_live_ones_kept(tmp_path: Path) -> None:
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    dead = tmp_path / f"{WORK_PREFIX}{gone.stdout.strip()}-abc"
    (dead / "sub").mkdir(parents=True)
    (dead / "sub" / "folded-fp32.onnx").write_bytes(b"x" * 100)
    live = tmp_path / f"{WORK_PREFIX}{os.getpid()}-def"
    live.mkdir()
    unnamed = tmp_path / f"{WORK_PREFIX}old-style"  # from a version that did not name the pid
    unnamed.mkdir()
    model = tmp_path / "all-MiniLM-L6-v2-int8-abc.onnx"
    model.write_bytes(b"model")
    assert sweep_leftovers(tmp_path) == 2
    assert not dead.exists() and not unnamed.exists()
    assert live.is_dir() and model.is_file()
