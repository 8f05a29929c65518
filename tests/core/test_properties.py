"""Hypothesis properties of the assembler.

1. Calls split into bare continuation fragments reassemble exactly under decision 0019, and
   show one phantom block per continuation under exact-key.
2. The same calls split at different fragment boundaries assemble to the same calls, on the
   client and the server-tools path.
3. No input, however broken, makes `assemble` raise; the trace always ends with an `end` step
   whose last event is `done` or `error`, and its JSON always serializes with orjson.
"""

from __future__ import annotations

import itertools
import json
import string
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.core.schema import check_schema
from tests.streamkit import ABSENT, chunk, frag, records
from webapp.core.assembler import assemble
from webapp.core.jsoncheck import Completion, dumps, loads
from webapp.core.options import Options
from webapp.core.records import Record

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# -- calls --------------------------------------------------------------------------------------

scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(10**6), 10**6)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=10,
)
argument_texts = st.dictionaries(st.text(max_size=8), json_values, max_size=4).map(
    lambda value: json.dumps(value, ensure_ascii=False)
)
names = st.text(string.ascii_letters + "_:", min_size=1, max_size=12)


@dataclass(frozen=True)
class Call:
    id: str
    name: str
    index: int | None
    arguments: str


@st.composite
def calls(draw: st.DrawFn) -> list[Call]:
    count = draw(st.integers(1, 4))
    indexes = draw(st.lists(st.integers(0, 50), min_size=count, max_size=count, unique=True))
    out = []
    for k in range(count):
        with_index = draw(st.booleans())
        out.append(
            Call(
                id=f"call_{k}_{draw(st.text(string.ascii_letters, max_size=6))}",
                name=draw(names),
                index=indexes[k] if with_index else None,
                arguments=draw(argument_texts),
            )
        )
    return out


def cut(draw: st.DrawFn, text: str) -> list[str]:
    """`text` cut at random points into non-empty pieces."""
    points = draw(st.sets(st.integers(1, max(1, len(text) - 1)), max_size=6))
    bounds = [0, *sorted(p for p in points if 0 < p < len(text)), len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


def header(call: Call, arguments: Any = "") -> dict:
    return frag(call.index if call.index is not None else ABSENT, call.id, call.name, arguments)


def group(draw: st.DrawFn, fragments: list[dict]) -> list[Record]:
    """Put consecutive fragments into chunks of random size, then finish and `[DONE]`."""
    chunks: list[list[dict]] = []
    for fragment in fragments:
        if not chunks or draw(st.booleans()):
            chunks.append([])
        chunks[-1].append(fragment)
    values = [chunk(*calls) for calls in chunks]
    values.append(chunk(finish="tool_calls"))
    return records(values)


def expected_blocks(stream_calls: list[Call]) -> list[tuple[str, str, str]]:
    return [(call.id, call.name, call.arguments) for call in stream_calls]


def blocks(trace: Any) -> list[tuple[Any, Any, str]]:
    return [(block.id, block.name, block.text) for block in trace.blocks]


def starts(trace: Any) -> int:
    return sum(1 for step in trace.steps for e in step.events if e.type == "toolcall_start")


# -- property 1 -----------------------------------------------------------------------------------


@st.composite
def bare_split(draw: st.DrawFn) -> tuple[list[Call], list[Record], int]:
    """Each call: a header with no arguments, then its arguments as bare fragments."""
    stream_calls = draw(calls())
    fragments: list[dict] = []
    continuations = 0
    for call in stream_calls:
        fragments.append(header(call, draw(st.sampled_from(["", None, ABSENT]))))
        for piece in cut(draw, call.arguments):
            fragments.append(frag(args=piece))
            continuations += 1
    return stream_calls, group(draw, fragments), continuations


@SETTINGS
@given(bare_split())
def test_bare_continuations_reassemble_under_adr_0019(case: Any) -> None:
    stream_calls, stream, _ = case
    trace = assemble(stream, Options(policy="adr-0019"))
    assert blocks(trace) == expected_blocks(stream_calls)
    assert [len(block.start_steps) for block in trace.blocks] == [1] * len(stream_calls)
    assert starts(trace) == len(stream_calls)
    assert trace.anomalies == ()
    rules = [f.rule for step in trace.steps for f in step.fragments]
    assert set(rules) <= {"new", "continuation"} and rules.count("new") == len(stream_calls)


@SETTINGS
@given(bare_split())
def test_bare_continuations_are_phantom_calls_under_exact_key(case: Any) -> None:
    stream_calls, stream, continuations = case
    trace = assemble(stream, Options(policy="exact-key"))
    assert len(trace.blocks) == len(stream_calls) + continuations
    named = [(b.id, b.name) for b in trace.blocks if b.name != ""]
    assert named == [(call.id, call.name) for call in stream_calls]
    phantoms = [b for b in trace.blocks if b.name == ""]
    assert len(phantoms) == continuations
    assert all(b.id == "" and b.text != "" for b in phantoms)
    assert "".join(b.text for b in trace.blocks) == "".join(c.arguments for c in stream_calls)
    assert starts(trace) == len(stream_calls) + continuations
    phantom_anomalies = [a for a in trace.anomalies if a.code == "phantom-call"]
    assert sorted(a.block for a in phantom_anomalies) == [b.number for b in phantoms]


# -- property 2 -----------------------------------------------------------------------------------


@st.composite
def any_split(draw: st.DrawFn, stream_calls: list[Call], bare_allowed: bool) -> list[Record]:
    """The calls as fragments: a header (perhaps holding the first piece), then pieces that
    are bare, or carry the call's index, or its id."""
    fragments: list[dict] = []
    for call in stream_calls:
        pieces = cut(draw, call.arguments)
        if draw(st.booleans()):
            fragments.append(header(call, pieces.pop(0)))
        else:
            fragments.append(header(call, draw(st.sampled_from(["", None, ABSENT]))))
        for piece in pieces:
            keys = ["id"] if call.index is None else ["id", "index"]
            choice = draw(st.sampled_from([*keys, "bare"] if bare_allowed else keys))
            if choice == "bare":
                fragments.append(frag(args=piece))
            elif choice == "index":
                fragments.append(frag(call.index, args=piece))
            else:
                fragments.append(frag(id=call.id, args=piece))
    return group(draw, fragments)


@st.composite
def two_splits(draw: st.DrawFn) -> tuple[list[Call], str, list[Record], list[Record]]:
    stream_calls = draw(calls())
    policy = draw(st.sampled_from(["adr-0019", "exact-key"]))
    bare = policy == "adr-0019"
    first = draw(any_split(stream_calls, bare))
    second = draw(any_split(stream_calls, bare))
    return stream_calls, policy, first, second


@SETTINGS
@given(two_splits())
def test_different_splits_assemble_to_the_same_calls_on_the_client_path(case: Any) -> None:
    stream_calls, policy, first, second = case
    for stream in (first, second):
        trace = assemble(stream, Options(policy=policy))
        assert blocks(trace) == expected_blocks(stream_calls)
        assert starts(trace) == len(stream_calls)
        assert trace.anomalies == ()


@SETTINGS
@given(two_splits(), st.data())
def test_different_splits_assemble_to_the_same_calls_on_the_server_tools_path(
    case: Any, data: st.DataObject
) -> None:
    stream_calls, policy, first, second = case
    server = tuple(sorted({c.name for c in stream_calls if data.draw(st.booleans())}))
    options = Options(policy, "server-tools", server)  # type: ignore[arg-type]
    results = []
    for stream in (first, second):
        trace = assemble(stream, options)
        folds = [block.fold.as_ if block.fold else None for block in trace.blocks]
        results.append((blocks(trace), folds))
        client_calls = sum(1 for fold in folds if fold == "client")
        assert starts(trace) == client_calls
        assert [len(b.start_steps) for b in trace.blocks] == [
            1 if fold == "client" else 0 for fold in folds
        ]
        assert trace.anomalies == ()
        # each call folds right after its last piece, before the finish chunk
        assert all(b.fold is not None and b.fold.step < len(trace.steps) - 3 for b in trace.blocks)
    expected_folds = ["server" if c.name in server else "client" for c in stream_calls]
    assert results[0] == results[1] == (expected_blocks(stream_calls), expected_folds)


# -- the fold trigger -----------------------------------------------------------------------------

json_texts = json_values.map(lambda v: json.dumps(v, ensure_ascii=False)) | st.text(
    '{}[]":,0123456789.eE+-tnfrulase\\ \n', max_size=20
)


@SETTINGS
@given(json_texts, st.data())
def test_completion_is_exactly_a_strict_parse_of_the_text_so_far(
    text: str, data: st.DataObject
) -> None:
    pieces = cut(data.draw, text) if text else [""]
    completion = Completion()
    so_far = ""
    for piece in pieces:
        so_far += piece
        try:
            loads(so_far)
            parses = True
        except (ValueError, RecursionError):
            parses = False
        assert completion.feed(piece) == parses, repr(so_far)


# -- property 3 -----------------------------------------------------------------------------------

odd_numbers = st.sampled_from(
    [0, -0.0, 1, 0.5, -1, 2**53 + 1, 2**63, 2**64, 2**70, 10**400, -(10**30), 1e308, 5e-324]
) | st.sampled_from([float("inf"), float("-inf")])
junk_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | odd_numbers
    | st.floats(allow_nan=False)
    | st.text(max_size=6)
    | st.sampled_from(["\ud83d", "a\udc00b", "\x00", "[DONE]"])
)
junk = st.recursive(
    junk_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


def maybe(strategy: Any, odds: int = 8) -> Any:
    """Mostly `strategy`, one time in `odds` arbitrary junk in its place."""
    return st.integers(0, odds - 1).flatmap(lambda k: junk if k == 0 else strategy)


def weighted(*pairs: tuple[int, Any]) -> Any:
    """One of the strategies, each chosen with the given weight."""
    table = [strategy for weight, strategy in pairs for _ in range(weight)]
    return st.integers(0, len(table) - 1).flatmap(lambda k: table[k])


fragments = maybe(
    st.fixed_dictionaries(
        {},
        optional={
            "index": maybe(st.integers(-1, 3)),
            "id": maybe(st.sampled_from(["", "a", "b", "call_1"])),
            "type": st.just("function"),
            "function": maybe(
                st.fixed_dictionaries(
                    {},
                    optional={
                        "name": maybe(st.sampled_from(["", "f", "web_search", "openrouter:x"])),
                        "arguments": maybe(
                            st.sampled_from(["{", "}", '{"a":', "1", '"x"', "{}", " ", "\n"])
                            | st.text('{}[]":,1a \n\\', max_size=8)
                        ),
                    },
                )
            ),
        },
    ),
    odds=12,
)
details = st.fixed_dictionaries(
    {"type": st.sampled_from(["reasoning.text", "reasoning.summary", "reasoning.encrypted"])},
    optional={k: maybe(st.text(max_size=4)) for k in ("text", "summary", "data", "id", "format")},
)
other_delta_fields = {
    "content": maybe(st.text(max_size=6)),
    "reasoning_content": maybe(st.text(max_size=6)),
    "reasoning": maybe(st.text(max_size=6)),
    "reasoning_text": maybe(st.text(max_size=6)),
    "reasoning_details": maybe(st.lists(maybe(details), max_size=2)),
    "role": st.just("assistant"),
}
deltas = weighted(
    (
        6,
        st.fixed_dictionaries(
            {"tool_calls": st.lists(fragments, min_size=1, max_size=3)},
            optional=other_delta_fields,
        ),
    ),
    (
        3,
        st.fixed_dictionaries(
            {}, optional={"tool_calls": maybe(st.lists(fragments)), **other_delta_fields}
        ),
    ),
    (1, junk),
)
finish_reasons = st.sampled_from(["stop", "tool_calls", "length", "content_filter", "end", ""])
choices = maybe(
    st.fixed_dictionaries(
        {"index": maybe(weighted((6, st.just(0)), (1, st.integers(1, 2)))), "delta": deltas},
        optional={"finish_reason": maybe(st.none() | finish_reasons)},
    ),
    odds=12,
)
chunks = weighted(
    (12, st.fixed_dictionaries({"choices": st.tuples(choices).map(list)})),
    (4, st.fixed_dictionaries({"choices": st.lists(choices, min_size=1, max_size=3)})),
    (1, st.fixed_dictionaries({"choices": st.just([]), "usage": junk})),
    (1, st.fixed_dictionaries({"error": junk}, optional={"choices": junk})),
    (2, junk),
)
lines = st.none() | st.integers(1, 10**6)
any_records = st.lists(
    weighted(
        (20, st.builds(Record, st.just("chunk"), lines, chunks)),
        (1, st.builds(Record, st.just("chunk"), lines, junk, event=st.just("error"))),
        (1, st.builds(Record, st.just("done"), lines, text=st.just("[DONE]"))),
        (
            1,
            st.builds(
                Record,
                st.just("invalid"),
                lines,
                text=st.text(max_size=10),
                error=st.text(min_size=1),
            ),
        ),
    ),
    max_size=10,
)
any_options = st.builds(
    Options,
    st.sampled_from(["adr-0019", "exact-key"]),
    st.sampled_from(["client", "server-tools"]),
    st.sampled_from([(), ("web_search",), ("openrouter:*",), ("*",), ("f", "a*")]),
    weighted((4, st.just(0)), (1, st.integers(1, 2))),
)


def _one(fragment: Any, *, content: Any = ABSENT) -> list[Record]:
    return [Record("chunk", 1, chunk(fragment, content=content, finish="tool_calls"))]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(any_records, any_options)
# a 400-digit index: JSON.parse gives Infinity; here float() of it overflows
@example(
    _one({"index": 10**400, "id": "a", "function": {"name": "f", "arguments": "{}"}}), Options()
)
# an integer beyond 64 bits that the stdlib fallback parser kept as an int
@example(_one({"index": 2**70, "id": "a", "function": {"name": "f", "arguments": "{}"}}), Options())
# an emoji's surrogate pair split across two chunks: each chunk holds a lone surrogate
@example(_one({"index": 0, "id": "a", "function": {"name": "f"}}, content="hi \ud83d"), Options())
def test_no_input_makes_assemble_raise(stream: list[Record], options: Options) -> None:
    trace = assemble(stream, options)
    assert trace.steps[-1].kind == "end"
    assert trace.steps[-1].events and trace.steps[-1].events[-1].type in ("done", "error")
    assert len(trace.steps) == len(stream) + 1
    doc = trace.to_json()
    dumps(doc)
    check_schema(doc)
    for step in range(len(trace.steps)):
        trace.state_at(step)
