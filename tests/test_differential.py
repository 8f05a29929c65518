"""Differential tests: policy `exact-key` must do exactly what the published upstream does.

Upstream is `@earendil-works/pi-ai` 1.6.0 (openai-completions), run live under Node by
`tests/upstream_ref.py`. Each stream is written as SSE text once; upstream reads it over
loopback HTTP through the OpenAI SDK, we read the same text with `webapp.core.readers.read(text,
"sse")`. Then:

- exact-key vs upstream: the same events (type, contentIndex, the delta of `*_delta`
  events, the reason of `done`, an `error` on both sides with the same message unless the
  provider sent the error), the same final arguments at every `toolcall_end`, the same
  content blocks, and the same tool calls (id, name, arguments text).
- adr-0019 vs upstream: identical when no fragment was a continuation or a drop; otherwise
  identical up to the first step that holds one, and different somewhere after.

Kept out of the generated streams, each with its own test below: records that are not JSON
(we read on, upstream stops), array-valued `arguments` (upstream's parser walks the array as
if it were text). Also kept out, as documented deviations: chunks with more than one choice
(we follow the choice whose `index` is 0, upstream reads `choices[0]`), fragments that are
not objects, SSE events with a name and no data (the reader skips them with a note), and an
empty input (the reader refuses it).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import strategies as st
from hypothesis.control import currently_in_test_context

from tests.streamkit import ABSENT, chunk, frag, sse
from tests.upstream_ref import UpstreamRef, UpstreamResult, UpstreamUnavailable
from webapp.core.assembler import assemble
from webapp.core.options import Options
from webapp.core.readers import read
from webapp.core.records import Record
from webapp.core.rules import RULES, Policy
from webapp.core.trace import Trace

pytestmark = pytest.mark.upstream

# Running both sides.


@pytest.fixture(scope="session")
def upstream_ref() -> Iterator[UpstreamRef]:
    ref = UpstreamRef()
    yield ref
    ref.close()


def run_upstream(ref: UpstreamRef, sse_text: str) -> UpstreamResult:
    """Upstream's result; a missing Node or package fails the test, it never skips."""
    try:
        result = ref.run_upstream(sse_text)
    except UpstreamUnavailable as error:
        failure = str(error)
    else:
        assert result.request.get("stream") is True, result.request
        return result
    pytest.fail(f"cannot run the upstream reference: {failure}", pytrace=False)


def read_records(sse_text: str) -> tuple[Record, ...]:
    return read(sse_text, "sse").records


def ours(sse_text: str, policy: Policy) -> Trace:
    return assemble(read_records(sse_text), Options(policy=policy))


# Normal forms.


def _event(type_: str, content_index: Any, delta: Any, reason: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": type_}
    if content_index is not None:
        out["contentIndex"] = content_index
    if type_.endswith("_delta"):
        out["delta"] = delta
    if type_ == "done":
        out["reason"] = reason
    return out


def our_events(trace: Trace, before_step: int | None = None) -> list[dict[str, Any]]:
    """Our events flattened in step order (only steps before `before_step`, if given)."""
    steps = trace.steps if before_step is None else trace.steps[:before_step]
    return [
        _event(event.type, event.contentIndex, event.delta, event.reason)
        for step in steps
        for event in step.events
    ]


def their_events(result: UpstreamResult) -> list[dict[str, Any]]:
    return [
        _event(e["type"], e.get("contentIndex"), e.get("delta"), e.get("reason"))
        for e in result.events
    ]


def our_blocks(trace: Trace) -> list[tuple[Any, Any, str]]:
    return [(block.id, block.name, block.text) for block in trace.blocks]


def their_blocks(result: UpstreamResult) -> list[tuple[Any, Any, str]]:
    texts = result.argument_texts()
    return [
        (block["id"], block["name"], texts.get(position, ""))
        for position, block in enumerate(result.content)
        if block["type"] == "toolCall"
    ]


def our_content(trace: Trace) -> list[tuple[str, str | None]]:
    return [(b.kind, None if b.kind == "toolCall" else b.text) for b in trace.content]


def their_content(result: UpstreamResult) -> list[tuple[str, str | None]]:
    return [(b["type"], b.get("text", b.get("thinking"))) for b in result.content]


_JS_WHITESPACE = "\t\n\v\f\r \u00a0\u1680\u2028\u2029\u202f\u205f\u3000\ufeff" + "".join(
    map(chr, range(0x2000, 0x200B))
)


def _reject(name: str) -> Any:
    raise ValueError(name)


def strict_object(text: str) -> dict[str, Any] | None:
    """`JSON.parse(text)` when that gives a plain object, else None."""
    try:
        value = json.loads(text, parse_constant=_reject)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _js_numbers(value: Any) -> Any:
    """Integers as JavaScript holds them, so that big ones compare as upstream's doubles."""
    if isinstance(value, dict):
        return {key: _js_numbers(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_js_numbers(item) for item in value]
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 2**53:
        return float(value)
    return value


# The checks.


def check_exact_key(sse_text: str, theirs: UpstreamResult) -> Trace:
    """Policy exact-key must match upstream exactly."""
    trace = ours(sse_text, "exact-key")
    mine = our_events(trace)
    assert mine[:1] == [{"type": "start"}]
    assert their_events(theirs) == mine, f"exact-key events differ on:\n{sse_text}"
    assert their_blocks(theirs) == our_blocks(trace), f"exact-key blocks differ on:\n{sse_text}"
    assert their_content(theirs) == our_content(trace), f"content differs on:\n{sse_text}"
    check_toolcall_ends(sse_text, trace, theirs)
    check_error_message(sse_text, trace, theirs)
    return trace


def check_toolcall_ends(sse_text: str, trace: Trace, theirs: UpstreamResult) -> None:
    """At every `toolcall_end`, upstream hands the tool what our block says it `delivered`.

    Both the value (upstream's parse of the final text, repaired or `{}`) and whether upstream
    complained (`argumentsError`) must agree.
    """
    ends = [e for step in trace.steps for e in step.events if e.type == "toolcall_end"]
    their_ends = [e for e in theirs.events if e["type"] == "toolcall_end"]
    assert len(ends) == len(their_ends)
    by_content = {block.content_index: block for block in trace.blocks}
    for end, their_end in zip(ends, their_ends, strict=True):
        call = their_end["toolCall"]
        delivered = by_content[end.contentIndex].delivered
        where = f"toolcall_end {end.contentIndex} with arguments {end.content!r} on:\n{sse_text}"
        assert _js_numbers(call["arguments"]) == _js_numbers(delivered.arguments), where
        assert ("argumentsError" in call) == (delivered.error is not None), where


def check_error_message(sse_text: str, trace: Trace, theirs: UpstreamResult) -> None:
    """A stream we end with `error` for its finish_reason has upstream's message."""
    last = trace.steps[-1].events[-1]
    if last.type != "error" or any(a.code == "provider-error" for a in trace.anomalies):
        return  # the provider's own error: upstream formats the SDK's APIError its way
    assert theirs.events[-1]["errorMessage"] == last.message, sse_text


ADR_ONLY = frozenset(rule.name for rule in RULES if "exact-key" not in rule.policies)
"""The rules decision 0019 adds (continuation, drop): where adr-0019 leaves upstream."""


def first_fallback_step(trace: Trace) -> int | None:
    """The first step holding a continuation or a drop fragment (adr-0019), if any."""
    for step in trace.steps:
        if any(f.rule in ADR_ONLY for f in step.fragments):
            return step.step
    return None


def check_adr(sse_text: str, theirs: UpstreamResult) -> tuple[Trace, int | None]:
    """Policy adr-0019 matches upstream until its first continuation or drop, differs after."""
    trace = ours(sse_text, "adr-0019")
    split = first_fallback_step(trace)
    if split is None:
        assert their_events(theirs) == our_events(trace), f"adr-0019 events differ on:\n{sse_text}"
        assert their_blocks(theirs) == our_blocks(trace), f"adr-0019 blocks differ on:\n{sse_text}"
        return trace, None
    before = our_events(trace, before_step=split)
    assert their_events(theirs)[: len(before)] == before, (
        f"adr-0019 differs from upstream before step {split}, its first fallback, on:\n{sse_text}"
    )
    # Upstream fires one toolcall_delta per fragment; a drop fires none, and at the first
    # continuation upstream fires toolcall_start where adr-0019 fires toolcall_delta. So the
    # events always differ. The final blocks need not: see test_fallback_keeping_the_blocks.
    assert their_events(theirs) != our_events(trace), (
        f"adr-0019 took a continuation/drop at step {split} yet fired upstream's events, on:\n"
        f"{sse_text}"
    )
    return trace, split


def check_both(ref: UpstreamRef, sse_text: str) -> tuple[UpstreamResult, Trace, Trace]:
    theirs = run_upstream(ref, sse_text)
    exact = check_exact_key(sse_text, theirs)
    adr, split = check_adr(sse_text, theirs)
    if currently_in_test_context():  # statistics for --hypothesis-show-statistics
        event("adr-0019: " + ("same as upstream" if split is None else "fell back"))
        event(f"upstream ended with {theirs.events[-1]['type']}")
        event(f"tool-call blocks: {min(len(exact.blocks), 3)}")
    return theirs, exact, adr


# Streams, written with tests.streamkit.


STOP = chunk(finish="tool_calls")
USAGE = {"id": "chatcmpl-1", "choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 5}}
HEADER = frag(0, "call_1", "get_weather", "")
PROVIDER_ERROR = {"error": {"message": "upstream overloaded", "type": "server_error", "code": 502}}


# Named provider shapes: (name, stream, the rules adr-0019 uses on it).

NAMED: list[tuple[str, str, set[str]]] = [
    (
        "continuations with no index",
        sse(chunk(HEADER), chunk(frag(args='{"city":')), chunk(frag(args='"Paris"}')), STOP),
        {"new", "continuation"},
    ),
    (
        "empty-string ids on continuations",
        sse(
            chunk(HEADER),
            chunk(frag(id="", args='{"city":')),
            chunk(frag(id="", name="", args='"Paris"}')),
            STOP,
        ),
        {"new", "continuation"},
    ),
    (
        "fresh id on every fragment at index 0",
        sse(
            chunk(frag(0, "call_1", "get_weather", "")),
            chunk(frag(0, "call_2", args='{"city":')),
            chunk(frag(0, "call_3", args='"Paris"}')),
            STOP,
        ),
        {"new", "exact-index"},
    ),
    (
        "the same id on every chunk, no index",
        sse(
            chunk(frag(id="call_1", name="get_weather", args="")),
            chunk(frag(id="call_1", args='{"city":')),
            chunk(frag(id="call_1", args='"Paris"}')),
            STOP,
        ),
        {"new", "exact-id"},
    ),
    (
        "the same id and index on every chunk",
        sse(
            chunk(frag(0, "call_1", "get_weather", "")),
            chunk(frag(0, "call_1", args='{"city":')),
            chunk(frag(0, "call_1", args='"Paris"}')),
            STOP,
        ),
        {"new", "exact-index"},
    ),
    (
        "parallel calls all on index 0",
        sse(
            chunk(frag(0, "call_1", "get_weather", '{"city":"Paris"}')),
            chunk(frag(0, "call_2", "get_time", '{"tz":"CET"}')),
            STOP,
        ),
        {"new", "exact-index"},
    ),
    (
        "interleaved parallel calls",
        sse(
            chunk(frag(0, "call_1", "get_weather", ""), frag(1, "call_2", "get_time", "")),
            chunk(frag(0, args='{"city":'), frag(1, args='{"tz":')),
            chunk(frag(1, args='"CET"}')),
            chunk(frag(0, args='"Paris"}')),
            STOP,
        ),
        {"new", "exact-index"},
    ),
    (
        "indexes starting at 1",
        sse(
            chunk(frag(1, "call_1", "get_weather", '{"city":')),
            chunk(frag(1, args='"Paris"}')),
            chunk(frag(2, "call_2", "get_time", "{}")),
            STOP,
        ),
        {"new", "exact-index"},
    ),
    (
        "nameless header, name backfilled",
        sse(
            chunk(frag(0, "call_1", args="")),
            chunk(frag(0, name="get_weather", args='{"city":')),
            chunk(frag(0, args='"Paris"}')),
            STOP,
        ),
        {"new", "exact-index"},
    ),
    (
        "id-less header, id backfilled",
        sse(
            chunk(frag(0, name="get_weather", args="")),
            chunk(frag(0, "call_1", args='{"city":"Paris"}')),
            chunk(frag(id="call_1", args="")),
            STOP,
        ),
        {"new", "exact-index", "exact-id"},
    ),
    (
        "trailing whitespace fragment after a complete call",
        sse(
            chunk(frag(0, "call_1", "get_weather", '{"city":"Paris"}')),
            chunk(frag(args="\n")),
            STOP,
        ),
        {"new", "continuation"},
    ),
    (
        "invalid arguments",
        sse(
            chunk(frag(0, "call_1", "get_weather", '{"city": Paris')),
            chunk(frag(1, "call_2", "get_time", "[1, 2]")),
            chunk(frag(2, "call_3", "get_date", '{"a": "\t"}')),
            STOP,
        ),
        {"new"},
    ),
    (
        "a bare fragment before any call",
        sse(chunk(frag(args='{"city":')), chunk(frag(0, "call_1", "get_weather", "{}")), STOP),
        {"drop", "new"},
    ),
    (
        "text, thinking and usage-only chunks",
        sse(
            chunk(reasoning_content="Let me look", content="Checking"),
            chunk(HEADER, content=" the weather"),
            USAGE,
            chunk(frag(0, args="{}"), reasoning_content="."),
            STOP,
            USAGE,
        ),
        {"new", "exact-index"},
    ),
    ("no finish_reason", sse(chunk(HEADER), chunk(frag(0, args="{}"))), {"new", "exact-index"}),
    (
        "finish_reason content_filter, no [DONE]",
        sse(chunk(HEADER), chunk(finish="content_filter"), done=False),
        {"new"},
    ),
    (
        "records after [DONE]",
        sse(chunk(HEADER), STOP) + sse(chunk(frag(args="x")), STOP, done=False),
        {"new"},
    ),
    (
        "provider error object mid-stream",
        sse(
            chunk(content="Checking"),
            chunk(HEADER),
            chunk(frag(args='{"city":')),
            PROVIDER_ERROR,
            chunk(frag(0, args='"Paris"}')),
            STOP,
        ),
        {"new", "continuation"},
    ),
]


@pytest.mark.parametrize(
    ("sse_text", "adr_rules"), [n[1:] for n in NAMED], ids=[n[0] for n in NAMED]
)
def test_named_stream(upstream_ref: UpstreamRef, sse_text: str, adr_rules: set[str]) -> None:
    _, _, adr = check_both(upstream_ref, sse_text)
    assert set(adr.rule_counts) == adr_rules


def test_provider_error_ends_without_ends(upstream_ref: UpstreamRef) -> None:
    """The SDK throws on `data.error`: no block ends, the stream ends with `error` alone."""
    text = dict((n[0], n[1]) for n in NAMED)["provider error object mid-stream"]
    theirs, exact, adr = check_both(upstream_ref, text)
    assert theirs.errored
    for trace in (exact, adr):
        assert [e.type for e in trace.steps[-1].events] == ["error"]
        assert not any(e.type.endswith("_end") for s in trace.steps for e in s.events)


def test_invalid_json_record(upstream_ref: UpstreamRef) -> None:
    """Upstream stops with an error at a record that is not JSON; we read on (spec, section 6)."""
    text = sse(
        chunk(HEADER),
        chunk(frag(0, args='{"city":')),
        '{"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function"',
        chunk(frag(0, args='"Paris"}')),
        STOP,
    )
    theirs = run_upstream(upstream_ref, text)
    assert their_events(theirs)[-1] == {"type": "error"}, text
    for policy in ("exact-key", "adr-0019"):
        trace = ours(text, policy)
        invalid = next(step.step for step in trace.steps if step.kind == "invalid")
        assert their_events(theirs)[:-1] == our_events(trace, before_step=invalid), text
        # We read on: the call is completed and the stream ends normally.
        assert our_blocks(trace) == [("call_1", "get_weather", '{"city":"Paris"}')]
        assert trace.steps[-1].events[-1].type == "done"
        assert any(a.code == "invalid-chunk" for a in trace.anomalies)


def test_deviation_array_arguments(upstream_ref: UpstreamRef) -> None:
    """Array `arguments`: upstream's streaming JSON parser reads the array as if it were
    text and throws on a `null` element (or on any array while a string is open), ending the
    stream with an error and no `*_end`; we append `String(array)` and read on."""
    text = sse(chunk(frag(0, "call_1", "get_weather", [None])), STOP)
    theirs = run_upstream(upstream_ref, text)
    assert [e["type"] for e in theirs.events] == ["start", "toolcall_start", "error"]
    assert "null" in theirs.events[-1]["errorMessage"]
    assert our_events(ours(text, "exact-key"))[-1] == {"type": "done", "reason": "toolUse"}


# Mismatches these tests found and the lead fixed: kept as named regressions.
FIXED_MISMATCHES = [
    pytest.param(
        sse(chunk(frag(0, "call_1", 0, "{}")), STOP),
        id="falsy non-string name at opening: upstream keeps `name ?? ''`, i.e. 0",
    ),
    pytest.param(
        sse(chunk(frag(0, "call_1", False, "{}")), STOP),
        id="falsy non-string name at opening: upstream keeps `name ?? ''`, i.e. false",
    ),
    pytest.param(
        sse(
            chunk(
                {"index": 0, "id": "call_1", "type": "custom", "custom": {"name": "apply_patch"}}
            ),
            chunk({"index": 0, "custom": {"input": "*** Begin Patch"}}),
            STOP,
        ),
        id="custom (freeform) tool call: upstream reads custom.name and custom.input",
    ),
]


@pytest.mark.parametrize("sse_text", FIXED_MISMATCHES)
def test_fixed_mismatch(upstream_ref: UpstreamRef, sse_text: str) -> None:
    check_both(upstream_ref, sse_text)


FALLBACK_KEEPING_BLOCKS = {
    # An argument-less bare fragment at index 0 is dropped by adr-0019; upstream opens a
    # phantom block under index 0, which the named header then claims by its index.
    "drop": sse(chunk(frag(0)), chunk(frag(0, "call_1", "get_weather", "{}")), STOP),
    # An argument-less bare fragment at index 1 continues call_1 under adr-0019; upstream
    # opens a phantom under index 1, which call_2's header then claims by its index.
    "continuation": sse(
        chunk(frag(0, "call_1", "get_weather", "{}")),
        chunk(frag(1)),
        chunk(frag(1, "call_2", "get_time", "{}")),
        STOP,
    ),
}


@pytest.mark.parametrize("rule", list(FALLBACK_KEEPING_BLOCKS))
def test_fallback_keeping_the_blocks(upstream_ref: UpstreamRef, rule: str) -> None:
    """A continuation or a drop always changes the events, but not always the final calls."""
    text = FALLBACK_KEEPING_BLOCKS[rule]
    theirs, exact, adr = check_both(upstream_ref, text)
    assert rule in adr.rule_counts
    assert our_blocks(adr) == their_blocks(theirs) == our_blocks(exact)
    assert our_events(adr) != their_events(theirs)


# Generated streams.

INDEXES = st.sampled_from([ABSENT, None, 0, 0, 1, 1, 2, "0"])
IDS = st.sampled_from([ABSENT, ABSENT, None, "", "call_a", "call_a", "call_b", "call_c"])
NAMES = st.sampled_from([ABSENT, ABSENT, None, "", "get_weather", "get_weather", "search"])
PIECES = st.sampled_from(
    [
        *("{", "}", '{"city":', '"Paris"', '"Par', 'is"}', "{}", '{"a":1}', ",", ":", " "),
        *("\n", "\t", '"', "\\", "\\u00e9", "[1]", "null", "junk", '{"x": [1, 2]}', "é"),
    ]
)
ARGUMENTS = st.one_of(
    st.sampled_from([ABSENT, None, ""]),
    PIECES,
    st.lists(PIECES, min_size=2, max_size=4).map("".join),
)
# JavaScript-flavoured values, which upstream reads with truthiness, `typeof` and String().
JS_INDEXES = st.sampled_from([-1, 1.0, 1.5, True, [], {}])
JS_IDS = st.sampled_from([7, 7, 0, 1.0, -1, True, False, [], {}, ["call_a"]])
JS_NAMES = st.sampled_from([5, 0, True, False, [], {}, ["get_weather"]])
JS_ARGUMENTS = st.sampled_from([5, 0, 1.5, -2, 1e21, True, False, {}, {"a": 1}])
JS_CONTENT = st.sampled_from([5, 0, True, [], ["Hi", None, 2]])
JS_FINISH = st.sampled_from([1, 0, True, False, {}, []])
REASONING_KEYS = st.sampled_from(["reasoning_content", "reasoning", "reasoning_text"])


@st.composite
def fragments(draw: st.DrawFn, js_values: bool) -> dict[str, Any]:
    def pick(normal: st.SearchStrategy[Any], js: st.SearchStrategy[Any]) -> Any:
        if js_values and draw(st.integers(0, 4)) == 0:
            return draw(js)
        return draw(normal)

    out: dict[str, Any] = {}
    for key, value in (("index", pick(INDEXES, JS_INDEXES)), ("id", pick(IDS, JS_IDS))):
        if value is not ABSENT:
            out[key] = value
    if draw(st.booleans()):
        out["type"] = "function"
    shape = draw(st.sampled_from(["object", "object", "object", "absent", "null", "custom"]))
    if shape == "custom":
        # A freeform (grammar) tool call: `custom.name` / `custom.input` and no `function`.
        custom = {}
        name, text = draw(st.sampled_from([ABSENT, "apply_patch"])), draw(CUSTOM_INPUTS)
        for key, value in (("name", name), ("input", text)):
            if value is not ABSENT:
                custom[key] = value
        out["custom"] = custom
        if draw(st.booleans()):
            out["function"] = draw(st.sampled_from([None, {"arguments": "{}"}]))
    elif shape == "null":
        out["function"] = None
    elif shape == "object":
        function = {}
        name, arguments = pick(NAMES, JS_NAMES), pick(ARGUMENTS, JS_ARGUMENTS)
        for key, value in (("name", name), ("arguments", arguments)):
            if value is not ABSENT:
                function[key] = value
        out["function"] = function
    return out


CUSTOM_INPUTS = st.sampled_from([ABSENT, None, "", "*** Begin", ' "quoted"\n', "\\ \u00e9"])
REASONS = st.sampled_from(
    [
        *(None, None, "", "stop", "length", "tool_calls", "tool_calls", "tool_calls"),
        *("content_filter", "weird", "end", "function_call", "network_error"),
    ]
)
FINISH = st.one_of(st.just(ABSENT), st.just(ABSENT), REASONS)
TEXT = st.sampled_from([ABSENT, ABSENT, ABSENT, None, "", "Hello", " world"])
REASONING_DETAILS = st.sampled_from(
    [
        [{"type": "reasoning.text", "text": "hm"}],
        [{"type": "reasoning.encrypted", "data": "xyz", "id": "r1"}],
        [{"type": "reasoning.summary", "summary": 5}],  # invalid: no thinking block
        [{"type": "other"}],
    ]
)


@st.composite
def chunks(draw: st.DrawFn, js_values: bool) -> tuple[str | None, Any]:
    """One SSE event: its `event:` name (or None) and its data."""
    kind = draw(st.sampled_from(["tools"] * 7 + ["text", "usage", "finish"]))
    if kind == "usage":
        return None, USAGE
    if draw(st.integers(0, 24)) == 0:
        return draw(st.sampled_from([(None, PROVIDER_ERROR), ("error", USAGE)]))
    delta: dict[str, Any] = {}
    if draw(st.integers(0, 9)) == 0:
        delta["role"] = "assistant"
    for key in (draw(REASONING_KEYS), draw(REASONING_KEYS), "content"):
        value = draw(TEXT) if kind != "text" else draw(st.sampled_from(["Hi", "", None]))
        if js_values and draw(st.integers(0, 5)) == 0:
            value = draw(JS_CONTENT)
        if value is not ABSENT:
            delta[key] = value
    if draw(st.integers(0, 9)) == 0:
        delta["reasoning_details"] = draw(REASONING_DETAILS)
    if kind == "tools":
        delta["tool_calls"] = draw(st.lists(fragments(js_values), min_size=1, max_size=3))
    elif kind == "text" and draw(st.booleans()):
        delta["tool_calls"] = draw(st.sampled_from([None, []]))
    choice: dict[str, Any] = {"index": 0}
    if kind != "finish" or draw(st.booleans()):
        choice["delta"] = delta
    finish = draw(REASONS if kind == "finish" else FINISH)
    if js_values and draw(st.integers(0, 5)) == 0:
        finish = draw(JS_FINISH)
    if finish is not ABSENT:
        choice["finish_reason"] = finish
    if draw(st.integers(0, 9)) == 0:
        del choice["index"]  # position 0 is index 0 for us too
    name = draw(st.sampled_from([None] * 12 + ["message", "thread.message.delta"]))
    return name, {"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [choice]}


@st.composite
def streams(draw: st.DrawFn, js_values: bool = False) -> str:
    """SSE text, with the line endings, comments and spacing real servers use."""
    events: list[tuple[str | None, Any]] = draw(st.lists(chunks(js_values), max_size=8))
    if draw(st.booleans()):
        events.append((None, chunk(finish=draw(st.sampled_from(["tool_calls", "stop"])))))
    if draw(st.integers(0, 3)) > 0 or not events:  # our reader refuses an empty input
        events.append((None, "[DONE]"))
        events.extend(draw(st.lists(chunks(js_values), max_size=2)))
    newline = draw(st.sampled_from(["\n"] * 6 + ["\r\n", "\r"]))
    field = draw(st.sampled_from(["data: "] * 4 + ["data:"]))
    parts = []
    for name, data in events:
        if draw(st.integers(0, 9)) == 0:
            parts.append(f": keep-alive{newline}{newline}")
        if name is not None:
            parts.append(f"event: {name}{newline}")
        text = data if isinstance(data, str) else json.dumps(data)
        parts.append(f"{field}{text}{newline}{newline}")
    joined = "".join(parts)
    if draw(st.integers(0, 9)) == 0:
        joined = joined.rstrip("\r\n")  # no blank line after the last event
    return joined


COMMON: dict[str, Any] = {
    "deadline": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
    "print_blob": True,
}


@settings(max_examples=200, **COMMON)
@given(sse_text=streams())
def test_generated_streams(upstream_ref: UpstreamRef, sse_text: str) -> None:
    note(f"SSE text:\n{sse_text}")
    check_both(upstream_ref, sse_text)


@settings(max_examples=80, **COMMON)
@given(sse_text=streams(js_values=True))
def test_generated_streams_with_js_values(upstream_ref: UpstreamRef, sse_text: str) -> None:
    """Number, boolean, array and object ids, indexes, arguments, content and finish reasons."""
    note(f"SSE text:\n{sse_text}")
    check_both(upstream_ref, sse_text)
