"""Captured streams made straight in a store, as the proxy's recorder makes them: a live
capture, its pieces appended one batch at a time with their arrival times, then its end."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from tests.streamkit import chunk, frag, sse
from webapp.storage import Storage
from webapp.storage.capture import Captures, Facts, Part

FACTS = Facts("default", "POST", "/v1/chat/completions", 200, "text/event-stream",
              "gpt-4o", True, ("get_weather",), None, 100.0)  # fmt: skip
"""What the proxy knew when the response started: its headers came at 100 ms."""

TOOL_CALL = sse(
    chunk(content="", role="assistant"),
    chunk(frag(0, "call_1", "get_weather", "")),
    chunk(frag(0, args='{"city":')),
    chunk(frag(0, args='"Paris"}')),
    chunk(finish="tool_calls"),
)
"""Six records: a role chunk, a header, two continuations by index, the finish, [DONE]."""


def events(text: str) -> list[bytes]:
    """An SSE text cut into its events (each with its blank line)."""
    return [event.encode() + b"\n\n" for event in text.split("\n\n") if event]


PIECES = events(TOOL_CALL)
"""TOOL_CALL's six events, as six pieces."""


@dataclass
class Recording:
    """One capture being made: append its pieces, then end it."""

    captures: Captures
    stream_id: str
    start_ms: float = 100.0
    total: int = 0
    at: float = 100.0
    seq: int = 0
    sent: list[bytes] = field(default_factory=list)

    def add(self, pieces: Sequence[bytes], gaps: Sequence[float]) -> None:
        """Append `pieces` as one batch, each arriving `gaps[i]` ms after the one before."""
        ends, times = [], []
        for piece, gap in zip(pieces, gaps, strict=True):
            self.total += len(piece)
            self.at += gap
            ends.append(self.total)
            times.append(self.at)
            self.sent.append(piece)
        self.captures.append(self.stream_id, self.seq, Part(b"".join(pieces), tuple(ends),
                                                            tuple(times)))  # fmt: skip
        self.seq += 1

    def end(self, state: str = "complete") -> None:
        """The stream ends as `state`."""
        assert self.captures.finish(self.stream_id, state)


def start(storage: Storage, facts: Facts = FACTS, title: str = "gpt-4o: get_weather") -> Recording:
    """A new live capture in the store, no bytes yet."""
    captures = Captures(storage)
    info = captures.start(facts, title=title, format="sse")
    return Recording(captures, info.id, facts.headers_ms or 0.0, at=facts.headers_ms or 0.0)


def captured(storage: Storage, text: str, gaps: Sequence[float], *, end: bool = True) -> Recording:
    """A capture of `text`'s events arriving after `gaps` (one per event), ended unless not."""
    recording = start(storage)
    pieces = events(text)
    recording.add(pieces, gaps)
    if end:
        recording.end()
    return recording
