"""A lens that hangs, crashes, prints, hogs memory or is missing gives a status, never raises."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.lenses.fakes import CALL, CRASHES, GARBLES, GREEDY, HANGS, answering, missing, program
from webapp.lenses.pins import BY_CLIENT, INSTALL
from webapp.lenses.results import Call
from webapp.lenses.runner import MEMORY, PYLENS, Lens, lens_for, ran_out, run_lens

NODE_BUFFERS = "const a = []; for (;;) a.push(Buffer.alloc(1 << 20, 1));"
"""Node filling its heap with buffers (dies in an abort, a V8 message on stderr)."""
NODE_ARRAYS = "const a = []; for (;;) a.push(new Array(1e6).fill(1.5));"
"""Node filling its JavaScript heap (dies in an abort or a segfault)."""


def test_an_answer_is_read_past_what_the_library_printed() -> None:
    (result,) = run_lens(answering({"status": "ok", "calls": [CALL], "error": None}), ["x"])
    assert result.status == "ok"
    assert result.calls == (Call("call_1", "get_weather", '{"city":"Paris"}'),)
    assert result.version == "3.57.0"


def test_one_result_per_stream_in_order() -> None:
    results = run_lens(answering({"status": "error", "calls": [], "error": "boom"}), ["a", "b"])
    assert [(r.status, r.error) for r in results] == [("error", "boom"), ("error", "boom")]


def test_a_hanging_lens_is_killed_at_the_timeout() -> None:
    (result,) = run_lens(program(HANGS), ["x"], timeout=0.5)
    assert result.status == "error"
    assert result.error == "openai-python timed out after 0.5 s"


def test_a_crashing_lens_gives_its_exit_status_and_stderr() -> None:
    (result,) = run_lens(program(CRASHES), ["x"])
    assert result.status == "error"
    assert result.error is not None
    assert "crashed (exit status 139)" in result.error
    assert "Segmentation fault (pretend)" in result.error


def test_a_lens_that_answers_nonsense() -> None:
    (result,) = run_lens(program(GARBLES), ["x"])
    assert result.status == "error"
    assert result.error is not None and "no readable reply" in result.error


def test_a_lens_over_its_memory_cap_is_said_to_have_hit_the_cap() -> None:
    (result,) = run_lens(program(GREEDY), ["x"], memory=256 << 20)
    assert result.status == "error" and result.limit == "memory"
    assert result.error is not None
    assert result.error.startswith("openai-python ran out of its 256 MiB memory cap")
    assert "MemoryError" not in result.error  # not shown as the library's own error


def test_a_node_lens_over_its_memory_cap_is_said_to_have_hit_the_cap() -> None:
    """Node dies of the cap in several ways (an abort with a V8 or C++ message, a segfault with
    none); every one is the cap, found by the message or by the peak memory."""
    node = shutil.which("node")
    assert node is not None, "the Node lenses need node on PATH (make clients)"
    for code in (NODE_BUFFERS, NODE_ARRAYS):
        lens = Lens(BY_CLIENT["pi-ai"], (node, "-e", code))
        (result,) = run_lens(lens, ["x"], memory=256 << 20)
        assert (result.status, result.limit) == ("error", "memory"), result.error
        assert result.error == (
            "pi-ai ran out of its 256 MiB memory cap (a limit streamviz sets on every lens, "
            "not an error of the library)"
        )
    assert ran_out("pi-ai", MEMORY) == (
        "pi-ai ran out of its 1 GiB memory cap (a limit streamviz sets on every lens, not an "
        "error of the library)"
    )


def test_a_lens_whose_library_reports_an_allocation_failure_hit_the_cap() -> None:
    reply = {"status": "error", "calls": [], "error": "RangeError: Array buffer allocation failed"}
    (result,) = run_lens(answering(reply, "vercel-ai"), ["x"], memory=512 << 20)
    assert result.limit == "memory"
    assert result.error is not None and result.error.startswith(
        "vercel-ai ran out of its 512 MiB memory cap"
    )


def test_a_crash_that_is_not_the_cap_stays_a_crash() -> None:
    (result,) = run_lens(program(CRASHES), ["x"], memory=256 << 20)
    assert result.limit is None and result.error is not None and "crashed" in result.error


def test_a_crash_spawned_from_a_large_process_is_not_called_the_cap() -> None:
    """A child's ru_maxrss starts at its parent's peak: spawned from a server (or a test run)
    larger than the cap, every crash read as "ran out of its memory cap"."""
    ballast = bytearray(96 << 20)
    ballast[::4096] = b"\x01" * len(range(0, len(ballast), 4096))  # resident, not just mapped
    (result,) = run_lens(program(CRASHES), ["x"], memory=64 << 20)
    assert len(ballast) and result.limit is None and "crashed" in (result.error or "")


def test_a_lens_runs_in_a_folder_of_its_own_with_no_import_path_from_outside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Started from a folder holding `json.py` and with PYTHONPATH and NODE_OPTIONS set, a lens
    still runs where nothing of the caller's can be imported."""
    (tmp_path / "json.py").write_text("raise RuntimeError('a local json.py')\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setenv("NODE_OPTIONS", "--require /nonexistent.js")
    code = (
        "import json, os, sys\n"
        "json.load(sys.stdin)\n"
        "where = {'cwd': os.getcwd(), 'path': sys.path, 'env': sorted(os.environ)}\n"
        "reply = {'status': 'ok', 'calls': [], 'error': json.dumps(where)}\n"
        "print(json.dumps({'results': [reply]}))\n"
    )
    (result,) = run_lens(program(code), ["x"])
    assert result.status == "ok", result.error
    seen = json.loads(result.error or "{}")
    assert seen["cwd"] != str(tmp_path) and Path(seen["cwd"]).name.startswith("streamviz-lens-")
    assert str(tmp_path) not in seen["path"]
    assert "PYTHONPATH" not in seen["env"] and "NODE_OPTIONS" not in seen["env"]
    assert not Path(seen["cwd"]).exists()  # removed after the run


def test_the_python_lenses_run_as_isolated_scripts() -> None:
    lens = lens_for(BY_CLIENT["litellm"])
    assert lens.command[1:3] == ("-I", str(PYLENS)) and lens.cwd is None


def test_a_missing_lens_is_unavailable_with_the_install_command() -> None:
    (result,) = run_lens(missing(), ["x"])
    assert result.status == "unavailable"
    assert result.install == INSTALL == "make clients"
    assert result.error == "litellm is not installed: run `make clients`"
