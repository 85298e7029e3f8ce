"""Searches take turns in a process: one runs, the others wait; a search waiting on another
machine lets another run."""

from __future__ import annotations

import threading
import time

import pytest

from lorebase.search.turns import Turns
from waiting import wait_until


def _leave_at_once() -> threading.Event:
    leave = threading.Event()
    leave.set()
    return leave


def _in_turn(turns: Turns, inside: threading.Event, leave: threading.Event) -> threading.Thread:
    def search() -> None:
        with turns.turn():
            inside.set()
            leave.wait(5)

    thread = threading.Thread(target=search)
    thread.start()
    return thread


def test_a_search_waits_for_the_one_holding_the_turn() -> None:
    turns = Turns()
    inside, leave, second = threading.Event(), threading.Event(), threading.Event()
    first = _in_turn(turns, inside, leave)
    assert inside.wait(5)
    other = _in_turn(turns, second, _leave_at_once())
    assert not second.wait(0.2)  # waits while the first holds the turn
    leave.set()
    assert second.wait(5)
    first.join(5)
    other.join(5)


def test_a_search_waiting_on_another_machine_lets_another_run() -> None:
    turns = Turns()
    waiting, answered, other_ran = threading.Event(), threading.Event(), threading.Event()

    def slow_search() -> None:
        with turns.turn(), turns.aside():  # a model server is asked
            waiting.set()
            answered.wait(5)

    slow = threading.Thread(target=slow_search)
    slow.start()
    assert waiting.wait(5)
    fast = _in_turn(turns, other_ran, _leave_at_once())
    fast_left = other_ran.wait(5)
    fast.join(5)
    assert fast_left  # ran while the slow one waited
    answered.set()
    slow.join(5)
    assert not slow.is_alive()


def test_a_turn_is_kept_by_a_search_inside_a_search_and_given_back_on_failure() -> None:
    turns = Turns()
    with pytest.raises(RuntimeError), turns.turn():
        with turns.turn():  # the same thread: no wait on itself
            pass
        raise RuntimeError("the search failed")
    started = time.monotonic()
    with turns.turn():  # given back
        pass
    with turns.aside():  # no turn held: nothing to give
        pass
    assert time.monotonic() - started < 1


def test_without_a_limit_every_search_runs_at_once() -> None:
    """Over PostgreSQL searches take no turns (they wait on the database)."""
    turns = Turns(None)
    inside, leave, second = threading.Event(), threading.Event(), threading.Event()
    first = _in_turn(turns, inside, leave)
    assert inside.wait(5)
    other = _in_turn(turns, second, _leave_at_once())
    assert second.wait(5)  # while the first still runs
    leave.set()
    first.join(5)
    other.join(5)
    with turns.turn(), turns.aside():
        pass


@pytest.mark.parametrize("cores_shared", [True, False])
def test_crowded_while_another_search_waits_for_the_turn(cores_shared: bool) -> None:
    """A search runs parts of itself on other threads unless other processes keep the other
    cores busy and searches wait here."""
    turns = Turns(cores_shared=cores_shared)
    assert not turns.crowded() and turns.room_beside()
    inside, leave = threading.Event(), threading.Event()
    with turns.turn():
        assert not turns.crowded()  # the one holding it does not count
        waiter = _in_turn(turns, inside, leave)
        wait_until(turns.crowded, 5, what="the other search to wait for a turn")
        assert turns.room_beside() is not cores_shared
    assert inside.wait(5)
    assert not turns.crowded() and turns.room_beside()  # it has the turn: nobody waits
    leave.set()
    waiter.join(5)


def test_never_crowded_without_a_limit() -> None:
    turns = Turns(None, cores_shared=True)
    inside, leave = threading.Event(), threading.Event()
    with turns.turn():
        waiter = _in_turn(turns, inside, leave)
        assert inside.wait(5)
        assert not turns.crowded() and turns.room_beside()
    leave.set()
    waiter.join(5)
