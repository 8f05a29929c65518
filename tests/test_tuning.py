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


def test_serving_collects_the_young_generation_less_often_until_it_ends() -> None:
    """An upload's assembly in a server (no pauses there) spent about a third of its time in
    young collections at a million chunks: they come every `YOUNG_EVERY` allocations."""
    before = gc.get_threshold()
    with serving():
        assert gc.get_threshold() == (tuning.YOUNG_EVERY, *before[1:])
        assert before[0] < tuning.YOUNG_EVERY
    assert gc.get_threshold() == before


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
    assert tuning.mapped_blocks() is True


def test_importing_the_tuning_loads_no_ctypes() -> None:
    code = "import sys, webapp.tuning; print('ctypes' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True)
    assert done.stdout.strip() == b"False"


def test_a_command_ending_leaves_nothing_for_the_collection_at_exit() -> None:
    """`ending` moves every tracked object to the permanent generation, which the
    interpreter's last collection does not walk (done in a process of its own)."""
    code = (
        "import gc\n"
        "from webapp.tuning import ending\n"
        "kept = [[n] for n in range(10_000)]\n"
        "before = gc.get_freeze_count()\n"
        "ending()\n"
        "print(before, gc.get_freeze_count() >= len(kept), len(gc.get_objects()))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["0", "True", "0"]


def test_the_cli_starts_its_command_without_a_collection_and_with_the_collector_on() -> None:
    """Importing click and `check`'s modules (`loading`) runs no collection over their
    objects, freezes them, and leaves the collector as it found it (a process of its own)."""
    code = (
        "import gc, sys, typing, webapp.tuning\n"  # what comes before click: made already
        "runs = []\n"
        "gc.callbacks.append(lambda phase, info: runs.append(phase))\n"
        "from webapp.cli import main\n"
        "main.get_command(None, 'check')\n"
        "print(len(runs), gc.isenabled(), gc.get_freeze_count() > 10_000, 'click' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["0", "True", "True", "True"]
