"""What ``/proc`` says of a process, for tests that wait for one to end."""

from __future__ import annotations

from pathlib import Path


def process_state(pid: int) -> str | None:
    """Process ``pid``'s state letter (``Z``: a zombie, not yet reaped); None once it is gone.
    A process reaped between its stat file's opening and its read fails the read with ESRCH
    (``ProcessLookupError``), not ENOENT: gone too (CI met it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return stat.rsplit(")", 1)[1].split()[0]  # after the command name, which may hold spaces
