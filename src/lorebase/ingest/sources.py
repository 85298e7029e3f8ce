"""Walking a source folder: every regular file lorebase may read, in a stable order.

Hidden files and folders (a name starting with ``.``) are never read. Symbolic links are
followed only when they resolve inside the source root, so a link can never pull in files from
elsewhere on the machine; linked folders are not descended (their targets inside the root are
walked anyway).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class WalkProblem:
    """A folder that could not be listed; ``error`` is an exception class name."""

    path: Path
    error: str


def is_hidden(name: str) -> bool:
    return name.startswith(".")


def iter_files(root: Path, problems: list[WalkProblem] | None = None) -> Iterator[Path]:
    """Yield the readable regular files under ``root`` in path order (names sorted within
    each folder, a folder's contents where its name sorts).

    Folders that cannot be listed are skipped and, when ``problems`` is given, recorded there.
    """
    root = root.resolve()
    yield from _walk(root, root, problems)


def _walk(folder: Path, root: Path, problems: list[WalkProblem] | None) -> Iterator[Path]:
    try:
        with os.scandir(folder) as scan:
            entries = sorted(scan, key=lambda entry: entry.name)
    except OSError as exc:
        if problems is not None:
            problems.append(WalkProblem(folder, type(exc).__name__))
        return
    for entry in entries:
        if is_hidden(entry.name):
            continue
        path = Path(entry.path)
        try:
            if entry.is_symlink():
                if _inside(path, root) and path.is_file():
                    yield path
            elif entry.is_dir(follow_symlinks=False):
                yield from _walk(path, root, problems)
            elif entry.is_file(follow_symlinks=False):
                yield path
        except OSError as exc:
            if problems is not None:
                problems.append(WalkProblem(path, type(exc).__name__))


def _inside(path: Path, root: Path) -> bool:
    """Whether a link resolves inside ``root`` and not into a hidden file or folder."""
    try:
        target = path.resolve(strict=True)
    except (OSError, RuntimeError):  # dangling link or a loop
        return False
    if not target.is_relative_to(root):
        return False
    return not any(is_hidden(part) for part in target.relative_to(root).parts)
