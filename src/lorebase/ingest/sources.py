"""Walking a source folder: every regular file lorebase may read, in a stable order.

Hidden files and folders (a name starting with ``.``) are never read. Symbolic links are
followed only when they resolve inside the source root, so a link can never pull in files from
elsewhere on the machine; linked folders are not descended (their targets inside the root are
walked anyway).

Ignore files (``.gitignore``, ``.git/info/exclude``, ``.lorebaseignore``) are honoured, and
version-control, dependency, build and virtual-environment folders and likely secrets are
always left out (:mod:`lorebase.ingest.ignore`); a folder without ignore files loses only
those. What is left out is counted by reason when a counter is given, never named. Past a
source's limits (files, bytes) the walk stops adding files, in path order, and counts the rest.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from lorebase.ingest.ignore import (
    IGNORED,
    OVER_SOURCE_LIMIT,
    SECRET,
    IgnoreRules,
    folder_reason,
    is_secret,
)


@dataclass(frozen=True, slots=True)
class WalkProblem:
    """A folder that could not be listed; ``error`` is an exception class name."""

    path: Path
    error: str


def is_hidden(name: str) -> bool:
    return name.startswith(".")


@dataclass(slots=True)
class _Walk:
    root: Path
    problems: list[WalkProblem] | None
    left_out: Counter[str] = field(default_factory=Counter)
    max_files: int | None = None
    max_bytes: int | None = None
    files: int = 0
    bytes: int = 0
    full: bool = False  # a limit was reached: every later file is counted, not yielded

    def admit(self, path: Path) -> bool:
        """Whether the file still fits the source's limits (counted when not)."""
        if not self.full and self.max_files is not None and self.files >= self.max_files:
            self.full = True
        if not self.full and self.max_bytes is not None:
            try:
                size = path.stat().st_size
            except OSError:
                size = 0  # the pass reports what is wrong with it
            if self.bytes + size > self.max_bytes:
                self.full = True
            else:
                self.bytes += size
        if self.full:
            self.left_out[OVER_SOURCE_LIMIT] += 1
            return False
        self.files += 1
        return True


def iter_files(
    root: Path,
    problems: list[WalkProblem] | None = None,
    left_out: Counter[str] | None = None,
    *,
    max_files: int | None = None,
    max_bytes: int | None = None,
) -> Iterator[Path]:
    """Yield the readable regular files under ``root`` in path order (names sorted within
    each folder, a folder's contents where its name sorts).

    Folders that cannot be listed are skipped and, when ``problems`` is given, recorded there.
    Files and folders left out are counted by reason in ``left_out`` when it is given. Past
    ``max_files`` files or ``max_bytes`` bytes, no more files are yielded.
    """
    root = root.resolve()
    counts = Counter[str]() if left_out is None else left_out
    walk = _Walk(root, problems, counts, max_files, max_bytes)
    yield from _walk(root, walk, IgnoreRules.at_root(root), "")


def _walk(folder: Path, walk: _Walk, rules: IgnoreRules, prefix: str) -> Iterator[Path]:
    try:
        with os.scandir(folder) as scan:
            entries = sorted(scan, key=lambda entry: entry.name)
    except OSError as exc:
        if walk.problems is not None:
            walk.problems.append(WalkProblem(folder, type(exc).__name__))
        return
    for entry in entries:
        path = Path(entry.path)
        try:
            reason = _left_out(entry, path, rules, prefix + entry.name)
            if reason == "":
                continue
            if reason is not None:
                walk.left_out[reason] += 1
            elif entry.is_symlink():
                if _inside(path, walk.root) and path.is_file() and walk.admit(path):
                    yield path
            elif entry.is_dir(follow_symlinks=False):
                inner = f"{prefix}{entry.name}/"
                yield from _walk(path, walk, rules.enter(path, inner), inner)
            elif entry.is_file(follow_symlinks=False) and walk.admit(path):
                yield path
        except OSError as exc:
            if is_secret(entry.name):  # counted, never named
                walk.left_out[SECRET] += 1
            elif walk.problems is not None:
                walk.problems.append(WalkProblem(path, type(exc).__name__))


def _left_out(entry: os.DirEntry[str], path: Path, rules: IgnoreRules, rel: str) -> str | None:
    """Why an entry is left out: a reason, ``""`` when hidden (not counted), None to keep it."""
    is_dir = entry.is_dir(follow_symlinks=False)
    if is_dir:
        reason = folder_reason(path, entry.name)
        if reason is not None:
            return reason
    elif is_secret(entry.name):
        return SECRET
    if is_hidden(entry.name):
        return ""
    if rules.ignored(rel, is_dir):
        return IGNORED
    return None


def _inside(path: Path, root: Path) -> bool:
    """Whether a link resolves inside ``root`` and not into a hidden file or folder, nor to
    a likely secret."""
    try:
        target = path.resolve(strict=True)
    except (OSError, RuntimeError):  # dangling link or a loop
        return False
    if not target.is_relative_to(root) or is_secret(target.name):
        return False
    return not any(is_hidden(part) for part in target.relative_to(root).parts)
