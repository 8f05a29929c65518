"""Process tuning: the collector pause counted across threads, a server's settings undone."""

from __future__ import annotations

import gc
import subprocess
import sys
import threading

from webapp import tuning
from webapp.tuning import allow_pauses, paused_gc, serving


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


def test_serving_switches_pauses_off_and_shortens_the_switch_interval_until_it_ends() -> None:
    before = sys.getswitchinterval()
    with serving():
        assert sys.getswitchinterval() == tuning.SWITCH_INTERVAL != before
        with paused_gc():
            assert gc.isenabled()
    assert sys.getswitchinterval() == before
    with paused_gc():
        assert not gc.isenabled()


def test_overlapping_servers_keep_the_tuning_until_the_last_one_stops() -> None:
    before = sys.getswitchinterval()
    first, second = serving(), serving()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    assert sys.getswitchinterval() == tuning.SWITCH_INTERVAL
    with paused_gc():
        assert gc.isenabled()
    second.__exit__(None, None, None)
    assert sys.getswitchinterval() == before
    with paused_gc():
        assert not gc.isenabled()


def test_the_allocator_calls_reach_glibc_on_this_machine() -> None:
    # The CI machine runs glibc: both calls must reach it (False elsewhere, never raising).
    assert tuning.few_arenas() is True
    assert tuning.trim() in (True, False)


def test_importing_the_tuning_loads_no_ctypes() -> None:
    code = "import sys, webapp.tuning; print('ctypes' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True)
    assert done.stdout.strip() == b"False"
