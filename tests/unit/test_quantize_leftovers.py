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


def test_a_model_that_cannot_be_quantised_says_why_and_leaves_nothing(tmp_path: Path) -> None:
    """The build runs in a process of its own (its memory goes when it ends); a file that is
    no ONNX model comes back as a content-free QuantizationError, with no copy and no work
    folder left behind."""
    import pytest

    from lorebase.embed.quantize import QuantizationError, build_int8

    source = tmp_path / "model.onnx"
    source.write_bytes(b"not a model, and not something to quote in an error")
    target = tmp_path / "cache" / "int8.onnx"
    target.parent.mkdir()
    with pytest.raises(QuantizationError) as raised:
        build_int8(source, target)
    assert str(raised.value).startswith("quantisation failed (")
    assert "quote" not in str(raised.value)
    assert not target.exists() and list(target.parent.iterdir()) == []
