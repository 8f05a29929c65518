"""A lens that hangs, crashes, prints, hogs memory or is missing gives a status, never raises."""

from __future__ import annotations

from tests.lenses.fakes import CALL, CRASHES, GARBLES, GREEDY, HANGS, answering, missing, program
from webapp.lenses.pins import INSTALL
from webapp.lenses.results import Call
from webapp.lenses.runner import run_lens


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


def test_a_lens_over_its_memory_cap_fails_alone() -> None:
    (result,) = run_lens(program(GREEDY), ["x"], memory=256 << 20)
    assert result.status == "error"
    assert result.error is not None and "MemoryError" in result.error


def test_a_missing_lens_is_unavailable_with_the_install_command() -> None:
    (result,) = run_lens(missing(), ["x"])
    assert result.status == "unavailable"
    assert result.install == INSTALL == "make clients"
    assert result.error == "litellm is not installed: run `make clients`"
