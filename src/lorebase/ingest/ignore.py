"""What a folder walk leaves out, and why: Git's ignore rules and the names always left out.

Ignore files follow Git's rules (matched by :class:`pathspec.GitIgnoreSpec`): ``.gitignore``
in any folder, its patterns relative to that folder; ``.git/info/exclude`` at the root; and
``.lorebaseignore`` in any folder, same syntax, for what lorebase should skip but Git should
not. The last pattern that matches decides (``!`` re-includes); a deeper folder's files win
over its parents', and in one folder ``.lorebaseignore`` wins over ``.gitignore``. An ignored
folder is not descended, so nothing below it can be re-included (as in Git).

Always left out, whatever the ignore files say (each counted under its reason):

- ``version_control``: ``.git``, ``.hg``, ``.svn`` (and ``.bzr``, ``_darcs``);
- ``dependency_or_build``: ``node_modules``, ``target``, ``build``, ``dist``, ``__pycache__``,
  ``.tox`` (a ``vendor`` folder only when an ignore file says so: it is often real source);
- ``virtualenv``: a folder holding ``pyvenv.cfg`` or a ``conda-meta`` folder;
- ``secret``: files whose name says they likely hold a key or a password
  (:data:`SECRET_NAMES`). A secret's path is never logged or reported, only counted.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # loaded by the first walk that reads an ignore file, not by --help
    import pathspec

IGNORED = "ignored"
VERSION_CONTROL = "version_control"
DEPENDENCY_OR_BUILD = "dependency_or_build"
VIRTUALENV = "virtualenv"
SECRET = "secret"
OVER_SOURCE_LIMIT = "over_source_limit"

IGNORE_FILES = (".gitignore", ".lorebaseignore")  # in a folder, lowest precedence first
ROOT_EXCLUDE = (".git", "info", "exclude")
VERSION_CONTROL_FOLDERS = frozenset({".git", ".hg", ".svn", ".bzr", "_darcs"})
DEPENDENCY_OR_BUILD_FOLDERS = frozenset(
    {"node_modules", "target", "build", "dist", "__pycache__", ".tox"}
)
VIRTUALENV_MARKERS = ("pyvenv.cfg", "conda-meta")
# Matched against the lower-cased file name.
SECRET_NAMES = (
    ".env",
    ".env.*",
    "*.pem",
    "*.key",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    "credentials.json",
    "client_secret*.json",
    "service-account*.json",
    ".npmrc",
    ".pypirc",
    ".netrc",
    ".pgpass",
    ".htpasswd",
    ".git-credentials",
)


def is_secret(name: str) -> bool:
    lowered = name.lower()
    return any(fnmatchcase(lowered, pattern) for pattern in SECRET_NAMES)


def folder_reason(path: Path, name: str) -> str | None:
    """Why a folder is always left out, or None."""
    if name in VERSION_CONTROL_FOLDERS:
        return VERSION_CONTROL
    if name in DEPENDENCY_OR_BUILD_FOLDERS:
        return DEPENDENCY_OR_BUILD
    if any(os.path.lexists(path / marker) for marker in VIRTUALENV_MARKERS):
        return VIRTUALENV
    return None


@dataclass(frozen=True, slots=True)
class _Level:
    """The ignore files of one folder: its path from the root and their patterns."""

    prefix: str  # "" at the root, else "sub/dir/"
    specs: tuple[pathspec.GitIgnoreSpec, ...]  # highest precedence first


@dataclass(frozen=True, slots=True)
class IgnoreRules:
    """The ignore files in force in one folder: its own and its parents'."""

    levels: tuple[_Level, ...] = ()  # deepest first
    exclude: pathspec.GitIgnoreSpec | None = None  # .git/info/exclude, lowest precedence

    @classmethod
    def at_root(cls, root: Path) -> IgnoreRules:
        return cls((), _read_spec(root.joinpath(*ROOT_EXCLUDE))).enter(root, "")

    def enter(self, folder: Path, prefix: str) -> IgnoreRules:
        """The rules inside ``folder`` (``prefix``: its path from the root, ``/``-ended)."""
        specs = [spec for name in IGNORE_FILES if (spec := _read_spec(folder / name))]
        if not specs:
            return self
        level = _Level(prefix, tuple(reversed(specs)))
        return IgnoreRules((level, *self.levels), self.exclude)

    def ignored(self, rel: str, is_dir: bool) -> bool:
        """Whether the path ``rel`` (from the root, ``/``-separated) is ignored."""
        if not self.levels and self.exclude is None:
            return False
        suffix = "/" if is_dir else ""
        for level in self.levels:
            inner = rel[len(level.prefix) :] + suffix
            for spec in level.specs:
                decided = spec.check_file(inner).include
                if decided is not None:
                    return decided
        if self.exclude is not None:
            return self.exclude.check_file(rel + suffix).include is True
        return False


def _read_spec(path: Path) -> pathspec.GitIgnoreSpec | None:
    try:
        if not path.is_file():
            return None
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    spec = _spec(lines)
    return spec if any(p.include is not None for p in spec.patterns) else None


def _spec(lines: list[str]) -> pathspec.GitIgnoreSpec:
    """The patterns of an ignore file; a line Git cannot read either (``!`` alone, a lone
    backslash, a reversed range ``[z-a]``) is skipped, as Git skips it, instead of failing
    the walk."""
    import pathspec

    try:
        return pathspec.GitIgnoreSpec.from_lines(lines)
    except (ValueError, re.error):  # GitIgnorePatternError is a ValueError
        return pathspec.GitIgnoreSpec.from_lines(line for line in lines if _readable(line))


def _readable(line: str) -> bool:
    import pathspec

    try:
        pathspec.GitIgnoreSpec.from_lines([line])
    except (ValueError, re.error):
        return False
    return True
