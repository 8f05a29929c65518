"""What a live capture's page costs a worker while the stream grows: re-made at every poll, or at
the pace `webapp.web.backend.capture.live.Pace` allows.

In one process, on a throwaway SQLite store: a capture grows by `--rate` chunks a second for
`--seconds` seconds (realistic chunks of a tool call's arguments, about 260 bytes each, stored
a second's worth at a time as the recorder's batches would be), and one page polls it once a
simulated second. The clock the pace reads is simulated (one second per poll) plus the real
time of each making, so a run takes as long as its makings, not as long as the stream.

Modes: `every` (share 1.0: the view is made again at every poll with new bytes, as a page that
re-assembles from scratch each second would) and `paced` (`--share`, the server's default
0.25). For each: the polls, the makings, the seconds spent making (read, assemble, timing,
anomalies so far), the longest making, that time as a share of the stream's duration, the most
bytes a poll was behind, and how many polls showed every byte that had arrived.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from webapp.core.options import Options  # noqa: E402
from webapp.settings import Settings  # noqa: E402
from webapp.storage.capture import Captures, Facts, Part  # noqa: E402
from webapp.web.backend.capture.live import Pace  # noqa: E402
from webapp.web.backend.service import Service  # noqa: E402

FACTS = Facts("default", "POST", "/v1/chat/completions", 200, "text/event-stream",
              "gpt-bench", True, ("write_file",), None, 120.0)  # fmt: skip


def event(n: int) -> bytes:
    """Chunk `n` of one long tool call (its header first)."""
    if n == 0:
        call = {"index": 0, "id": "call_1", "type": "function",
                "function": {"name": "write_file", "arguments": ""}}  # fmt: skip
    else:
        call = {"index": 0, "function": {"arguments": f"line {n:07d} " + "x" * 100}}
    choice = {"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}
    value = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "model": "gpt-bench",
             "choices": [choice]}  # fmt: skip
    return b"data: " + json.dumps(value, separators=(",", ":")).encode() + b"\n\n"


class Clock:
    """One simulated second per poll, plus the real time since the poll began."""

    def __init__(self) -> None:
        self.second = 0.0
        self.began = time.perf_counter()

    def poll(self, second: int) -> None:
        self.second = float(second)
        self.began = time.perf_counter()

    def __call__(self) -> float:
        return self.second + (time.perf_counter() - self.began)


def run(mode: str, share: float, seconds: int, rate: int, folder: Path) -> str:
    service = Service(Settings(db=str(folder / f"{mode}.sqlite3")))
    clock = Clock()
    pace = Pace(share=share, clock=clock)
    captures = Captures(service.storage)
    stream_id = captures.start(FACTS, title="bench", format="sse").id
    total = sent = 0
    making = longest = 0.0
    behind_most = current = 0
    for second in range(seconds):
        pieces = [event(sent + k) for k in range(rate)]
        sent += rate
        data = b"".join(pieces)
        ends, at = [], total
        for piece in pieces:
            at += len(piece)
            ends.append(at)
        total = at
        times = tuple(second * 1000.0 + 1000.0 * k / rate for k in range(rate))
        captures.append(stream_id, second, Part(data, tuple(ends), times))
        clock.poll(second)
        before = pace.makings
        start = time.perf_counter()
        live = pace.view(service, stream_id, Options())
        took = time.perf_counter() - start
        if pace.makings > before:
            making += took
            longest = max(longest, took)
        behind_most = max(behind_most, live.behind)
        current += live.behind == 0
    service.close()
    return (
        f"{mode:6} share {share:.2f}: {seconds} polls, {pace.makings} makings, "
        f"{making:.1f} s making ({making / seconds:.0%} of the stream's {seconds} s), "
        f"longest {longest:.2f} s, at most {behind_most / 1e6:.1f} MB behind, "
        f"{current}/{seconds} polls showed every byte; stream {total / 1e6:.1f} MB, "
        f"{sent:,} chunks"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=int, default=60)
    parser.add_argument("--rate", type=int, default=1000, help="chunks a second")
    parser.add_argument("--share", type=float, default=0.25)
    parser.add_argument("--modes", default="every,paced")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        for mode in options.modes.split(","):
            share = 1.0 if mode == "every" else options.share
            print(run(mode, share, options.seconds, options.rate, Path(folder)), flush=True)


if __name__ == "__main__":
    main()
