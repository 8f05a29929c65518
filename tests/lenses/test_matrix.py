"""Aligning the columns on adr-0019's calls, marking differences, and the verdict."""

from __future__ import annotations

from tests.streamkit import chunk, frag, jsonl, sse
from webapp.core.readers import read
from webapp.lenses.feed import sse_text
from webapp.lenses.matrix import build, same_arguments
from webapp.lenses.results import Call, LensResult

WEATHER = Call("call_1", "get_weather", '{"city":"Paris"}')
TIME = Call("call_2", "get_time", '{"tz":"CET"}')


def ok(client: str, *calls: Call) -> LensResult:
    return LensResult(client, "1", "ok", calls)


def test_calls_align_by_id_then_by_order_and_leftovers_go_on_extra_rows() -> None:
    matrix = build(
        [
            ok("pi-ai", TIME, WEATHER, Call("", "", "{}")),
            ok("vercel-ai", Call("gen-1", "get_weather", '{"city": "Paris"}'), TIME),
            ok("adr-0019", WEATHER, TIME),
        ]
    )
    assert [row.label for row in matrix.rows] == [
        "get_weather (call_1)",
        "get_time (call_2)",
        "extra call 1",
    ]
    pi, vercel, adr = zip(*(row.cells for row in matrix.rows), strict=True)
    assert [cell and cell.call for cell in pi] == [WEATHER, TIME, Call("", "", "{}")]
    assert [cell and cell.differs for cell in pi] == [(), (), ("extra",)]
    assert vercel[0] is not None and vercel[0].differs == ("id",)  # spacing does not count
    assert [cell and cell.differs for cell in adr] == [(), (), ()]


def test_the_verdict_names_the_call_the_culprits_and_who_fails() -> None:
    matrix = build(
        [
            ok("pi-ai", Call("call_1", "get_weather", "{}")),
            LensResult("openai-python", "1", "error", (), "TypeError: no index"),
            ok("langchain", Call("call_1", "get_weather", "{}"), Call(None, None, "x")),
            ok("vercel-ai", WEATHER),
            LensResult("litellm", "1", "unavailable", (), "litellm is not installed"),
            ok("adr-0019", WEATHER),
        ]
    )
    assert matrix.verdict == (
        "2 of 4 clients get get_weather's arguments wrong (langchain, pi-ai); "
        "langchain adds 1 phantom call; openai-python fails (TypeError: no index); "
        "not installed: litellm"
    )
    row = matrix.rows[0]
    assert row.cells[1] is not None and row.cells[1].differs == ("error",)
    assert row.cells[4] is None


def test_all_agree() -> None:
    matrix = build([ok("pi-ai", WEATHER), ok("vercel-ai", WEATHER), ok("adr-0019", WEATHER)])
    assert matrix.verdict == "All 2 clients agree with adr-0019"


def test_arguments_compare_as_json_values_else_as_text() -> None:
    assert same_arguments('{"a": 1}', '{"a":1}')
    assert not same_arguments('{"a": 1}', "{}")
    assert same_arguments('{"a": ', '{"a": ')
    assert not same_arguments('{"a": ', '{"a":')
    assert not same_arguments("", "{}")


def test_the_feed_rebuilds_sse_from_any_input_format() -> None:
    chunks = [chunk(frag(0, "call_1", "get_weather", '{"city":"Paris"}')), chunk(finish="stop")]
    again = read(sse_text(read(jsonl(*chunks), "jsonl").records), "sse")
    original = read(sse(*chunks, done=False), "sse")
    assert [r.value for r in again.records] == [r.value for r in original.records]
    with_done = read(sse(*chunks), "sse").records
    assert sse_text(with_done).endswith("data: [DONE]\n\n")
