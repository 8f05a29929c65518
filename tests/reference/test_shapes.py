"""Chunk shapes (`webapp.core.shapes`): a chunk of a known shape is assembled without being parsed,
and the trace is the one parsing every chunk gives.

The plain-lane tests (`test_plain`) already run every stream both ways; these aim at the
shapes themselves: what is learnt from a chunk, argument texts that cannot be sliced from
the text (quotes, escapes, control characters, lone surrogates), shapes that must not be
learnt (the text found in the wrong place, a duplicate key), streams where no two chunks
share a shape, and that a run of one shape really is assembled without parsing.
"""

from __future__ import annotations

import json

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.reference.test_agreement import SOME, agree
from tests.reference.test_plain import same_both_ways
from tests.streamkit import chunk, frag
from webapp.core import shapes as shapes_module
from webapp.core.assembler import assemble
from webapp.core.jsoncheck import dumps
from webapp.core.options import Options
from webapp.core.readers import read
from webapp.core.records import Payloads
from webapp.core.rules import POLICIES
from webapp.core.shapes import WASTE, Shapes, usable
from webapp.core.trace import Trace

HEADER = chunk(frag(index=0, id="call_1", name="write", args=""))


def _learnt(payload: str) -> Shapes:
    shapes = Shapes()
    shapes.learn(payload, json.loads(payload), 0)
    return shapes


def test_a_shape_is_the_text_around_the_argument_string() -> None:
    payload = dumps(chunk(frag(index=0, args="abc"))).decode()
    shapes = _learnt(payload)
    ((prefix, (suffix, middle, keys)),) = shapes.known.items()
    assert prefix.endswith('"arguments":"') and suffix.startswith('"}}]}')
    assert prefix + "abc" + suffix == payload
    assert middle is None and keys == (0, None, None)
    assert (shapes.tail, shapes.middle) == (suffix, None)


def test_the_same_text_later_in_the_chunk_is_not_taken_for_the_arguments() -> None:
    """The first place tried (the last in the text) is a field after the fragment: the probe
    finds that out and the next place is tried."""
    value = chunk(frag(args="abc"))
    value["choices"][0]["logprobs"] = "abc"
    payload = dumps(value).decode()
    ((prefix, _),) = _learnt(payload).known.items()
    assert prefix.endswith('"arguments":"') and payload.count('"abc"') == 2


def test_a_duplicate_arguments_key_teaches_the_one_that_counts_or_nothing() -> None:
    earlier = (
        '{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"x","arguments":"y"}}]}}]}'
    )
    assert orjson.loads(earlier)["choices"][0]["delta"]["tool_calls"][0]["function"] == {
        "arguments": "y"
    }
    ((prefix, _),) = _learnt(earlier).known.items()
    assert prefix.endswith('"x","arguments":"'), "the key that wins is the last one"
    same = earlier.replace('"y"', '"x"')
    ((prefix, _),) = _learnt(same).known.items()
    assert prefix.endswith('"x","arguments":"')


@pytest.mark.parametrize(
    "text", ['a"b', "a\\b", "tab\there", "line\nbreak", "\x7f", "\u2028", "\ud800"]
)
def test_texts_that_cannot_be_sliced_from_the_payload_teach_nothing(text: str) -> None:
    assert not usable(text)
    payload = json.dumps(chunk(frag(index=0, args=text)), ensure_ascii=False)
    assert not _learnt(payload).known


def test_learning_that_teaches_nothing_stops_until_a_shape_is_used() -> None:
    """Two fields change in every chunk (no hole): each chunk replaces the last one's shape."""
    shapes = Shapes()
    for number in range(2000):
        value = {**chunk(frag(index=0, args="abc")), "a": f"{number}", "b": f"{number}"}
        shapes.learn(dumps(value).decode(), value, 0)
    assert shapes.wasted == WASTE
    ((_, (tail, _, _)),) = shapes.known.items()
    assert '"a":"1024","b":"1024"' in tail, "the first chunk, then 1,024 replacing it"
    shapes.learn(dumps(value).decode(), value, 1)
    ((_, (tail, _, _)),) = shapes.known.items()
    assert '"a":"1999"' in tail, "each use allows more"


def test_new_shapes_are_learnt_up_to_a_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """A field before the fragment that changes in every chunk: a new prefix each time."""
    monkeypatch.setattr(shapes_module, "SHAPES", 50)
    shapes = Shapes()
    for number in range(80):
        value = {"n": f"{number}", **chunk(frag(index=0, args="abc"))}
        shapes.learn(dumps(value).decode(), value, 0)
    assert len(shapes.known) == 50 and shapes.wasted == 0


def _stream(
    pieces: list[dict[str, object]], *, ascii_only: bool = False, noise: list[str] | None = None
) -> str:
    """The header, the pieces and a finish chunk as SSE; `noise`: an `obfuscation` field at
    the end of each chunk, as OpenAI sends (its values taken in turn)."""
    values = [HEADER, *pieces, chunk(finish="tool_calls")]
    if noise:
        values = [{**value, "obfuscation": noise[n % len(noise)]} for n, value in enumerate(values)]
    payloads = [json.dumps(value, ensure_ascii=ascii_only) for value in values]
    return "".join(f"data: {payload}\n\n" for payload in [*payloads, "[DONE]"])


def test_a_field_that_changes_in_every_chunk_is_learnt_as_a_hole() -> None:
    shapes = Shapes()
    for noise in ("Qx", "a7Fk2"):
        value = {**chunk(frag(index=0, args="abc")), "obfuscation": noise}
        shapes.learn(dumps(value).decode(), value, 0)
    ((_, (tail, middle, _)),) = shapes.known.items()
    assert middle is not None and middle.endswith(',"obfuscation":"') and tail == '"}'
    assert (shapes.tail, shapes.middle) == (tail, middle)


@pytest.mark.parametrize("field", ["model", "error"])
def test_a_field_the_assembler_reads_is_never_a_hole(field: str) -> None:
    shapes = Shapes()
    for noise in ("Qx", "a7Fk2"):
        value = {**chunk(frag(index=0, args="abc")), field: noise}
        shapes.learn(dumps(value).decode(), value, 0)
    ((_, (_, middle, _)),) = shapes.known.items()
    assert middle is None


def test_a_value_inside_the_chunk_that_changes_is_never_a_hole() -> None:
    """The finish reason differs: a hole must be a top-level field."""
    shapes = Shapes()
    for finish in ("x", "y"):
        value = chunk(frag(index=0, args="abc"), finish=finish)
        shapes.learn(dumps(value).decode(), value, 0)
    ((_, (_, middle, _)),) = shapes.known.items()
    assert middle is None


texts = st.text(max_size=6) | st.sampled_from(["", " ", "{", '"a":', "1}", "é", "\x00", "\\"])


@SOME
@given(
    st.lists(texts, min_size=1, max_size=30),
    st.sampled_from([0, None, 1]),
    st.sampled_from(POLICIES),
    st.booleans(),
)
def test_runs_of_one_shape_assemble_as_parsing_every_chunk_does(
    pieces: list[str], index: int | None, policy: str, ascii_only: bool
) -> None:
    """Any argument texts, in a run of chunks that differ only by them: sliced where they can
    be, parsed where they cannot, the same trace either way."""
    fragments = [
        frag(args=text) if index is None else frag(index=index, args=text) for text in pieces
    ]
    text = _stream([chunk(fragment) for fragment in fragments], ascii_only=ascii_only)
    with pytest.MonkeyPatch.context() as monkeypatch:
        lane = same_both_ways(text, Options(policy), monkeypatch)
    assert isinstance(lane.records, Payloads)
    agree(lane.records, Options(policy))


@SOME
@given(
    st.lists(st.tuples(st.sampled_from([0, 1, 2]), texts), max_size=30), st.sampled_from(POLICIES)
)
def test_interleaved_shapes_assemble_as_parsing_every_chunk_does(
    pieces: list[tuple[int, str]], policy: str
) -> None:
    """Three calls' pieces interleaved, with and without an index (one shape per call, one
    for the bare ones): each resolved by the rules at its own step, not by its shape's first."""
    headers = [chunk(frag(index=n, id=f"call_{n}", name="f", args="")) for n in range(3)]
    body = [chunk(frag(index=n, args=text) if n else frag(args=text)) for n, text in pieces]
    text = _stream([*headers, *body])
    with pytest.MonkeyPatch.context() as monkeypatch:
        lane = same_both_ways(text, Options(policy), monkeypatch)
    assert isinstance(lane.records, Payloads)
    agree(lane.records, Options(policy))


def _assemble_counting_parses(text: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Trace, int]:
    """The trace of an SSE text, and how many chunks orjson parsed to make it (probes
    included; not the arguments' own JSON, parsed to check it)."""
    records = read(text).records
    assert isinstance(records, Payloads)
    parsed: list[str] = []
    loads = orjson.loads

    def counted(text: str) -> object:
        parsed.append(text)
        return loads(text)

    monkeypatch.setattr(orjson, "loads", counted)
    trace = assemble(records, Options(), contract=False)  # the contract parses every chunk
    return trace, sum(text.startswith('{"id"') for text in parsed)


def _piece(n: int) -> str:
    """Argument text as a model streams it: every other piece has quotes, some an escape."""
    if n % 2 == 0:
        return f"piece {n} "
    return f'"k{n}": "a\\nb", ' if n % 3 else f'"é{n}":'


@pytest.mark.parametrize(
    ("noise", "parses"),
    [
        pytest.param(None, 4, id="the-header-the-first-piece-and-its-probe-the-finish-chunk"),
        pytest.param(
            [f"{n:x}" for n in range(999)], 8, id="and-two-pieces-more-the-probe-of-the-hole"
        ),
    ],
)
@pytest.mark.parametrize("ascii_only", [False, True])
def test_a_run_of_one_shape_is_assembled_without_parsing_it(
    noise: list[str] | None, parses: int, ascii_only: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pieces with quotes and escapes too: the text between the shape's prefix and suffix is
    decoded alone, the chunk is not parsed."""
    pieces = [chunk(frag(index=0, args=_piece(n))) for n in range(200)]
    text = _stream(pieces, noise=noise, ascii_only=ascii_only)
    trace, chunks = _assemble_counting_parses(text, monkeypatch)
    assert chunks == parses
    assert trace.blocks[0].text == "".join(_piece(n) for n in range(200))
    assert {trace.steps[n].fragments[0].rule for n in range(1, 201)} == {"exact-index"}


def test_interleaved_calls_with_quoted_pieces_are_not_parsed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Twelve calls, round robin: the shape of each is found by the length of its prefix
    when its piece has a quote (the index has one digit or two)."""
    calls = range(12)
    headers = [chunk(frag(index=n, id=f"call_{n}", name="f", args="")) for n in calls]
    body = [chunk(frag(index=n, args=_piece(turn))) for turn in range(20) for n in calls]
    values = [*headers, *body, chunk(finish="tool_calls")]
    text = "".join(f"data: {json.dumps(value)}\n\n" for value in values)
    trace, chunks = _assemble_counting_parses(text, monkeypatch)
    assert chunks == 12 + 2 * 12 + 1, "headers, each call's first piece and its probe, finish"
    for n in calls:
        assert trace.blocks[n].text == "".join(_piece(turn) for turn in range(20))


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param("plain text", "plain text", id="sliced"),
        pytest.param('\\"k\\": \\"a\\\\nb\\"', '"k": "a\\nb"', id="escapes-decoded-alone"),
        pytest.param("\\u00e9\\ud83d\\ude00", "é😀", id="unicode-escapes"),
        pytest.param('a", "b": "c', None, id="a-quote-that-ends-the-string"),
        pytest.param("tab\there", None, id="a-control-character"),
        pytest.param("\\ud800", None, id="a-lone-surrogate-escaped"),
        pytest.param("\\x", None, id="a-bad-escape"),
    ],
)
def test_a_payload_of_a_known_shape_is_read_or_left_to_the_parser(
    body: str, expected: str | None
) -> None:
    shapes = _learnt(dumps(chunk(frag(index=0, args="abc"))).decode())
    payload = dumps(chunk(frag(index=0, args="abc"))).decode().replace('"abc"', f'"{body}"')
    found = shapes.read(payload)
    assert (found and found[0]) == expected
    if found is not None:
        assert found[1] == (0, None, None)
        assert json.loads(payload)["choices"][0]["delta"]["tool_calls"][0]["function"] == {
            "arguments": expected
        }
