"""Extraction in warm worker processes whose memory, CPU time and output are bounded.

A pattern scan for decompression bombs always misses a spelling (``/Fl``, ``#46lateDecode``,
a content stream calling itself an image); this bounds the work itself. Each worker caps its
own address space (``RLIMIT_AS``) and, before each file, its CPU time (``RLIMIT_CPU``); the
parent waits a bounded wall-clock time and accepts a bounded reply. A file that breaks a
bound costs one worker, which is replaced, and comes out as ``too_large`` or ``timeout``:
never the parent's memory, never the rest of the pass.

Workers are fresh Python processes (``python -c``, not a fork of a threaded server holding an
embedding model, and not multiprocessing, which re-imports the parent's main module in each
child) that import the readers and nothing else. They start on first use (~0.2 s), serve file
after file over a socket, and one whose resident memory grew past ``_RECYCLE_RSS`` is retired
after its job. A worker killed while idle is reaped at once, not left a zombie until the next
file: a thread of the pool's own (started with the first warm worker) watches the idle workers'
sockets, which only a dead worker's end makes readable.

    with ExtractionPool(settings) as pool:
        extracted = pool.extract(data, path)   # raises ExtractionFailed
"""

from __future__ import annotations

import contextlib
import importlib
import math
import os
import pickle
import resource
import signal
import socket
import subprocess
import sys
import threading
from pathlib import PurePath
from types import TracebackType
from typing import TYPE_CHECKING, Any

from lorebase.children import child_environment
from lorebase.errors import ExtractionFailed
from lorebase.extract.registry import extract_bytes
from lorebase.formats import extractor_modules, is_supported
from lorebase.priority import lower_this_thread
from lorebase.settings import MB, ExtractSettings
from lorebase.types import Element, ElementKind, Extracted, FailureReason, Part

if TYPE_CHECKING:  # multiprocessing loads when a pool starts: not in a command that only searches
    from multiprocessing.connection import Connection

_WORKER_CODE = "import sys; from lorebase.extract.sandbox import serve; serve(sys.argv[1:])"
# Wall-clock time the parent waits, as a multiple of the CPU limit plus a grace: a busy
# machine stretches wall time, and the worker's own CPU limit fires first when it is working.
_WALL_FACTOR = 2.0
_WALL_GRACE = 1.0
# A worker whose resident memory is past this after a job is retired rather than kept warm.
_RECYCLE_RSS = 256 * MB
_JOIN_SECONDS = 2.0
# Room for the reply's envelope around an extraction of max_result_bytes.
_REPLY_OVERHEAD = 4096
_OK = "ok"
# A worker's exit status when it cannot even hold the file it was sent.
_NO_MEMORY_EXIT = 3
_FAILED = "failed"


class ExtractionPool:
    """Runs :func:`extract_bytes` in up to ``settings.workers`` bounded worker processes.

    Thread-safe: each call takes an idle worker (or starts one, or waits for one).
    """

    def __init__(self, settings: ExtractSettings) -> None:
        self.settings = settings
        self._lock = threading.Condition()
        self._idle: list[_Worker] = []
        self._started = 0  # workers alive or starting, idle or busy
        self._closed = False
        self._reaper: threading.Thread | None = None
        self._bell: tuple[socket.socket, socket.socket] | None = None  # (ring, heard)

    def extract(self, data: bytes, path: PurePath) -> Extracted:
        """Extract one file's bytes in a worker. Every failure is :class:`ExtractionFailed`."""
        if not is_supported(path):  # no worker needed to say so
            raise ExtractionFailed(FailureReason.UNSUPPORTED_FORMAT)
        worker = self._acquire()
        keep = False
        try:
            outcome = worker.run(data, path, self.settings)
            keep = worker.healthy
        finally:
            self._release(worker, keep)
        if isinstance(outcome, Extracted):
            return outcome
        raise outcome

    def worker_pids(self) -> list[int]:
        """Process ids of the idle workers (for operators and tests)."""
        with self._lock:
            return [w.pid for w in self._idle]

    def close(self) -> None:
        """Stop the idle workers; busy ones stop when their job ends."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
            self._started -= len(idle)
            self._lock.notify_all()
            reaper, bell = self._reaper, self._bell
        self._wake()
        if reaper is not None:
            reaper.join()
        for worker in idle:
            worker.stop()
        for end in bell or ():
            end.close()

    def __enter__(self) -> ExtractionPool:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- workers -----------------------------------------------------------------------------
    def _acquire(self) -> _Worker:
        with self._lock:
            while True:
                if self._closed:
                    raise RuntimeError("the extraction pool is closed")
                while self._idle:
                    worker = self._idle.pop()
                    if worker.alive():
                        return worker
                    worker.stop()  # died while idle (killed from outside): replace it
                    self._started -= 1
                if self._started < self.settings.workers:
                    self._started += 1
                    break
                self._lock.wait()
        try:
            return _Worker.start(self.settings)
        except BaseException:
            with self._lock:
                self._started -= 1
                self._lock.notify()
            raise

    def _release(self, worker: _Worker, keep: bool) -> None:
        with self._lock:
            if keep and not self._closed:
                self._idle.append(worker)
                self._lock.notify()
                if self._reaper is None:
                    self._start_reaper()
                else:
                    self._wake()  # one more socket to watch
                return
            self._started -= 1
            self._lock.notify()
        worker.stop()

    # -- the reaper --------------------------------------------------------------------------
    def _start_reaper(self) -> None:
        self._bell = socket.socketpair()
        for end in self._bell:
            end.setblocking(False)
        self._reaper = threading.Thread(
            target=self._reap, args=(self._bell[1],), name="lorebase-extract-reaper", daemon=True
        )
        self._reaper.start()

    def _wake(self) -> None:
        """Make the reaper look at the idle workers again."""
        if self._bell is not None:
            with contextlib.suppress(OSError):  # rung already (the buffer is full), or closed
                self._bell[0].send(b"\0")

    def _reap(self, heard: socket.socket) -> None:
        """Until the pool closes: wait for an idle worker's socket to turn readable — an idle
        worker sends nothing, so it has died (or broken step) — and stop (reap) it. A worker
        taken for a job meanwhile is the job's to judge: only workers still idle are reaped."""
        from multiprocessing.connection import wait

        while True:
            with self._lock:
                if self._closed:
                    return
                watched = {worker.conn.fileno(): worker for worker in self._idle}
            ready = wait([heard.fileno(), *watched])
            if heard.fileno() in ready:
                with contextlib.suppress(BlockingIOError):
                    heard.recv(4096)
            dead = []
            with self._lock:
                for fd in ready:
                    worker = watched.get(fd)  # type: ignore[arg-type]
                    if worker in self._idle and worker.conn.poll(0):
                        self._idle.remove(worker)
                        self._started -= 1
                        self._lock.notify()
                        dead.append(worker)
            for worker in dead:
                worker.healthy = False
                worker.stop()


class _Worker:
    """One worker process and the parent's end of its socket."""

    def __init__(self, process: subprocess.Popen[bytes], conn: Connection) -> None:
        self.process = process
        self.conn = conn
        self.healthy = True

    @classmethod
    def start(cls, settings: ExtractSettings) -> _Worker:
        parent, child = socket.socketpair()
        env = child_environment()
        limits = (settings.max_memory_bytes, settings.max_seconds, settings.max_result_bytes)
        try:
            command = [sys.executable, "-c", _WORKER_CODE, str(child.fileno())]
            process = subprocess.Popen(
                [*command, *(str(limit) for limit in limits), *(["lowered"] * settings.lowered)],
                stdin=subprocess.DEVNULL,
                pass_fds=(child.fileno(),),
                env=env,
                close_fds=True,
            )
        finally:
            child.close()
        from multiprocessing.connection import Connection

        return cls(process, Connection(parent.detach()))

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def run(self, data: bytes, path: PurePath, settings: ExtractSettings) -> Extracted | Exception:
        """The extraction, or the failure to raise; marks the worker unhealthy when it must
        not be reused (dead, over a limit mid-job, or grown large)."""
        try:
            self.conn.send_bytes(pickle.dumps((path, settings), pickle.HIGHEST_PROTOCOL))
            self.conn.send_bytes(data)
            if not self.conn.poll(settings.max_seconds * _WALL_FACTOR + _WALL_GRACE):
                self.healthy = False
                return ExtractionFailed(FailureReason.TIMEOUT, "over the time limit")
            payload = self.conn.recv_bytes(settings.max_result_bytes + _REPLY_OVERHEAD)
        except (EOFError, BrokenPipeError, ConnectionResetError):
            self.healthy = False
            return self._death()
        except OSError:  # the reply is over max_result_bytes: the stream is no longer in step
            self.healthy = False
            return ExtractionFailed(FailureReason.TOO_LARGE, "extraction over the size limit")
        reply = pickle.loads(payload)
        if reply[-1] > _RECYCLE_RSS:
            self.healthy = False
        if reply[0] == _OK:
            return unpack(reply[1])
        return ExtractionFailed(FailureReason(reply[1]), reply[2])

    def _death(self) -> ExtractionFailed:
        """The failure for a worker that ended mid-job: past its CPU time is ``timeout``;
        anything else (killed at the address-space limit, an abort on a failed allocation)
        is taken as ``too_large``, the bound it most likely hit."""
        try:
            code: int | None = self.process.wait(_JOIN_SECONDS)
        except subprocess.TimeoutExpired:
            code = None
        if code == -signal.SIGXCPU:
            return ExtractionFailed(FailureReason.TIMEOUT, "over the CPU time limit")
        return ExtractionFailed(FailureReason.TOO_LARGE, f"reader ended by {_signal_name(code)}")

    def stop(self) -> None:
        self.conn.close()  # an idle worker reads end-of-file and leaves
        try:
            self.process.wait(_JOIN_SECONDS if self.healthy else 0)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _signal_name(code: int | None) -> str:
    if code is None:
        return "an unknown cause"
    if code < 0:
        try:
            return signal.Signals(-code).name
        except ValueError:
            return f"signal {-code}"
    return f"exit status {code}"


# -- the worker side -----------------------------------------------------------------------


def serve(argv: list[str]) -> None:
    """A worker's life: cap the address space once, load the readers, then extract file after
    file until the parent closes the socket. Runs in the child process; ``argv`` is the
    socket's descriptor, the memory limit, the CPU seconds per file, the reply limit and
    whether to run at a lower priority (lorebase.priority)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    from multiprocessing.connection import Connection

    conn = Connection(int(argv[0]))
    memory, seconds, max_result = int(argv[1]), float(argv[2]), int(argv[3])
    if argv[4:5] == ["lowered"]:  # reading files yields the processor to requests
        lower_this_thread()
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    for module in extractor_modules():  # loaded up front, so no file pays for an import
        importlib.import_module(module)
    while True:
        try:
            path, settings = pickle.loads(conn.recv_bytes())
            data = conn.recv_bytes()
        except EOFError:  # the parent closed the socket
            return
        except MemoryError:  # the file alone is past the limit: leave, the parent reports it
            os._exit(_NO_MEMORY_EXIT)
        _arm_cpu_limit(seconds)
        conn.send_bytes(_reply(data, path, settings, max_result))


def _reply(data: bytes, path: PurePath, settings: ExtractSettings, max_result: int) -> bytes:
    reply: tuple[Any, ...]
    try:
        reply = (_OK, pack(extract_bytes(data, path, settings)))
        del data
        payload = pickle.dumps((*reply, _rss()), pickle.HIGHEST_PROTOCOL)
        if len(payload) <= max_result:
            return payload
        reply = (_FAILED, FailureReason.TOO_LARGE.value, "extraction over the size limit")
    except ExtractionFailed as failure:
        reply = (_FAILED, failure.reason.value, failure.detail)
    except MemoryError:
        reply = (_FAILED, FailureReason.TOO_LARGE.value, "out of memory while reading")
    except Exception as exc:  # not a reader's failure (those are ExtractionFailed): keep serving
        reply = (_FAILED, FailureReason.CORRUPT.value, type(exc).__name__)
    return pickle.dumps((*reply, _rss()), pickle.HIGHEST_PROTOCOL)


# -- the reply ---------------------------------------------------------------------------------
# An Extracted travels as plain tuples: pickling thousands of frozen dataclasses costs about
# twice as much, and an element's text is left out when it is the document's text between its
# offsets (it almost always is). The field lists are pinned by a test.
_ELEMENT_FIELDS = (
    "kind",
    "text",
    "start",
    "end",
    "level",
    "line",
    "page",
    "language",
    "symbol",
    "boxes",
    "header",
)
_EXTRACTED_FIELDS = (
    "kind",
    "title",
    "elements",
    "text",
    "content_hash",
    "encoding",
    "language",
    "page_count",
    "warnings",
    "metadata",
    "parts",
)
_PART_FIELDS = ("name", "size", "content_hash", "extracted", "reason")
_ELEMENT_KINDS = {kind.value: kind for kind in ElementKind}


def pack(extracted: Extracted) -> tuple[Any, ...]:
    """``extracted`` as plain values, cheap to pickle (see :func:`unpack`)."""
    text = extracted.text
    elements = [
        (
            e.kind.value,
            None if e.text == text[e.start : e.end] else e.text,
            e.start,
            e.end,
            e.level,
            e.line,
            e.page,
            e.language,
            e.symbol,
            e.boxes,
            e.header,
        )
        for e in extracted.elements
    ]
    parts = [
        (
            part.name,
            part.size,
            part.content_hash,
            None if part.extracted is None else pack(part.extracted),
            None if part.reason is None else part.reason.value,
        )
        for part in extracted.parts
    ]
    return (
        str(extracted.kind),
        extracted.title,
        elements,
        text,
        extracted.content_hash,
        extracted.encoding,
        extracted.language,
        extracted.page_count,
        extracted.warnings,
        dict(extracted.metadata),
        parts,
    )


def unpack(packed: tuple[Any, ...]) -> Extracted:
    """The :class:`Extracted` that :func:`pack` made ``packed`` from."""
    kind, title, rows, text, digest, encoding, language, page_count, warnings, meta, parts = packed
    kinds = _ELEMENT_KINDS
    elements = tuple(
        Element(
            kinds[k],
            text[start:end] if t is None else t,
            start,
            end,
            level,
            line,
            page,
            lang,
            symbol,
            tuple(boxes),
            header,
        )
        for k, t, start, end, level, line, page, lang, symbol, boxes, header in rows
    )
    return Extracted(
        kind,
        title,
        elements,
        text,
        digest,
        encoding,
        language,
        page_count,
        tuple(warnings),
        meta,
        tuple(
            Part(
                name,
                size,
                part_hash,
                None if inner is None else unpack(inner),
                None if reason is None else FailureReason(reason),
            )
            for name, size, part_hash, inner, reason in parts
        ),
    )


def _arm_cpu_limit(seconds: float) -> None:
    """RLIMIT_CPU counts the process's whole life, so each job moves the soft limit to the CPU
    time used so far plus ``seconds``; at it the kernel sends SIGXCPU, which ends the worker.
    The hard limit stays where it is so the soft one can move up again."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    soft = math.ceil(usage.ru_utime + usage.ru_stime + seconds)
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))


def _rss() -> int:
    """Resident memory of this process in bytes (0 where /proc is missing)."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return 0
