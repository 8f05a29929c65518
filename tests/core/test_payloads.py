"""A plain SSE stream read as its payload texts (`Payloads`) and assembled from them
(`Assembler.payloads`) gives what the line-by-line reader and `Assembler.record` give.

The payload texts are a shortcut of the reader: the records must equal the line reader's,
record for record and note for note, and the trace must be the one `Assembler.record` makes of
each record in turn (itself checked against the spec's oracle in
`tests/reference/test_oracle.py`). Every stream here is checked both ways: on generated streams
written as SSE, on the corpus, and on the edge shapes of a plain stream (how it ends, a lone
CR, an `event:` line, a blank line too many, comments before the first event).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.core.test_golden import CORPUS, STREAMS
from tests.core.test_properties import any_options, any_records
from tests.reference.test_oracle import LOTS, agree
from tests.streamkit import ABSENT, chunk, frag, on_sources
from webapp.core.assembler import Assembler, assemble
from webapp.core.columns import PACK
from webapp.core.contract import read_contract
from webapp.core.jsoncheck import dumps
from webapp.core.options import Options
from webapp.core.readers import BLOCK, SEGMENT, decode, read, read_plain, read_plain_blocks
from webapp.core.readers import sse as sse_reader
from webapp.core.readers.sse import split_blocks
from webapp.core.readers.writer import to_sse
from webapp.core.records import Payloads, ReaderError, ReadResult, Record
from webapp.core.rules import POLICIES
from webapp.core.tracejson import trace_document_parts, trace_document_stream


def line_by_line(text: str, monkeypatch: pytest.MonkeyPatch) -> ReadResult:
    """The reader with its plain lane turned off."""
    with monkeypatch.context() as patch:
        patch.setattr(sse_reader, "_plain", lambda text, first_line: None)
        return read(text, "sse")


def one_at_a_time(source: ReadResult, options: Options) -> bytes:
    """The trace document made by feeding each record to `Assembler.record`."""
    assembler = Assembler(options)
    for record in source.records:
        assembler.record(record)
    assembler.finish()
    return b"".join(trace_document_parts(assembler.trace, source))


def refusal(read_it: Callable[[], ReadResult | None]) -> str | None:
    """The message of the ReaderError `read_it` raises (None when it reads)."""
    try:
        read_it()
    except ReaderError as error:
        return str(error)
    return None


def same_from_bytes(data: bytes, fmt: str = "auto") -> ReadResult | None:
    """Where the bytes lane (`read_plain`) takes the bytes, it reads what `read` reads of their
    text, record for record and note for note (or refuses them as `read` does: `refusal`)."""
    refused = refusal(lambda: read_plain(data, fmt))
    if refused is not None:
        assert refusal(lambda: read(decode(data), fmt)) == refused
        return None
    plain = read_plain(data, fmt)
    if plain is not None:
        whole = read(decode(data), fmt)
        assert (plain.format, plain.notes, plain.model) == (whole.format, whole.notes, whole.model)
        assert isinstance(plain.records, Payloads) and isinstance(whole.records, Payloads)
        assert plain.records == whole.records
        assert tuple(plain.records) == tuple(whole.records)
    return plain


def same_both_ways_or_refused(text: str, options: Options, monkeypatch: pytest.MonkeyPatch) -> None:
    """`same_both_ways`, or, for a text that holds no chunk, the same refusal every way."""
    refused = refusal(lambda: read(text, "sse"))
    if refused is None:
        same_both_ways(text, options, monkeypatch)
        return
    assert refusal(lambda: line_by_line(text, monkeypatch)) == refused
    data = text.encode("utf-8", "surrogatepass")
    for fmt in ("sse", "auto"):
        same_from_bytes(data, fmt)


def same_both_ways(text: str, options: Options, monkeypatch: pytest.MonkeyPatch) -> ReadResult:
    """Read and assemble `text` with and without the plain lane (from the text and from its
    bytes); everything must be equal."""
    lane = read(text, "sse")
    data = text.encode("utf-8", "surrogatepass")
    from_bytes = [same_from_bytes(data, fmt) for fmt in ("sse", "auto")]
    if isinstance(lane.records, Payloads) and not text.startswith("\ufeff"):
        valid = data.decode("utf-8", "replace") == text  # no lone surrogate
        assert all((found is not None) == valid for found in from_bytes)
    slow = line_by_line(text, monkeypatch)
    assert isinstance(slow.records, tuple)
    assert tuple(lane.records) == slow.records
    assert lane.notes == slow.notes
    assert lane.model == slow.model
    if isinstance(lane.records, Payloads):
        trace = assemble(lane.records, options, contract=False)  # as one_at_a_time
        document = b"".join(trace_document_parts(trace, lane))
        assert b"".join(trace_document_stream(trace, lane)) == document
        assert document == one_at_a_time(lane, options)
        slow_trace = assemble(slow.records, options, contract=False)
        assert document == b"".join(trace_document_parts(slow_trace, slow))
        # The CLI's `trace --format json` and `check` let each payload go once assembled.
        consumed = read(text, "sse")
        assert isinstance(consumed.records, Payloads)
        trace = assemble(consumed.records, options, consume=True, contract=False)
        assert b"".join(trace_document_stream(trace, consumed)) == document
        assert len(consumed.records) == len(lane.records)
        assert not any(consumed.records.payloads), "every payload's text was let go"
        # The contract is read from the assembler's own parse: the same as read on its own.
        expected = read_contract(slow.records, options.choice)
        assert assemble(lane.records, options).contract == expected
        assert assemble(slow.records, options).contract == expected
        again = read(text, "sse")
        assert assemble(again.records, options, consume=True).contract == expected
    return lane


@LOTS
@given(any_records, any_options)
def test_generated_streams_assemble_the_same_in_the_plain_lane(
    stream: list[Record], options: Options
) -> None:
    text = to_sse(stream)
    if not text.strip():
        return
    with pytest.MonkeyPatch.context() as monkeypatch:
        same_both_ways_or_refused(text, options, monkeypatch)


def _sse(*payloads: object) -> str:
    return "".join(f"data: {payload}\n\n" for payload in payloads)


def _key(*values: object) -> st.SearchStrategy[object]:
    return st.sampled_from([ABSENT, *values])


headers = st.builds(
    frag,
    _key(0, 1, 2),
    _key("", "call_a", "call_b"),
    _key("", "f", "g"),
    _key("", "{", '{"a":1}'),
)
pieces = st.builds(
    frag, _key(0, 1, 2, 7), _key(""), _key(""), _key("", "{", '"a":', "1", "}", " ", '{"b":2}')
)
beside = st.sampled_from(
    [{}, {"role": "assistant"}, {"content": ""}, {"content": None}, {"content": "hi"},
     {"reasoning": "r"}, {"reasoning_content": ""}, {"finish": "tool_calls"}, {"choice": 1}]
)  # fmt: skip
"""What a chunk may carry beside its fragments: each is a reason for the assembler's usual-
piece path (`Assembler._piece`) to leave the chunk to the general one, or none."""
plain_chunks = st.builds(
    lambda fragments, model, extra: chunk(*fragments, model=model, **extra),
    st.lists(st.one_of(headers, pieces, pieces, pieces), min_size=1, max_size=2),
    _key("gpt-4o", ""),
    beside,
)


@LOTS
@given(
    st.lists(plain_chunks, max_size=12),
    st.sampled_from(POLICIES),
    st.sampled_from(["client", "server-tools"]),
    st.booleans(),
)
def test_streams_of_usual_chunks_assemble_the_same_in_the_plain_lane(
    chunks: list[dict[str, object]], policy: str, path: str, finished: bool
) -> None:
    """Mostly argument pieces, with or without an index, between headers: the usual chunks of a
    long stream, with misses among them (an unknown index, two calls waiting), a model or not,
    other delta fields, a finish among them."""
    ending = [chunk(finish="tool_calls")] if finished else []
    text = _sse(*(dumps(value).decode() for value in [*chunks, *ending]), "[DONE]")
    options = Options(policy, path, ("g",) if path == "server-tools" else ())  # type: ignore[arg-type]
    with pytest.MonkeyPatch.context() as monkeypatch:
        lane = same_both_ways(text, options, monkeypatch)
    assert isinstance(lane.records, Payloads)
    if path == "client":
        agree(list(lane.records), policy, None, 0)


def test_reasoning_and_text_chunks_are_not_read_again_by_the_contract() -> None:
    """Once the model is known and before any finish, a chunk of the usual choice with no
    `tool_calls` has nothing for the contract: the assembler's loop does not hand it over
    (a test that fails when that stops; that the contract is the same is the tests above)."""
    header = chunk(frag(index=0, id="call_1", name="f", args=""), model="gpt-4o")
    thoughts = [chunk(model="gpt-4o", reasoning=part, content="") for part in ("the", " user")]
    pieces = [chunk(frag(index=0, args=part), model="gpt-4o") for part in ('{"a":', "1}")]
    ending = chunk(finish="tool_calls", model="gpt-4o")
    after = chunk(content="late", model="gpt-4o")
    stream = [header, *thoughts, *pieces, ending, after]
    text = _sse(*(dumps(value).decode() for value in stream), "[DONE]")
    assert _read_by_contract(text) == [0, 3, 4, 5, 6]  # not the reasoning; text after the finish is
    trace = assemble(read(text, "sse").records, Options())
    assert [block.text for block in trace.content] == ['{"a":1}', "the user", "late"]
    assert trace.contract is not None and "call-after-finish" in {
        quirk.code for quirk in trace.contract.quirks
    }


_COUNT_CONTRACT_READS = """
import json, sys
from webapp.core.assembler import assemble
from webapp.core.contract.wire import WireReader
from webapp.core.options import Options
from webapp.core.readers import read

steps, chunk = [], WireReader.chunk
def counted(self, step, *args):
    steps.append(step)
    return chunk(self, step, *args)
WireReader.chunk = counted
assemble(read(sys.stdin.read(), "sse").records, Options())
print(json.dumps(steps))
"""


def _read_by_contract(text: str) -> list[int]:
    """The steps `WireReader.chunk` reads while `text` is assembled, counted by a wrapper in an
    interpreter of its own that runs the core from its sources (a compiled class calls its
    own methods directly, past any wrapper: `webapp/compiled.py`)."""
    steps: list[int] = json.loads(on_sources(_COUNT_CONTRACT_READS, text))
    return steps


@pytest.mark.parametrize("name", STREAMS)
def test_the_corpus_reads_and_assembles_the_same_in_the_plain_lane(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = (Path(CORPUS) / f"{name}.sse").read_text(encoding="utf-8")
    for policy in POLICIES:
        for path in ("client", "server-tools"):
            same_both_ways(text, Options(policy, path, ("web_search",)), monkeypatch)


HEADER = chunk(frag(index=0, id="call_1", name="get_weather", args=""))
PIECE = chunk(frag(index=0, args='{"city":'))
BARE = chunk(frag(args='"Paris"}'))


_PLAIN = _sse(*(dumps(value).decode() for value in (HEADER, PIECE, BARE)), "[DONE]")


@pytest.mark.parametrize(
    ("text", "plain"),
    [
        pytest.param(_PLAIN, True, id="blank-line-after-each"),
        pytest.param(_PLAIN[:-1], True, id="ends-with-one-line-break"),
        pytest.param(_PLAIN[:-2], True, id="ends-inside-the-last-event"),
        pytest.param(_PLAIN[:-5], True, id="cut-off-inside-done"),
        pytest.param(_PLAIN[:40], True, id="cut-off-inside-a-chunk"),
        pytest.param(_PLAIN + "\n", False, id="a-blank-line-too-many-at-the-end"),
        pytest.param(_PLAIN.replace("\n\n", "\n\n\n", 1), False, id="a-blank-line-too-many"),
        pytest.param(_PLAIN.replace("\n\n", "\r\n\r\n"), False, id="crlf"),
        pytest.param(_PLAIN.replace("\n\n", "\n", 1), False, id="two-data-lines-in-one-event"),
        pytest.param("event: x\n" + _PLAIN, False, id="an-event-line"),
        pytest.param(_PLAIN.replace("data: ", "data:", 1), False, id="no-space-after-data"),
        pytest.param(
            _PLAIN.replace("data: [DONE]", ": comment\ndata: [DONE]"), False, id="comment"
        ),
        pytest.param(
            "data: \n\ndata: {\n\n" + _sse('{"choices":[]}'),
            True,
            id="an-empty-and-a-broken-payload",
        ),
        pytest.param("data: [DONE]\n\n" + _sse('{"choices":[]}'), True, id="after-done"),
        pytest.param(": OPENROUTER PROCESSING\n\n" + _PLAIN, True, id="a-comment-first"),
        pytest.param(": a\n\n: b\n\n\n" + _PLAIN, True, id="comments-and-blank-lines-first"),
        pytest.param(": a\n" + _PLAIN, True, id="a-comment-line-then-the-first-event"),
        pytest.param(":\n\n" + _PLAIN[:-1], True, id="an-empty-comment-first"),
        pytest.param(": a\n\n" + _PLAIN + ": b\n\n", False, id="a-comment-at-the-end"),
        pytest.param(": a\n\nevent: x\n" + _PLAIN, False, id="a-comment-then-an-event-line"),
    ],
)
def test_edge_shapes_read_the_same_with_and_without_the_lane(
    text: str, plain: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    lane = same_both_ways(text, Options(), monkeypatch)
    assert isinstance(lane.records, Payloads) is plain


@pytest.mark.parametrize(
    "text", ["data: hello\n\ndata: 42\n\n", 'data: {"type": "ping"}\n\n', ": c\n\ndata: <html>\n\n"]
)
def test_a_plain_stream_without_a_chunk_is_refused_alike_by_both_lanes(
    text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From its text, line by line, from its bytes, a block at a time: one message."""
    refused = refusal(lambda: read(text, "sse"))
    assert refused is not None and refused.startswith("no chat-completions chunk in the input")
    same_both_ways_or_refused(text, Options(), monkeypatch)
    data = text.encode()
    assert refusal(lambda: read_plain_blocks(iter([data[:3], data[3:]]))) == refused


_SOUP = st.lists(
    st.sampled_from(
        [b"data: ", b"data:", b'{"choices":[]}', b"[DONE]", b"\n", b"\n\n", b"\r", b": c\n",
         b"event: x\n", b"\xef\xbb\xbf", b"\xff\xfe", b"\xe2\x82", b"\xe2\x82\xac", b"\xff",
         "\ufffd".encode(), "é".encode(), b"{", b"x", b"HTTP/1.1 200 OK\n"]
    ),
    max_size=16,
).map(b"".join)  # fmt: skip


@LOTS
@given(st.one_of(_SOUP, st.binary(max_size=40)), st.sampled_from(["auto", "sse", "json"]))
def test_the_bytes_lane_reads_what_the_text_reading_reads(data: bytes, fmt: str) -> None:
    """Bytes of every shape near a plain stream's: invalid UTF-8, BOMs, CRs, comments, a status
    line, U+FFFD itself; where `read_plain` takes them, `read` of their text agrees."""
    same_from_bytes(data, fmt)


@pytest.mark.parametrize("name", STREAMS)
def test_the_corpus_reads_the_same_from_its_bytes(name: str) -> None:
    data = (Path(CORPUS) / f"{name}.sse").read_bytes()
    found = same_from_bytes(data)
    plain = read(decode(data)).records
    assert (found is not None) == isinstance(plain, Payloads)


def test_payload_records_are_made_on_each_access_and_compare_as_a_tuple() -> None:
    records = read(_PLAIN).records
    assert isinstance(records, Payloads)
    assert len(records) == 4
    assert records[0] == records[0] and records[0] is not records[0]
    assert records[-1].kind == "done" and records[-1].line == 7
    assert records[1:3] == tuple(records)[1:3]
    assert records == tuple(records)
    with pytest.raises(IndexError):
        records[4]


def test_a_value_only_the_standard_parser_takes_keeps_the_whole_document_fallback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A lone surrogate: orjson refuses it, `parse_json` falls back and keeps it; orjson then
    cannot write it, so the document is written whole (as ASCII) and not streamed."""
    broken = dumps(HEADER).decode().replace('"get_weather"', '"get_\\ud800weather"')
    text = _sse(broken, dumps(PIECE).decode(), "[DONE]")
    lane = same_both_ways(text, Options(), monkeypatch)
    trace = assemble(lane.records, Options())
    assert isinstance(lane.records, Payloads) and not trace.orjson_values
    assert b"".join(trace_document_stream(trace, lane)).isascii()
    assert assemble(read(_PLAIN).records, Options()).orjson_values


@pytest.mark.parametrize("name", ["reasoning-model", *STREAMS[:3]])
def test_each_payload_is_parsed_once_with_the_contract_read_too(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The contract pass is fed from the assembler's loop: no chunk is parsed a second time."""
    source = read((Path(CORPUS) / f"{name}.sse").read_text(encoding="utf-8"), "sse")
    assert isinstance(source.records, Payloads)
    payloads = set(source.records.payloads)
    parsed: list[str] = []
    loads = orjson.loads

    def counted(text: str) -> object:
        if text in payloads:
            parsed.append(text)
        return loads(text)

    monkeypatch.setattr(orjson, "loads", counted)
    trace = assemble(source.records, Options())
    assert trace.contract is not None
    assert len(parsed) == len(source.records)


# A plain stream is cut into segments, a block of input at a time (`sse._cut`).


def _cut_into(data: bytes, cuts: list[int]) -> list[bytes]:
    """`data` cut at the given places (each taken modulo its length)."""
    places = sorted({cut % (len(data) + 1) for cut in cuts} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(places)]


@LOTS
@given(
    st.one_of(
        _SOUP,
        st.lists(st.sampled_from([_PLAIN, ": a\n\n" + _PLAIN, _PLAIN[:-1], _PLAIN[:40]]))
        .map("".join)
        .map(str.encode),
    ),
    st.lists(st.integers(min_value=0, max_value=400), max_size=8),
    st.integers(min_value=1, max_value=80),
)
def test_blocks_cut_anywhere_read_as_the_bytes_held_whole(
    data: bytes, cuts: list[int], segment: int
) -> None:
    """A file read a block at a time reads as its bytes held whole, wherever the blocks end:
    inside a separator, a line break pair, a UTF-8 character, the comments before the first
    event; and whatever the segments' size."""
    blocks = _cut_into(data, cuts)
    assert b"".join(blocks) == data
    refused = refusal(lambda: read_plain(data))
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(sse_reader, "SEGMENT", segment)
        assert refusal(lambda: read_plain_blocks(iter(blocks))) == refused
        if refused is not None:
            return
        found = read_plain_blocks(iter(blocks))
    whole = read_plain(data)
    assert (found is None) == (whole is None)
    if found is not None and whole is not None:
        assert (found.notes, found.model) == (whole.notes, whole.model)
        assert found.records == whole.records
        assert tuple(found.records) == tuple(whole.records)


@pytest.mark.parametrize(("block", "segment"), [(1, 1), (3, 3), (3, 8), (8, 9), (9, 8), (40, 100)])
@pytest.mark.parametrize("name", STREAMS[:6])
def test_tiny_segments_read_and_assemble_the_same(
    name: str, block: int, segment: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With blocks and segments of a few bytes (every payload a segment of its own, or several,
    a block ending inside a separator, a block shorter than a separator, in which none ends a
    segment) the corpus reads and assembles as it does line by line."""
    monkeypatch.setattr(sse_reader, "BLOCK", block)
    monkeypatch.setattr(sse_reader, "SEGMENT", segment)
    text = (Path(CORPUS) / f"{name}.sse").read_text(encoding="utf-8")
    lane = same_both_ways(text, Options(), monkeypatch)
    if isinstance(lane.records, Payloads) and block >= 40:
        assert len(lane.records.segments) > 1  # (a separator inside a block ends a segment)


@LOTS
@given(
    any_records,
    any_options,
    st.integers(min_value=1, max_value=64),
    st.integers(min_value=1, max_value=64),
)
def test_generated_streams_in_small_segments_assemble_the_same(
    stream: list[Record], options: Options, block: int, segment: int
) -> None:
    text = to_sse(stream)
    if not text.strip():
        return
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(sse_reader, "BLOCK", block)
        monkeypatch.setattr(sse_reader, "SEGMENT", segment)
        same_both_ways_or_refused(text, options, monkeypatch)


def test_a_long_stream_is_kept_in_segments_of_about_the_block_size() -> None:
    """The payloads of a long stream are kept a segment at a time, none much longer than a
    block (the reader never joins more than a block and the event it ends inside), and the
    CLI's consuming assembly lets every segment go."""
    event = b"data: " + dumps(PIECE) + b"\n\n"
    data = dumps(HEADER).join([b"data: ", b"\n\n"]) + event * (3 * SEGMENT // len(event))
    source = read_plain_blocks(split_blocks(data))
    assert source is not None and isinstance(source.records, Payloads)
    records = source.records
    assert len(records) == 1 + 3 * SEGMENT // len(event)
    assert len(records.segments) >= 3
    assert all(len(segment or b"") <= SEGMENT + BLOCK for segment in records.segments)
    assert records.firsts[0] == 0 and records.firsts[-1] == len(records)
    assert records[len(records) - 1] == read(data.decode()).records[-1]
    assemble(records, Options(), consume=True)
    assert records.segments == [None] * len(records.segments)


def test_streams_longer_than_a_pack_assemble_the_same_however_they_are_fed() -> None:
    """The integer rows wait in lists (`Pending`) and are packed after each segment and every
    `PACK` steps: a stream of more than two packs' steps, two calls interleaved with text and
    a bare continuation, gives the same trace from its payloads in small segments, record by
    record, and fed a record at a time with each step read as it comes (`feed`)."""
    chunks = [chunk(frag(0, "call_a", "f", ""), frag(1, "call_b", "g", ""))]
    for n in range(2 * PACK + 37):
        if n % 5 == 0:
            chunks.append(chunk(content=f"t{n}"))
        else:
            chunks.append(chunk(frag(n % 2, args=f'"{n}",') if n % 7 else frag(args=" ")))
    chunks.append(chunk(finish="tool_calls"))
    text = _sse(*(dumps(value).decode() for value in chunks), "[DONE]")
    options = Options()
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(sse_reader, "BLOCK", 4096)
        monkeypatch.setattr(sse_reader, "SEGMENT", 16384)
        lane = same_both_ways(text, options, monkeypatch)
    assert isinstance(lane.records, Payloads) and len(lane.records.segments) > 10
    whole = assemble(lane.records, options, contract=False)
    fed = Assembler(options)
    steps = [fed.feed(record) for record in lane.records]
    steps.append(fed.finish())
    assert steps == list(whole.steps)
    recorded = Assembler(options)
    waiting = []
    for record in lane.records:
        recorded.record(record)
        waiting.append(len(recorded._columns.pending.line))
    assert max(waiting) == PACK  # packed every PACK steps: never more waiting
    recorded.finish()
    document = b"".join(trace_document_parts(whole, lane))
    assert b"".join(trace_document_parts(fed.trace, lane)) == document
    assert b"".join(trace_document_parts(recorded.trace, lane)) == document
