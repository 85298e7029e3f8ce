"""Work a search hands to another thread — the keyword arm while the question embeds, the
question's language while the model runs — when it is the only search in flight; done on the
search's own thread when others are in flight.

Alone, a search gains the overlap (the model lets go of the interpreter while it runs). With
other searches in flight the cores are already kept busy by them: a hand-off then overlaps
nothing and costs the CPU of waking a thread and passing the interpreter between them (the
keyword arm took ~2 ms of CPU on a thread of its own in a server of 16 clients against ~1 ms
on the search's thread).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future
from contextlib import contextmanager
from typing import Any, TypeVar

T = TypeVar("T")


class Alongside(Executor):
    """An executor over ``pool`` that runs work at once, on the caller's thread, while more
    than one search is :meth:`searching`."""

    def __init__(self, pool: Executor) -> None:
        self._pool = pool
        self._searching = 0
        self._lock = threading.Lock()

    @contextmanager
    def searching(self) -> Iterator[None]:
        """One search in flight for as long as the block runs."""
        with self._lock:
            self._searching += 1
        try:
            yield
        finally:
            with self._lock:
                self._searching -= 1

    @property
    def busy(self) -> bool:
        """Whether other searches are in flight beside the caller's."""
        return self._searching > 1

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        if not self.busy:
            return self._pool.submit(fn, *args, **kwargs)
        done: Future[T] = Future()
        try:
            done.set_result(fn(*args, **kwargs))
        except Exception as error:  # the caller reads it from the future, as from a thread
            done.set_exception(error)
        return done

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._pool.shutdown(wait=wait, cancel_futures=cancel_futures)
