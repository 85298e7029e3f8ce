"""Profiles: named sets of knowledge bases a conversation may use.

A profile is the per-channel toggle of a chat product: ``support`` may see ``handbook`` and
``faq`` but not ``finance``. Tools scoped by a profile see only its bases (a base deleted since
is skipped), and the profile yields the hint a system prompt starts from.

Profiles live in ``profiles.json`` in the data directory. Every change is a read-modify-write
under an advisory ``flock`` (two ``lorebase profile create`` at once both land) and is written
to a temporary file that then replaces the old one (``os.replace``), so a reader never sees
half a file and a crash leaves the old one.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lorebase.agent.fence import one_line
from lorebase.errors import Conflict, InvalidInput, NotFound

if TYPE_CHECKING:
    from lorebase.service import Caller, KnowledgeBase, Lorebase

PROFILES_FILE = "profiles.json"
LOCK_SUFFIX = ".lock"
FORMAT_VERSION = 1
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
NAME_RULE = "1–64 letters, digits, '_', '.' or '-', starting with a letter or digit"
MAX_DESCRIPTION_CHARS = 500
HINT_DESCRIPTION_CHARS = 160


@dataclass(frozen=True, slots=True)
class Profile:
    name: str
    knowledge_bases: tuple[str, ...]
    description: str = ""
    created_at: float = 0.0
    # Of its bases, those its agents may save notes into (the ``save_note`` tool); the caller
    # must still be allowed to change them.
    writable: tuple[str, ...] = ()


def check_name(name: str) -> str:
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        raise InvalidInput(f"a profile name must be {NAME_RULE}")
    return name


class Profiles:
    """The profiles of one data directory."""

    def __init__(self, data_dir: Path) -> None:
        self.path = Path(data_dir) / PROFILES_FILE

    def all(self) -> list[Profile]:
        return sorted(self._read().values(), key=lambda profile: profile.name)

    def get(self, name: str) -> Profile:
        profile = self._read().get(check_name(name))
        if profile is None:
            raise NotFound(f"there is no profile {name}; `lorebase profile list` shows them")
        return profile

    def create(
        self,
        name: str,
        knowledge_bases: Sequence[str],
        *,
        description: str = "",
        replace: bool = False,
        writable: Sequence[str] = (),
    ) -> Profile:
        """Save a profile; ``Conflict`` when the name is taken (unless ``replace``). The caller
        checks that the knowledge bases exist (they may be deleted later; then skipped).
        ``writable``: those of them its agents may save notes into."""
        check_name(name)
        bases = tuple(dict.fromkeys(knowledge_bases))
        if not bases:
            raise InvalidInput("a profile needs at least one knowledge base (--kb NAME)")
        notes_to = tuple(dict.fromkeys(writable))
        if not set(notes_to) <= set(bases):
            raise InvalidInput("a base notes are saved into (--writable) must be one of its --kb")
        if len(description) > MAX_DESCRIPTION_CHARS:
            raise InvalidInput(f"a description must be at most {MAX_DESCRIPTION_CHARS} characters")
        profile = Profile(name, bases, description, time.time(), notes_to)
        with self._locked():
            profiles = self._read()
            if name in profiles and not replace:
                raise Conflict(f"a profile named {name} exists; delete it or pass --replace")
            profiles[name] = profile
            self._write(profiles)
        return profile

    def delete(self, name: str) -> None:
        check_name(name)
        with self._locked():
            profiles = self._read()
            if profiles.pop(name, None) is None:
                raise NotFound(f"there is no profile {name}; `lorebase profile list` shows them")
            self._write(profiles)

    # -- the file ----------------------------------------------------------------------------
    @contextmanager
    def _locked(self) -> Iterator[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path.with_name(PROFILES_FILE + LOCK_SUFFIX), os.O_RDWR | os.O_CREAT)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing drops the lock

    def _read(self) -> dict[str, Profile]:
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError):
            raise InvalidInput(
                f"{self.path} is not a valid profiles file; fix or delete it"
            ) from None
        return _parse(raw, self.path)

    def _write(self, profiles: dict[str, Profile]) -> None:
        payload = {
            "version": FORMAT_VERSION,
            "profiles": [asdict(p) for p in sorted(profiles.values(), key=lambda p: p.name)],
        }
        fd, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=".profiles-", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(payload, handle, indent=2, ensure_ascii=False)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, self.path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise


def _parse(raw: Any, path: Path) -> dict[str, Profile]:
    try:
        if raw.get("version") != FORMAT_VERSION:
            raise InvalidInput(f"{path} has an unknown format version; upgrade lorebase")
        profiles = {}
        for item in raw["profiles"]:
            profile = Profile(
                name=check_name(item["name"]),
                knowledge_bases=tuple(str(kb) for kb in item["knowledge_bases"]),
                description=str(item.get("description", "")),
                created_at=float(item.get("created_at", 0.0)),
                writable=tuple(str(kb) for kb in item.get("writable", ())),
            )
            profiles[profile.name] = profile
        return profiles
    except (AttributeError, KeyError, TypeError, ValueError):
        raise InvalidInput(f"{path} is not a valid profiles file; fix or delete it") from None


def system_prompt_hint(knowledge_bases: Sequence[KnowledgeBase]) -> str:
    """The line a system prompt starts from. Names and descriptions are set by operators;
    they are still made single, bounded lines without marker look-alikes."""
    if not knowledge_bases:
        return "No knowledge bases are available in this conversation."
    listed = []
    for kb in knowledge_bases:
        description = one_line(kb.description, HINT_DESCRIPTION_CHARS)
        listed.append(one_line(kb.name) + (f" ({description})" if description else ""))
    return (
        f"You have access to the following knowledge bases: {'; '.join(listed)}. "
        "Use search_knowledge_base to find relevant information."
    )


def visible_profiles(lb: Lorebase, caller: Caller | None) -> list[tuple[str, str, list[str]]]:
    """The agent profiles as (name, description, the bases in it the caller may see)."""
    visible = {kb.name for kb in lb.knowledge_bases(caller, totals=False)}
    return [
        (p.name, p.description, [n for n in p.knowledge_bases if n in visible])
        for p in Profiles(lb.settings.data_dir).all()
    ]
