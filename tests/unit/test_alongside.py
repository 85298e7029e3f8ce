"""Work beside a search: on another thread when the search is alone, on its own thread when
other searches are in flight."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from lorebase.search.alongside import Alongside


def test_alone_the_work_runs_on_another_thread_and_beside_others_on_the_callers() -> None:
    with ThreadPoolExecutor(2) as pool:
        alongside = Alongside(pool)
        with alongside.searching():
            alone = alongside.submit(threading.get_ident).result()
            assert alone != threading.get_ident() and not alongside.busy
            with alongside.searching():  # another search in flight
                assert alongside.busy
                assert alongside.submit(threading.get_ident).result() == threading.get_ident()
            assert not alongside.busy
        assert not alongside.busy


def test_work_run_at_once_fails_as_work_on_a_thread_fails() -> None:
    """A failure reaches the caller through the future either way, and a search that fails
    is counted out."""

    def fail() -> None:
        raise ValueError("no")

    with ThreadPoolExecutor(1) as pool:
        alongside = Alongside(pool)
        with alongside.searching():
            with pytest.raises(ValueError):
                alongside.submit(fail).result()
            with pytest.raises(RuntimeError), alongside.searching():
                raise RuntimeError("the other search failed")
            assert not alongside.busy
            with alongside.searching(), pytest.raises(ValueError):
                alongside.submit(fail).result()
