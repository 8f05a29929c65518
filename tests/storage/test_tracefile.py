"""The binary form of a trace (`webapp.storage.tracefile`): what is loaded is the trace that was
dumped."""

from __future__ import annotations

import struct
from array import array
from pathlib import Path
from typing import Any
from unittest.mock import patch

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.core.test_golden import CORPUS, STREAMS
from tests.core.test_properties import any_options, any_records
from tests.streamkit import chunk, frag, records
from webapp.core.assembler import assemble
from webapp.core.options import Options
from webapp.core.readers import read
from webapp.core.records import ReadResult, Record
from webapp.core.rules import RULE_NAMES
from webapp.core.trace import Trace
from webapp.core.tracejson import trace_document_parts
from webapp.storage import tracefile
from webapp.storage.tracefile import MAGIC, TraceFileError, dump, load

SOME = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def same(loaded: Trace, original: Trace) -> None:
    """Everything a view or a document reads is the same."""
    assert list(loaded.steps) == list(original.steps)
    for step in range(len(original.steps)):
        assert loaded.state_at(step) == original.state_at(step)
    assert [f.appended for s in loaded.steps for f in s.fragments] == [
        f.appended for s in original.steps for f in s.fragments
    ]
    assert loaded.to_json() == original.to_json()
    assert loaded.anomalies == original.anomalies
    assert loaded.rule_counts == original.rule_counts
    assert loaded.same_verdicts(original) and original.same_verdicts(loaded)
    assert [b.delivered for b in loaded.blocks] == [b.delivered for b in original.blocks]
    source = ReadResult("sse", ())
    written = b"".join(trace_document_parts(loaded, source))
    assert written == b"".join(trace_document_parts(original, source))


def round_trip(trace: Trace) -> Trace:
    data = dump(trace)
    loaded = load(data)
    assert dump(loaded) == data, "dumping what was loaded gives the same bytes"
    return loaded


@pytest.mark.parametrize("name", STREAMS)
@pytest.mark.parametrize(
    "options",
    [Options(), Options("exact-key"), Options("adr-0019", "server-tools", ("web_search",))],
    ids=["adr-0019", "exact-key", "server-tools"],
)
def test_the_corpus_round_trips(name: str, options: Options) -> None:
    trace = assemble(read((Path(CORPUS) / f"{name}.sse").read_text("utf-8")).records, options)
    same(round_trip(trace), trace)


@SOME
@given(any_records, any_options)
def test_any_trace_round_trips(stream: list[Record], options: Options) -> None:
    trace = assemble(stream, options)
    same(round_trip(trace), trace)


def test_odd_values_round_trip() -> None:
    """Lone surrogates, integers beyond 64 bits, -0.0, nested values, a freeform call."""
    stream = records(
        [
            chunk(frag(2**70, "a\ud800", "f", '{"x":'), content="hi \udc80"),
            chunk(frag(-0.0, ["x", {"y": 1}], True, 12.5)),
            chunk({"index": 3, "id": "c", "custom": {"name": "g", "input": "free"}}),
            chunk(finish="tool_calls"),
        ]
    )
    for options in (Options(), Options("exact-key", "server-tools", ("*",))):
        trace = assemble(stream, options)
        same(round_trip(trace), trace)


def test_repeated_text_is_stored_once() -> None:
    pieces = [chunk(frag(args="abcdefghij" * 10)) for _ in range(1000)]
    trace = assemble(records([chunk(frag(0, "a", "f", "")), *pieces]))
    assert len(dump(trace)) < 100 * 100 + 60 * 1000


def test_a_repeated_index_is_stored_once() -> None:
    """Every fragment of a long call carries index 0: one value, not one per fragment (a
    million-chunk stream's `values` were a million zeros, written and read one at a time)."""
    pieces = [chunk(frag(0, args="x")) for _ in range(1000)]
    trace = assemble(records([chunk(frag(0, "a", "f", "")), *pieces, chunk(frag(1, "b", "g"))]))
    same(round_trip(trace), trace)
    assert tracefile._sections(dump(trace))["values"] == [0, 1]
    interner = tracefile._Interner()
    assert list(interner.references([1, True, 1, None, "1", True])) == [-2, -3, -2, -1, 0, -4]
    assert interner.values == [1, True, True]  # a bool equals 1, and is no integer here


def test_verdicts_on_final_blocks_keep_no_text_and_are_worded_again() -> None:
    # Bare continuations under exact-key: every one a phantom call with broken arguments.
    bare = [chunk(frag(args=f'"tail-{k}-of-the-arguments"}}')) for k in range(50)]
    trace = assemble(records([chunk(frag(0, "a", "f", '{"q": ')), *bare]), Options("exact-key"))
    codes = {anomaly.code for anomaly in trace.anomalies}
    assert {"phantom-call", "invalid-arguments"} <= codes
    data = dump(trace)
    assert b"a phantom call" not in data and b"stopped being JSON" not in data
    loaded = load(data).anomalies
    assert [a.message for a in loaded] == [a.message for a in trace.anomalies]
    phantom = next(a for a in loaded if a.code == "phantom-call" and a.block == 8)
    assert phantom.message == "block #8 ends with no name: a phantom call holding " + repr(
        '"tail-7-of-the-arguments"}'
    )


def test_a_verdict_with_no_message_and_no_block_is_refused() -> None:
    data = dump(assemble(records([chunk(frag(args="x"))]), Options("exact-key")))
    assert b'"phantom-call",0,0,null' in data
    with pytest.raises(TraceFileError, match="no message and no block"):
        load(data.replace(b'"phantom-call",0,0,null', b'"phantom-call",0,7,null'))


def _broken(data: bytes) -> list[tuple[str, bytes]]:
    head = struct.pack("<8sII", MAGIC, 99, 1)
    kind = data.index(b"step_kind") + len(b"step_kind")
    return [
        ("empty", b""),
        ("magic", b"NOTATRACE" + data[9:]),
        ("version", head + data[len(head) :]),
        ("cut short", data[:-5]),
        ("extra bytes", data + b"\0"),
        ("section type", data[:kind] + b"z" + data[kind + 1 :]),
    ]


def test_anything_else_is_refused_with_a_reason() -> None:
    data = dump(assemble(records([chunk(frag(0, "a", "f", "{}"), finish="tool_calls")])))
    for label, broken in _broken(data):
        with pytest.raises(TraceFileError):
            load(broken)
            pytest.fail(f"{label}: loaded")


def test_a_missing_section_is_refused() -> None:
    data = dump(assemble(records([])))
    renamed = data.replace(b"\x04meta", b"\x04mexa")
    with pytest.raises(TraceFileError, match="meta"):
        load(renamed)


FIVE = ("exact-index", "exact-id", "continuation", "drop", "new")
"""The table's rules, in order, when traces did not name them."""


def _rewritten(data: bytes, change: Any) -> bytes:
    """`data` with its sections passed through `change` (a dict of name -> payload)."""
    sections = tracefile._sections(data)
    change(sections)
    out = [struct.pack("<8sII", MAGIC, tracefile.VERSION, len(sections))]
    out += [tracefile._section(name, payload) for name, payload in sections.items()]
    return b"".join(out)


def test_a_fragments_rule_is_loaded_by_its_name_not_its_row() -> None:
    """A trace stored when the table had its rules in another order (or before `meta` named
    them) loads with the same rule for every fragment: a new rule needs no new version."""
    trace = assemble(read((Path(CORPUS) / "two-calls-open-continuations.sse").read_text()).records)
    assert len(trace.rule_counts) >= 2  # rows that a reordering moves
    older = list(reversed(RULE_NAMES))

    def reorder(sections: dict[str, Any]) -> None:
        sections["meta"]["rules"] = older
        sections["fragment_rule"] = array("b", [older.index(RULE_NAMES[c]) for c in
                                                sections["fragment_rule"]])  # fmt: skip

    same(load(_rewritten(dump(trace), reorder)), trace)

    def five(sections: dict[str, Any]) -> None:  # stored before `meta` named the rules
        sections["fragment_rule"] = array("b", [FIVE.index(RULE_NAMES[c]) for c in
                                                sections["fragment_rule"]])  # fmt: skip
        del sections["meta"]["rules"]

    same(load(_rewritten(dump(trace), five)), trace)

    def unknown(sections: dict[str, Any]) -> None:
        sections["meta"]["rules"] = [*RULE_NAMES[:-1], "no-such-rule"]

    with pytest.raises(TraceFileError, match="no-such-rule"):
        load(_rewritten(dump(trace), unknown))


@given(
    st.lists(
        st.lists(
            st.one_of(
                st.none(), st.sampled_from(["a", "b", "", "a\ud800"]), st.integers(0, 3),
                st.just([1, "a"]), st.just({"x": None}), st.booleans(),
                st.sampled_from([0.0, -0.0, 1.0]),
            ),
            max_size=12,
        ),
        max_size=4,
    )
)  # fmt: skip
def test_references_number_values_as_one_at_a_time(columns: list[list[Any]]) -> None:
    """Columns of texts and None are numbered in C (a slice at a time: `SLICE`); any other
    value makes the column go one value at a time; either way the numbers, texts and values
    are those of `reference`."""
    for size in (tracefile.SLICE, 1, 3):
        fast, slow = tracefile._Interner(), tracefile._Interner()
        with patch.object(tracefile, "SLICE", size):
            numbered = [fast.references(column) for column in columns]
        for column, numbers in zip(columns, numbered, strict=True):
            assert numbers == array("q", [slow.reference(v) for v in column])
        assert list(fast.strings.items()) == list(slow.strings.items())
        assert [repr(v) for v in fast.values] == [repr(v) for v in slow.values]
        table = [*fast.strings, *reversed(fast.values), None]  # as `_trace` resolves them
        for column, numbers in zip(columns, numbered, strict=True):
            assert [repr(table[n]) for n in numbers] == [repr(v) for v in column]  # True, 1, 1.0


def test_a_column_of_texts_is_not_numbered_value_by_value(monkeypatch: pytest.MonkeyPatch) -> None:
    """A million-chunk trace has millions of pieces: one Python call each cost a second of the
    keeper's thread, holding the GIL beside the pages."""
    calls: list[object] = []
    real = tracefile._Interner.reference

    def counted(self: tracefile._Interner, value: Any) -> int:
        calls.append(value)
        return real(self, value)

    monkeypatch.setattr(tracefile._Interner, "reference", counted)
    interner = tracefile._Interner()
    column = ["abc", None, "de", "abc"] * 1000
    assert list(interner.references(column)[:5]) == [0, -1, 1, 0, 0]
    assert calls == []


def _smallest(values: list[int]) -> str:
    """The type `_packed` must pick: the smallest whose range holds every value."""
    low, high = (min(values), max(values)) if values else (0, 0)
    for kind in ("b", "h", "i", "q"):
        bits = array(kind).itemsize * 8 - 1
        if -(1 << bits) <= low and high < 1 << bits:
            return kind
    raise AssertionError("beyond 64 bits")


@given(
    st.lists(st.one_of(st.integers(-3, 3), st.integers(-(1 << 63), (1 << 63) - 1)), max_size=40),
    st.sampled_from([1, 2, 3, 7, tracefile.SLICE]),
)
def test_a_column_is_packed_a_slice_at_a_time_in_the_smallest_type(
    values: list[int], size: int
) -> None:
    """A slice is converted to the type that held the slices before it, or a larger one (a
    conversion refuses a value out of range), and the slices before the last rise in type are
    converted again: the bytes are those of the whole column in its smallest type."""
    kind = _smallest(values)
    with patch.object(tracefile, "SLICE", size):
        assert tracefile._packed(array("q", values)) == (kind, array(kind, values).tobytes())
        unsigned = [v % 256 for v in values]  # a byte column (`Columns` keeps bytearrays)
        small = _smallest(unsigned)
        packed = tracefile._packed(array("B", unsigned))
        assert packed == (small, array(small, unsigned).tobytes())


_TYPECODES = ("b", "B", "h", "H", "i", "I", "l", "L", "q", "Q")


@st.composite
def _typed_values(draw: st.DrawFn) -> tuple[str, list[int]]:
    """A typecode and values in its range, near the edges of the smaller types often."""
    kind = draw(st.sampled_from(_TYPECODES))
    bits = array(kind).itemsize * 8
    low, high = (0, (1 << bits) - 1) if kind.isupper() else (-(1 << bits - 1), (1 << bits - 1) - 1)
    powers = (0, 1 << 7, 1 << 8, 1 << 15, 1 << 16, 1 << 31, 1 << 32)
    edges = [power + d for power in powers for d in (-1, 0)]
    near = st.sampled_from([v for e in edges for v in (e, -e) if low <= v <= high])
    return kind, draw(st.lists(near | st.integers(low, high), max_size=12))


@given(_typed_values(), st.sampled_from(["b", "h", "i", "q"]))
def test_a_slice_is_converted_by_its_bytes_as_array_converts_it(
    typed: tuple[str, list[int]], kind: str
) -> None:
    """`_converted` narrows or widens a slice by its bytes (strided copies and comparisons in
    C): the values and type `array(kind, part)` gives, or the OverflowError it raises."""
    source = array(typed[0], typed[1])
    try:
        expected: array[int] | None = array(kind, source)
    except OverflowError:
        expected = None
    if expected is None:
        with pytest.raises(OverflowError):
            tracefile._converted(source, kind)
    else:
        converted = tracefile._converted(source, kind)
        assert (converted.typecode, converted) == (kind, expected)


@SOME
@given(any_records, any_options, st.sampled_from([1, 2, 5]))
def test_a_trace_dumped_a_slice_at_a_time_is_the_same_bytes(
    stream: list[Record], options: Options, size: int
) -> None:
    """Dumping and loading go through a column `SLICE` values at a time (a C call each, not
    one per column: the GIL goes back to the pages between): slices of one value or a few
    give the same bytes, and load the same trace."""
    trace = assemble(stream, options)
    whole = dump(trace)
    with patch.object(tracefile, "SLICE", size):
        assert dump(trace) == whole
        same(load(whole), trace)


@given(
    st.lists(st.integers(-(1 << 63), (1 << 63) - 1), max_size=20)
    | st.lists(st.integers(-128, 127), max_size=20),
    st.integers(-300, 10),
    st.integers(-10, 300),
)
def test_a_reference_column_is_checked_in_range_by_its_bytes_or_its_bounds(
    values: list[int], low: int, high: int
) -> None:
    """A column of bytes is checked by deleting the allowed bytes (one C call), any other by
    its least and greatest values: either way, whether every value is from `low` to `high`."""
    kind = _smallest(values)
    column = array(kind, values)
    assert tracefile._within(column, low, high) == all(low <= v <= high for v in values)


@pytest.mark.parametrize("kind", ["b", "h"])
@pytest.mark.parametrize("past", ["strings", "values"])
def test_a_reference_past_the_strings_or_values_is_refused(kind: str, past: str) -> None:
    """A damaged reference column (of bytes, checked by its bytes; or wider, by its bounds)
    is refused, not read as another text or value."""
    trace = assemble(records([chunk(frag(0, "a", "f", '{"x": 1}')), chunk(finish="tool_calls")]))

    def damage(sections: dict[str, Any]) -> None:
        beyond = len(sections["strings"]) if past == "strings" else -len(sections["values"]) - 2
        sections["fragment_name"] = array(kind, [beyond] * len(sections["fragment_name"]))

    with pytest.raises(TraceFileError, match="past the strings or values"):
        load(_rewritten(dump(trace), damage))
