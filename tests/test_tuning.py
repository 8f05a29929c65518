"""The collector pause: counted across threads, and switched off in a server."""

from __future__ import annotations

import gc
import threading

from webapp.tuning import allow_pauses, paused_gc


def test_the_collector_returns_when_the_last_pause_ends_whichever_thread_ends_it() -> None:
    assert gc.isenabled()
    first_in = threading.Event()
    release = threading.Event()

    def other() -> None:
        with paused_gc():
            first_in.set()
            release.wait()

    thread = threading.Thread(target=other)
    thread.start()
    first_in.wait()
    with paused_gc():
        assert not gc.isenabled()
        release.set()
        thread.join()
        assert not gc.isenabled()  # the other thread's pause ended, ours has not
    assert gc.isenabled()


def test_a_pause_never_enables_a_collector_it_found_disabled() -> None:
    gc.disable()
    try:
        with paused_gc():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_pauses_can_be_switched_off() -> None:
    allow_pauses(False)
    try:
        with paused_gc():
            assert gc.isenabled()
    finally:
        allow_pauses(True)
    with paused_gc():
        assert not gc.isenabled()
