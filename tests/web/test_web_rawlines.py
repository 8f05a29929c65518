"""A stream's bytes by line (`RawLines`): spilled to a file in pieces, it gives every line
exactly as the bytes held in memory do, and keeps only its index in memory."""

from __future__ import annotations

import gc
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from webapp.web.backend import rawlines, service
from webapp.web.backend.memory.cache import Memo
from webapp.web.backend.rawlines import RawLines
from webapp.web.backend.service import SPILL_FROM, SPILLED_SHARE, weigh

PARTS = ["data: {}", "a", "é", "\r", "\n", "\r\n", "\n\n", ": ping"]


def _pieces(data: bytes, cuts: list[int]) -> list[bytes]:
    at, out = 0, []
    for cut in sorted({min(cut, len(data)) for cut in cuts}):
        out.append(data[at:cut])
        at = cut
    return [*out, data[at:]]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(PARTS), max_size=60),
    st.lists(st.integers(0, 400), max_size=8),
    st.sampled_from([4, 8, 16, 8 * 1024]),
)
def test_spilled_lines_are_the_lines_in_memory(
    parts: list[str], cuts: list[int], block: int
) -> None:
    """Any breaks (a CRLF cut between two pieces, or two of the index's blocks, included)."""
    data = "".join(parts).encode()
    saved = rawlines.BLOCK, rawlines.PIECE
    rawlines.BLOCK, rawlines.PIECE = block, 5  # small blocks and pieces: many boundaries
    try:
        memory = RawLines(data)
        spilled = RawLines.spilled(_pieces(data, cuts))
        assert spilled.spilled_to_file and not memory.spilled_to_file
        assert spilled.size == len(data) and spilled.data == data
        lines = data.count(b"\n") + data.count(b"\r") + 2
        for line in range(0, lines + 1):
            assert spilled.start(line) == memory.start(line), line
            assert spilled.text(line, line + 1) == memory.text(line, line + 1), line
            assert spilled.text(line, None) == memory.text(line, None), line
    finally:
        rawlines.BLOCK, rawlines.PIECE = saved


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from([p for p in PARTS if "\r" not in p]), max_size=60),
    st.lists(st.integers(0, 400), max_size=8),
    st.sampled_from([4, 8, 16, 8 * 1024]),
    st.sampled_from([3, 16, 64 * 1024]),
)
def test_indexed_lines_read_from_the_store_then_their_file_are_the_lines_in_memory(
    parts: list[str], cuts: list[int], block: int, window: int
) -> None:
    """Before `spill` the bytes come from the reader, a window at a time (a window cut
    inside a line, or a span longer than one, included); after it from the file, the reader
    no longer asked."""
    data = "".join(parts).encode()
    saved = rawlines.BLOCK, rawlines.WINDOW
    rawlines.BLOCK, rawlines.WINDOW = block, window
    asked: list[tuple[int, int]] = []

    def reader(begin: int, end: int) -> bytes:
        asked.append((begin, end))
        return data[begin:end]

    try:
        memory = RawLines(data)
        indexed = RawLines.indexed(_pieces(data, cuts), reader)
        assert indexed is not None and indexed.held_out and not indexed.spilled_to_file
        lines = data.count(b"\n") + 2
        for spilled in (False, True):
            if spilled:
                assert indexed.spill(_pieces(data, cuts)) and indexed.spilled_to_file
                asked.clear()
            assert indexed.size == len(data) and indexed.data == data
            for line in range(0, lines + 1):
                assert indexed.start(line) == memory.start(line), line
                assert indexed.text(line, line + 1) == memory.text(line, line + 1), line
                assert indexed.text(line, None) == memory.text(line, None), line
        assert asked == []
    finally:
        rawlines.BLOCK, rawlines.WINDOW = saved


def test_bytes_with_a_cr_or_a_bom_are_not_indexed_from_the_store() -> None:
    """Their lines start at every CR too (found from the bytes read back), or their text is
    UTF-16: they go to their file first, as before."""

    def reader(begin: int, end: int) -> bytes:
        raise AssertionError("not read")

    assert RawLines.indexed([b"data: {}\n\n", b"data: {}\r\n"], reader) is None
    assert RawLines.indexed([b"\xff\xfed\x00"], reader) is None
    found = RawLines.indexed([b"data: {}\n\n", b"data: {}\n\n"], reader)
    assert found is not None and not found.spill([b"data: {}\n\n"])  # not its size: kept
    assert found.held_out and not found.spilled_to_file


def test_a_spilled_stream_keeps_only_its_index_in_memory() -> None:
    data = b"".join(b'data: {"n": %d}\n\n' % n for n in range(50_000))
    pieces = _pieces(data, list(range(0, len(data), 64 * 1024)))
    spilled = RawLines.spilled(iter(pieces))
    del pieces
    assert spilled.weight < len(data) // 500
    assert not any(isinstance(held, bytes) and len(held) > 8 * 1024 for held in _held(spilled))
    record = spilled.record(2 * 40_000 + 1, 2 * 40_000 + 3, "chunk")
    assert record is not None and record.value == {"n": 40000}


def test_a_utf16_stream_is_kept_decoded_in_memory() -> None:
    data = "data: {}\n\nü\n".encode("utf-16")
    spilled = RawLines.spilled([data[:3], data[3:]])
    assert not spilled.spilled_to_file
    assert spilled.text(3, 4) == RawLines(data).text(3, 4) == "ü\n"


def test_the_file_is_closed_when_its_lines_go() -> None:
    spilled = RawLines.spilled([b"data: 1\n\n"])
    assert spilled.spilled_to_file
    fd = spilled._fd
    os.fstat(fd)
    del spilled
    with pytest.raises(OSError):
        os.fstat(fd)


def _held(lines: RawLines) -> list[object]:
    """What the object holds directly (its slots), and what those hold."""
    found: list[object] = []
    for name in ("_data", "_blocks", "_starts", "_lock"):
        value = getattr(lines, name)
        found.append(value)
        found.extend(gc.get_referents(value))
    return found


def test_the_cache_keeps_a_bounded_disk_of_spilled_streams(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A spilled stream holds little memory but its whole size on disk: the cache counts an
    eighth of it, so that the files it keeps are bounded, and an evicted one's file is closed
    (deleted: it has no name)."""
    monkeypatch.setattr(service, "SPILL_FROM", 0)  # no least weight: an eighth alone
    data = b"data: {}\n\n" * 10_000
    memo: Memo[int, object] = Memo(3 * (len(data) // SPILLED_SHARE) + 4096, weigh)
    made = [RawLines.spilled([data]) for _ in range(10)]
    files = [lines._fd for lines in made]
    for number, lines in enumerate(made):
        memo.get(number, lambda lines=lines: lines)
    del made, lines
    assert len(memo) == 3
    for fd in files[:7]:
        with pytest.raises(OSError):
            os.fstat(fd)
    for fd in files[7:]:
        os.fstat(fd)


def test_a_short_spilled_stream_counts_as_half_the_spill_threshold() -> None:
    """So that a worker's cache holds a few open files, not one per small stream."""
    assert weigh(RawLines.spilled([b"data: {}\n\n"])) >= SPILL_FROM // 2
