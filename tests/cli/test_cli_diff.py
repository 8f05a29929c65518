"""`streamviz diff A B`: exit 0 for the same calls, 1 when they differ, 2 on bad input; text and
JSON; a HAR entry on either side (`--har-entry-a N`, `FILE#N`); standard input read once."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.cli.clikit import Invoke, Write
from tests.streamkit import chunk, frag, har_of, sse
from webapp.lenses.results import Call as LensCall
from webapp.lenses.results import LensResult

PARIS = sse(
    chunk(frag(0, "call_1", "get_weather", '{"city": "Paris"}')), chunk(finish="tool_calls")
)
LYON = sse(chunk(frag(0, "call_1", "get_weather", '{"city": "Lyon"}')), chunk(finish="tool_calls"))
PIECES = sse(
    chunk(frag(0, "call_1", "get_weather", "")),
    chunk(frag(0, args='{"ci')),
    chunk(frag(0, args='ty": "Par')),
    chunk(frag(0, args='is"}')),
    chunk(finish="tool_calls"),
)
"""The call of PARIS in other pieces."""
BARE = sse(
    chunk(frag(0, "call_1", "get_weather", "")),
    chunk(frag(args='{"city":')),
    chunk(frag(args=' "Paris"}')),
    chunk(finish="tool_calls"),
)
"""The call of PARIS, its continuation pieces with no index, id or name."""
TWO = sse(
    chunk(frag(0, "call_1", "get_weather", '{"city": "Paris"}')),
    chunk(frag(1, "call_2", "get_time", "{}")),
    chunk(finish="tool_calls"),
)


def test_the_same_calls_in_other_pieces_exit_0(invoke: Invoke, write: Write) -> None:
    result = invoke("diff", write(PARIS, "a.sse"), write(PIECES, "b.sse"))
    assert result.exit_code == 0, result.output
    assert "call 1  get_weather  = same" in result.stdout
    assert result.stdout.rstrip().endswith("same   The streams mean the same calls: 1 call; the "
                                           "streams differ only in what does not change that "
                                           "(1 difference).")  # fmt: skip


def test_paris_and_lyon_exit_1_naming_arguments_city(invoke: Invoke, write: Write) -> None:
    a, b = write(PARIS, "a.sse"), write(LYON, "b.sse")
    result = invoke("diff", a, b)
    assert result.exit_code == 1
    assert 'arguments.city: "Paris" vs "Lyon"' in result.stdout
    assert "the argument text parts at character 10: a step 0 (line 1)" in result.stdout
    document = json.loads(invoke("diff", a, b, "--format", "json").stdout)
    assert document["same"] is False
    assert document["calls"][0]["differences"] == ['arguments.city: "Paris" vs "Lyon"']
    assert set(document) >= {"a", "b", "calls", "same"}
    assert set(document["calls"][0]) >= {"a", "b", "same", "differences"}


def test_a_call_only_in_b_has_a_null(invoke: Invoke, write: Write) -> None:
    result = invoke("diff", write(PARIS, "a.sse"), write(TWO, "b.sse"), "--format", "json")
    assert result.exit_code == 1
    calls = json.loads(result.stdout)["calls"]
    assert [call["a"] is None for call in calls] == [False, True]
    assert calls[1]["b"]["name"] == "get_time" and calls[1]["same"] is False
    text = invoke("diff", write(PARIS, "a.sse"), write(TWO, "b.sse")).stdout
    assert "call 2  get_time  only in B" in text


def test_bare_continuations_and_a_well_formed_stream_are_the_same(
    invoke: Invoke, write: Write
) -> None:
    result = invoke("diff", write(BARE, "bare.sse"), write(PARIS, "clean.sse"), "--format", "json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["same"] is True
    assert "quirks: bare-continuation, missing-index vs none" in document["streams"]
    assert [q["code"] for q in document["a"]["quirks"]] == ["missing-index", "bare-continuation"]


def test_har_entries_on_either_side(invoke: Invoke, write: Write) -> None:
    path = write(har_of(PARIS, LYON, PIECES), "capture.har")
    assert invoke("diff", f"{path}#1", f"{path}#3").exit_code == 0
    assert invoke("diff", path, path, "--har-entry-b", "3").exit_code == 0
    result = invoke("diff", f"{path}#1", path, "--har-entry-b", "2", "--format", "json")
    assert result.exit_code == 1
    document = json.loads(result.stdout)
    assert (document["a"]["har_entry"], document["b"]["har_entry"]) == (1, 2)
    assert document["b"]["label"] == f"{path}#2"


def test_a_file_whose_name_has_a_hash_is_read_as_it_is(invoke: Invoke, write: Write) -> None:
    result = invoke("diff", write(PARIS, "odd#2"), write(PIECES, "b.sse"))
    assert result.exit_code == 0, result.output


def test_standard_input_is_read_once_for_both_sides(invoke: Invoke) -> None:
    text = har_of(PARIS, PIECES)
    result = invoke("diff", "-", "-", "--har-entry-a", "1", "--har-entry-b", "2", input=text)
    assert result.exit_code == 0, result.output
    assert invoke("diff", "--", "-#1", "-#2", input=text).exit_code == 0
    assert invoke("diff", "--", "-#1", "-#1", input=har_of(PARIS, LYON)).exit_code == 0


def test_bad_input_exits_2(invoke: Invoke, write: Write) -> None:
    good = write(PARIS, "a.sse")
    missing = invoke("diff", good, "/nonexistent/b.sse")
    assert missing.exit_code == 2 and "cannot read /nonexistent/b.sse" in missing.stderr
    garbage = invoke("diff", good, write("hello, not a stream", "b.txt"))
    assert garbage.exit_code == 2 and garbage.stdout == ""
    path = write(har_of(PARIS), "capture.har")
    out_of_range = invoke("diff", good, f"{path}#4")
    assert out_of_range.exit_code == 2 and "there is no entry 4" in out_of_range.stderr
    both = invoke("diff", f"{path}#1", good, "--har-entry-a", "2")
    assert both.exit_code == 2 and "--har-entry-a says 2" in both.stderr
    assert invoke("diff", good).exit_code == 2


def test_ids_of_two_responses_are_not_compared_unless_asked(invoke: Invoke, write: Write) -> None:
    other = PARIS.replace("call_1", "toolu_7")
    a, b = write(PARIS, "a.sse"), write(other, "b.sse")
    assert invoke("diff", a, b).exit_code == 0
    forced = invoke("diff", a, b, "--ids", "compare")
    assert forced.exit_code == 1 and 'id: "call_1" vs "toolu_7"' in forced.stdout


def test_clients_grades_both_sides_with_the_lenses(
    invoke: Invoke, write: Write, monkeypatch: pytest.MonkeyPatch
) -> None:
    import webapp.lenses

    def fake_columns(records: Any, lenses: Any = None, *, timeout: float = 60.0) -> Any:
        arguments = "{}" if len(records) > 3 else '{"city": "Paris"}'  # PIECES is the longer
        call = LensCall("call_1", "get_weather", arguments)
        return (LensResult("pi-ai", "1.6.0", "ok", (call,)),)

    monkeypatch.setattr(webapp.lenses, "client_columns", fake_columns)
    a, b = write(PARIS, "a.sse"), write(PIECES, "b.sse")
    result = invoke("diff", a, b, "--clients", "--format", "json")
    assert result.exit_code == 0, result.output  # the same calls: a client's damage is besides
    document = json.loads(result.stdout)
    assert "grade in pi-ai: intact vs damaged" in document["streams"]
    assert document["calls"][0]["besides"] == ["grade in pi-ai: intact vs damaged"]
    assert [g["client"] for g in document["b"]["grades"]] == ["pi-ai", "adr-0019", "exact-key"]
    without = json.loads(invoke("diff", a, b, "--format", "json").stdout)
    assert [g["client"] for g in without["b"]["grades"]] == ["adr-0019", "exact-key"]


def test_hop_says_what_the_gateway_introduced_between_its_input_and_output(
    invoke: Invoke, write: Write
) -> None:
    from tests.capture.gateway import PROVIDER_SCRIPT, translate

    inner = write(b"".join(PROVIDER_SCRIPT).decode(), "inner.sse")
    outer = write(b"".join(translate(PROVIDER_SCRIPT)).decode(), "outer.sse")
    result = invoke("diff", inner, outer, "--hop")
    assert result.exit_code == 0, result.output
    assert result.stdout.rstrip().endswith(
        "hop    the gateway introduced missing-index and bare-continuation; what the stream "
        "means is unchanged"
    )
    lossy = write(b"".join(translate(PROVIDER_SCRIPT, frozenset({'"celsius"'}))).decode(), "l")
    document = json.loads(invoke("diff", inner, lossy, "--hop", "--format", "json").stdout)
    assert document["introduced"] == ["missing-index", "bare-continuation"]
    assert document["removed"] == []
    assert document["hop"].startswith("the gateway changed what the stream means: get_weather")
    assert document["b"]["verdict"].startswith("The gateway broke the contract: missing-index")
    plain = json.loads(invoke("diff", inner, outer, "--format", "json").stdout)
    assert "hop" not in plain


# -- A non-stream answer on either side (the twin) ---------------------------------------------


def test_a_non_stream_answer_on_either_side(invoke: Invoke, write: Write) -> None:
    from tests.streamanswer import answer_text

    stream = write(PIECES, "stream.sse")
    same = write(answer_text(("call_9", "get_weather", '{"city":"Paris"}')), "same.json")
    lyon = write(answer_text(("call_9", "get_weather", '{"city":"Lyon"}')), "lyon.json")
    result = invoke("diff", stream, same)
    assert result.exit_code == 0, result.output
    assert "same calls as the stream's intended reading" in result.stdout
    assert "(in message.tool_calls)" in result.stdout
    result = invoke("diff", lyon, stream)
    assert result.exit_code == 1, result.output
    assert "differs from the stream's intended reading at call 1, `arguments.city`" in (
        result.stdout
    )
    document = json.loads(invoke("diff", stream, lyon, "--format", "json").stdout)
    assert document["twin"]["answer"] == "b" and document["twin"]["same"] is False
    assert document["b"]["kind"] == "answer"


def test_an_answer_in_a_har_entry(invoke: Invoke, write: Write) -> None:
    from tests.streamanswer import answer_har, answer_text

    har = write(answer_har(PIECES, answer_text(("c", "get_weather", '{"city":"Lyon"}'))), "x.har")
    result = invoke("diff", f"{har}#1", f"{har}#2")
    assert result.exit_code == 1, result.output
    assert "`arguments.city`" in result.stdout


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('{"object": "chat.completion", "choices": []}', "has no choices"),
        ("this is not JSON", "not a stream streamviz can read"),
    ],
)
def test_a_bad_answer_exits_2_saying_why(
    invoke: Invoke, write: Write, text: str, said: str
) -> None:
    result = invoke("diff", write(PIECES, "stream.sse"), write(text, "answer.json"))
    assert result.exit_code == 2
    assert said in result.output and "Traceback" not in result.output
