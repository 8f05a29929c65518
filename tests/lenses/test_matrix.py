"""Aligning the columns on the calls the stream means (with none, on adr-0019's), marking
differences, and the comparison in one line."""

from __future__ import annotations

from tests.streamkit import chunk, frag, jsonl, sse
from webapp.core.contract import Call as Meant
from webapp.core.contract import Intended
from webapp.core.readers import read
from webapp.lenses.feed import sse_text
from webapp.lenses.matrix import build, same_arguments, same_meaning
from webapp.lenses.results import Call, LensResult

WEATHER = Call("call_1", "get_weather", '{"city":"Paris"}')
TIME = Call("call_2", "get_time", '{"tz":"CET"}')
MEANT = Intended(
    (
        Meant("call_1", "get_weather", '{"city": "Paris"}'),
        Meant("call_2", "get_time", '{"tz":"CET"}'),
    ),
    (),
)
"""The stream means both calls."""


def ok(client: str, *calls: Call) -> LensResult:
    return LensResult(client, "1", "ok", calls)


def test_calls_align_by_id_then_by_order_and_leftovers_go_on_extra_rows() -> None:
    matrix = build(
        [
            ok("pi-ai", TIME, WEATHER, Call("", "", "{}")),
            ok("vercel-ai", Call("gen-1", "get_weather", '{"city": "Paris"}'), TIME),
            ok("adr-0019", WEATHER, TIME),
        ],
        MEANT,
    )
    assert matrix.reference == "intended"
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
        ],
        Intended((Meant("call_1", "get_weather", '{"city": "Paris"}'),), ()),
    )
    assert matrix.comparison == (
        "Against what the stream means: 2 of 4 clients get get_weather's arguments wrong "
        "(pi-ai, langchain); langchain adds 1 phantom call; openai-python fails; "
        "not installed: litellm"
    )
    row = matrix.rows[0]
    assert row.cells[1] is not None and row.cells[1].differs == ("error",)
    assert row.cells[4] is None


def test_all_agree() -> None:
    meant = Intended((Meant("call_1", "get_weather", '{"city":"Paris"}'),), ())
    matrix = build([ok("pi-ai", WEATHER), ok("vercel-ai", WEATHER), ok("adr-0019", WEATHER)], meant)
    assert matrix.comparison == (
        "Against what the stream means: all 2 clients hand the calls as the stream means them"
    )


SAME_INDEX = [
    ok("pi-ai", Call("call_w1", "get_weather", "{}", invalid="Unexpected non-whitespace")),
    ok(
        "openai-python",
        Call("call_w1call_t1", "get_weatherget_time", '{"city":"Paris"}{"tz":"UTC"}'),
    ),
    ok(
        "langchain",
        Call("call_w1", "get_weather", '{"city":"Paris"}'),
        Call("call_t1", "get_time", "{}"),
    ),
    ok(
        "vercel-ai",
        Call("call_w1", "get_weather", '{"city":"Paris"}'),
        Call("call_t1", "get_time", '{"tz":"UTC"}'),
    ),
    ok("litellm", Call("call_t1", "get_time", '{"city":"Paris"}{"tz":"UTC"}')),
    ok("adr-0019", Call("call_w1", "get_weather", "{}", invalid="not valid JSON")),
]
"""What the libraries hand for webapp/examples/same-index.sse (two calls on index 0, told apart
by their headers): adr-0019 keeps one call, the stream means two, and only vercel-ai hands both."""


def test_the_comparison_is_against_what_the_stream_means_not_adr_0019_s_guess() -> None:
    """On adr-0019's single call, vercel-ai (the one client right) looked wrong: "2 of 5 clients
    get get_weather's arguments wrong (langchain, vercel-ai)". Against the two calls the stream
    means, it is never named, and every client that is wrong is."""
    meant = Intended(
        (
            Meant("call_w1", "get_weather", '{"city":"Paris"}'),
            Meant("call_t1", "get_time", '{"tz":"UTC"}'),
        ),
        (),
    )
    matrix = build(SAME_INDEX, meant)
    assert [row.label for row in matrix.rows] == ["get_weather (call_w1)", "get_time (call_t1)"]
    assert matrix.comparison == (
        "Against what the stream means: 1 of 5 clients flags get_weather (pi-ai); "
        "1 of 5 clients gets get_weather's name, id and arguments wrong (openai-python); "
        "1 of 5 clients misses get_weather (litellm); "
        "2 of 5 clients miss get_time (pi-ai, openai-python); "
        "2 of 5 clients get get_time's arguments wrong (langchain, litellm)"
    )
    vercel = [row.cells[3] for row in matrix.rows]
    assert all(cell is not None and cell.differs == () for cell in vercel)
    adr = [row.cells[5] for row in matrix.rows]
    assert [cell and cell.differs for cell in adr] == [("arguments", "flagged"), ("missing",)]


def test_with_no_intended_reading_nothing_is_called_wrong() -> None:
    """The rows follow adr-0019's guess only to line the columns up; the comparison counts the
    choices the clients make and calls none of them wrong."""
    guesses = [
        ok("pi-ai", WEATHER, Call("", "", "{}")),
        ok("vercel-ai", Call("gen-1", "get_weather", '{"city": "Paris"}')),
        ok("litellm", Call("call_1", "get_weather", "{}")),
        LensResult("openai-python", "1", "error", (), "TypeError: no index"),
        ok("adr-0019", WEATHER),
    ]
    matrix = build(guesses, None)
    assert matrix.reference == "adr-0019"
    assert matrix.comparison == (
        "No intended reading to grade the calls against: the 3 clients that hand calls make "
        "3 different choices; openai-python fails"
    )
    assert "wrong" not in matrix.comparison and "guess" in matrix.legend
    same = build([ok("pi-ai", WEATHER), ok("vercel-ai", WEATHER), ok("adr-0019", TIME)], None)
    assert "the 2 clients that hand calls make the same choice" in same.comparison


def test_against_the_intended_reading_blank_arguments_mean_an_empty_object() -> None:
    meant = Intended((Meant("call_1", "ping", ""),), ())
    matrix = build(
        [ok("pi-ai", Call("call_1", "ping", "{}")), ok("adr-0019", Call("call_1", "ping", ""))],
        meant,
    )
    assert [cell and cell.differs for cell in matrix.rows[0].cells] == [(), ()]
    assert same_meaning("", "{}") and not same_arguments("", "{}")


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
