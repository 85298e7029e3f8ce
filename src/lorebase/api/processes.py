"""A server's other processes: ``serve --processes N`` answering on the same port, and over
the embedded store an indexer of its own (``--indexer``, the default).

One process holds Python's interpreter lock for most of a search, so one server uses about one
core however many clients wait (bench/README.md, issue 33). The first process starts its
background work and then the others, handing them its settings through a pipe (they may
hold secrets, which a command line would show). Each answering one binds the port with
``SO_REUSEPORT``: the kernel spreads new connections over the processes evenly (one socket
shared by all would let the first process awake take every waiting connection at once, and a
keep-alive client stays where it landed).

Over the embedded store the others are *siblings* (:mod:`lorebase.siblings`): events and jobs
travel between them. One of them, the indexer, runs the ingestion jobs and follows the
folders, answering no request, at a lower CPU priority: indexing in the process that answers
made a search wait for the interpreter while documents were read, chunked and written (a
search's p95 beside a folder pass of 400 files 1.13-1.40x idle in one process, 0.87-1.17x
with the indexer apart, in interleaved pairs: bench/README.md). ``--no-indexer`` leaves that
work to the first. Over PostgreSQL each is a full server without a folder watcher, as any
other ``serve`` process.

The first process watches its children: one that ends while the server runs is started again
(not more than once per :data:`RESTART_PAUSE_S`), and stopping the server stops them. A child
whose parent is gone (killed) stops itself within a second, the indexer at once.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import pickle
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, cast

from lorebase.settings import Settings, SiblingPlace

log = logging.getLogger(__name__)

RESTART_PAUSE_S = 5.0
"""The least time between two starts of the same child (a child that cannot start is not
started again in a tight loop)."""
STOP_WAIT_S = 30.0
"""How long stopping waits for the children to finish their requests before killing them."""
PARENT_POLL_S = 1.0
ORPHAN_POLL_S = 0.1
"""How often the indexer looks whether the first process is still there (a new server started
at once after a kill must not find the ingestion lock held by the old one's indexer)."""
READY = b"lorebase-serving"
"""What a child writes on its standard output once it accepts connections."""


def needs_siblings(settings: Settings) -> bool:
    """Whether a server with ``settings`` runs as several processes over the embedded store
    (more than one answering, or an indexer of its own)."""
    serve = settings.serve
    return not settings.shared_store and (serve.processes > 1 or serve.indexer_process)


@contextlib.contextmanager
def siblings_of(settings: Settings) -> Iterator[Settings]:
    """``settings`` for the first of a server's processes over the embedded store (its
    ``serve.processes`` answering, then its indexer when it has one of its own), with the
    private folder of their sockets (removed when the server ends)."""
    folder = Path(tempfile.mkdtemp(prefix="lorebase-serve-"))  # 0700, short: a socket's path
    serve = settings.serve
    try:
        apart = serve.indexer_process
        count = serve.processes + (1 if apart else 0)
        place = SiblingPlace(folder, 0, count, indexer=serve.processes if apart else 0)
        yield dataclasses.replace(settings, serve=dataclasses.replace(serve, sibling=place))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def child_settings(settings: Settings, index: int) -> Settings:
    """The settings of child ``index`` of a server run with ``settings`` (the first's)."""
    serve = settings.serve
    place = serve.sibling
    if place is None:  # a shared store: a full server, minus the folder watcher
        return dataclasses.replace(settings, serve=dataclasses.replace(serve, watch=False))
    here = dataclasses.replace(place, index=index)
    if here.runs_jobs:  # the indexer of its own: the first's ingestion and folders
        return dataclasses.replace(settings, serve=dataclasses.replace(serve, sibling=here))
    return dataclasses.replace(
        settings, serve=dataclasses.replace(serve, ingest=False, watch=False, sibling=here)
    )


def child_count(settings: Settings) -> int:
    """How many processes the first of a server with ``settings`` starts."""
    place = settings.serve.sibling
    return (place.count if place is not None else settings.serve.processes) - 1


def shared_port(host: str, port: int) -> socket.socket:
    """A socket bound to HOST:PORT that every process of the server binds too
    (``SO_REUSEPORT``: only processes of the same user may join it). Made as a TCP socket by
    name (``IPPROTO_TCP``, not 0): asyncio turns Nagle's algorithm off only on connections of
    such a socket, and with it on each answer waited ~40 ms for the client's delayed
    acknowledgement (one client's searches on ``serve --processes 2``: 52 ms against 9)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host.strip("[]"), port))
    except BaseException:
        sock.close()
        raise
    return sock


class ServingProcesses:
    """The first process's children: started, kept running, stopped."""

    def __init__(self, settings: Settings, holder: str) -> None:
        self._settings = settings
        self._holder = holder
        self._children: dict[int, subprocess.Popen[bytes]] = {}
        self._started_at: dict[int, float] = {}
        self._first_start: set[int] = set()  # children whose first process has not answered
        self._stopping = threading.Event()
        self._watcher: threading.Thread | None = None

    def starting(self) -> int:
        """How many children are still on their first start (neither serving yet nor ended):
        until none is, ``/readyz`` says ``starting``. A restart does not count again."""
        return len(self._first_start)

    def start(self) -> None:
        for index in range(1, child_count(self._settings) + 1):
            self._first_start.add(index)
            self._start(index)
        self._watcher = threading.Thread(target=self._watch, name="lorebase-processes", daemon=True)
        self._watcher.start()

    def stop(self) -> None:
        """Each child finishes what it answers (SIGTERM), then is killed past
        :data:`STOP_WAIT_S`."""
        self._stopping.set()
        if self._watcher is not None:
            self._watcher.join(PARENT_POLL_S * 4)
        for child in self._children.values():
            if child.poll() is None:
                child.terminate()
        deadline = time.monotonic() + STOP_WAIT_S
        for child in self._children.values():
            try:
                child.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        # Here, not only when `serve` returns: uvicorn ends a server stopped by a signal by
        # raising that signal again, which no `finally` outlives.
        place = self._settings.serve.sibling
        if place is not None:
            shutil.rmtree(place.folder, ignore_errors=True)

    def _start(self, index: int) -> None:
        settings = child_settings(self._settings, index)
        payload = pickle.dumps((settings, self._holder, index))
        place = settings.serve.sibling
        role = ["indexer"] if place is not None and not place.answers else []  # for `ps`
        child = subprocess.Popen(
            [sys.executable, "-m", "lorebase.api.processes", *role],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        stdin = cast(IO[bytes], child.stdin)
        try:
            stdin.write(payload)
            stdin.close()
        except OSError:  # it died before reading: the watcher starts it again
            pass
        self._children[index] = child
        self._started_at[index] = time.monotonic()
        threading.Thread(
            target=self._heard, args=(index, child), name=f"lorebase-process-{index}", daemon=True
        ).start()

    def _heard(self, index: int, child: subprocess.Popen[bytes]) -> None:
        """The child's one line (:data:`READY`) once it serves; its end closes the pipe."""
        out = cast(IO[bytes], child.stdout)
        with out:
            for line in out:
                if line.strip() == READY:
                    self._first_start.discard(index)
        self._first_start.discard(index)  # ended before serving: not waited for again

    def _watch(self) -> None:
        while not self._stopping.wait(PARENT_POLL_S):
            for index, child in list(self._children.items()):
                code = child.poll()
                if code is None or self._stopping.is_set():
                    continue
                if time.monotonic() - self._started_at[index] < RESTART_PAUSE_S:
                    continue
                log.warning("%s ended (exit code %d); starting it again", self._name(index), code)
                try:
                    self._start(index)
                except OSError as error:  # no memory or processes left: try again later
                    self._started_at[index] = time.monotonic()
                    log.error("%s could not start (%s)", self._name(index), error.strerror)

    def _name(self, index: int) -> str:
        place = self._settings.serve.sibling
        if place is not None and place.indexer_apart and index == place.indexer:
            return "the indexer"
        return f"serving process {index}"


def _follow_parent() -> None:
    """Stop this process (as SIGTERM does: requests finish) once its parent is gone."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_S)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="lorebase-parent", daemon=True).start()


def main() -> None:
    """A child: read its settings from stdin, open the lorebase, and serve on the shared port
    until told to stop, or index (the server's indexer of its own)."""
    settings, holder, index = pickle.load(sys.stdin.buffer)
    if not isinstance(settings, Settings) or not isinstance(index, int):
        raise SystemExit("lorebase.api.processes is started by `lorebase serve`")
    serve = settings.serve
    place = serve.sibling
    if place is not None and not place.answers:
        index_until_stopped(settings, f"{holder}, indexer")
        return
    from lorebase.api.app import run  # not in the indexer, which answers no request
    from lorebase.app import open_lorebase

    _follow_parent()

    def ready() -> None:
        sys.stdout.buffer.write(READY + b"\n")
        sys.stdout.flush()

    with open_lorebase(settings=settings, holder=f"{holder}, process {index}") as lb:
        run(lb, listener=shared_port(serve.host, serve.port), on_ready=ready)


def index_until_stopped(settings: Settings, holder: str) -> None:
    """The server's indexer: the ingestion jobs and the folders, at a lower CPU priority than
    the processes answering requests, until SIGTERM (finishing the job in hand).

    Every thread is lowered, those it starts later too (a nice value belongs to a thread on
    Linux): no search shares an interpreter with it, so none can wait on a lowered thread
    holding the interpreter lock (:mod:`lorebase.priority`). A parent that is
    gone was killed: this process then ends at once, as it would have with it (what it was
    indexing is put back by the next start), so that no orphan holds the ingestion lock when
    the server starts again."""
    from lorebase.app import open_lorebase
    from lorebase.logs import configure_logging
    from lorebase.priority import lower_this_process

    lower_this_process()
    configure_logging()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the first's: it stops this one
    parent = os.getppid()
    with open_lorebase(settings=settings, holder=holder) as lb:
        lb.start_serving()
        try:
            sys.stdout.buffer.write(READY + b"\n")
            sys.stdout.flush()
            while not stop.wait(ORPHAN_POLL_S):
                if os.getppid() != parent:
                    log.warning("the server's first process is gone; the indexer stops")
                    os._exit(1)
        finally:
            lb.stop_serving()


if __name__ == "__main__":
    main()
