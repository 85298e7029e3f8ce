"""Files that hold people's text (chunks, index terms, vectors, key hashes) are their owner's
alone: folders ``0700``, files ``0600``, whatever the umask.

A file another library writes — Tantivy's segments, USearch's graph — gets the umask's mode
(``0644`` as a rule); :func:`narrow_files` takes what it wrote back to ``0600`` after it wrote.
Files made by an older version are narrowed the same way when they are next opened.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600
_OTHERS = 0o077  # the group's and everyone else's bits


def narrow(path: Path, mode: int = PRIVATE_FILE) -> None:
    """Take away the bits of ``path`` that let anyone but its owner in (a file or folder that
    is gone, or not ours to change, is left as it is)."""
    with contextlib.suppress(FileNotFoundError, PermissionError):
        if path.stat().st_mode & _OTHERS:
            path.chmod(mode)


def private_folder(path: Path) -> Path:
    """``path`` as a folder only its owner may enter, made (with its parents) if need be."""
    path.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR)
    narrow(path, PRIVATE_DIR)  # mkdir's mode passes through the umask
    return path


def private_file(path: Path) -> Path:
    """``path`` as a file only its owner may read, created empty if it is not there (created
    with its mode, never readable by others in between)."""
    with contextlib.suppress(FileExistsError):  # another process made it first: fine
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE))
    narrow(path)
    return path


def narrow_files(folder: Path) -> None:
    """Every file directly in ``folder`` made private (what another library wrote there)."""
    with contextlib.suppress(FileNotFoundError):
        for entry in os.scandir(folder):
            if entry.is_file(follow_symlinks=False):
                narrow(Path(entry.path))
