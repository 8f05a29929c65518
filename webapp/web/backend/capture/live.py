"""A live capture's view, made again as its bytes arrive, at a pace its size allows.

A live page polls about once a second. Its stream has grown since the last poll, so the view of
what has arrived is made again (read and assembled from the start: the core has no way to
resume a finished trace), with its timing and its anomalies so far (`SoFar`: without those of
the end step, which has not come). For a small stream that costs little; for a large one it
would cost a worker more than the second between polls. So a worker makes a live stream's view
again only once `wait(cost)` has passed since it last made one, `cost` being how long that
took: at most `share` of one thread's time goes to keeping one live stream's view current,
however large it grows, and meanwhile every poll is answered with the last view made (the page
says how many bytes behind it is). A view another request already made for the stream's
present size is taken from the cache at no cost. Once the capture has ended the ordinary,
cached view is served and the stream is forgotten here.
"""

from __future__ import annotations

import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace

from webapp.core.options import Options
from webapp.storage.capture import Capture, Captures
from webapp.web.backend.capture.timing import Timing, view_timing
from webapp.web.backend.example_source import example_of
from webapp.web.backend.service import Service
from webapp.web.backend.trace.anomaly_groups import Group
from webapp.web.backend.trace.overview import Bucket, buckets
from webapp.web.backend.trace.view import TraceView

SHARE = 0.25
"""The share of one thread's time a worker spends keeping one live stream's view current."""
REMEMBERED = 16
"""Live streams a worker remembers its last view of (the least recently polled go first)."""


@dataclass(frozen=True, slots=True)
class SoFar:
    """The anomalies of the records that have arrived, not those judged at the end step (they
    say how the stream would end if it ended now): grouped, counted, and in the strip's
    columns."""

    groups: tuple[Group, ...]
    counts: tuple[tuple[str, int], ...]
    buckets: tuple[Bucket, ...]
    provisional: tuple[str, ...]
    """The codes at the end step, left out."""


def so_far(view: TraceView) -> SoFar:
    """The view's anomalies without those at its end step (linear in the steps)."""
    end = view.last
    kept = []
    for group in view.anomaly_groups:
        items = tuple(anomaly for anomaly in group.items if anomaly.step != end)
        if items:
            blocks = tuple(sorted({a.block for a in items if a.block is not None}))
            kept.append(replace(group, items=items, blocks=blocks))
    counts = Counter(anomaly.code for group in kept for anomaly in group.items)
    by_step = {step: found for step, found in view.anomalies_by_step.items() if step != end}
    provisional = tuple(sorted({anomaly.code for anomaly in view.anomalies_by_step.get(end, ())}))
    return SoFar(
        tuple(kept), tuple(sorted(counts.items())), buckets(view.trace, by_step), provisional
    )


@dataclass(frozen=True, slots=True)
class Live:
    """A stream's view as a page should show it now, and whether it is still arriving."""

    view: TraceView
    capture: Capture | None
    """The capture's row (None when the stream was not captured)."""
    timing: Timing | None
    """The view's timing (None when its input carries none)."""
    seen: SoFar | None = None
    """While live: its anomalies so far."""
    behind: int = 0
    """Bytes that have arrived but are not in the view yet (it is made again soon)."""
    every: float = 0.0
    """Seconds between two makings of this stream's view at its present size and cost."""

    @property
    def live(self) -> bool:
        """Whether more of the stream may still come."""
        return self.capture is not None and self.capture.live

    @property
    def size(self) -> int:
        """The bytes the view was made of."""
        return self.view.source.info.size


@dataclass(frozen=True, slots=True)
class _Made:
    view: TraceView
    timing: Timing | None
    seen: SoFar
    at: float
    cost: float


class Pace:
    """The last view made of each live stream in this worker, and when it may be made again."""

    def __init__(
        self,
        share: float = SHARE,
        stall_ms: float = 1000.0,
        clock: Callable[[], float] = time.monotonic,
        remembered: int = REMEMBERED,
    ) -> None:
        if not 0 < share <= 1:
            raise ValueError(f"the live share must be in (0, 1], not {share!r}")
        self.share = share
        self.stall_ms = stall_ms
        self.clock = clock
        self.remembered = remembered
        self._made: OrderedDict[tuple[object, ...], _Made] = OrderedDict()
        self._lock = threading.Lock()
        self.makings = 0
        """How many views of live streams this worker has made (the tests and the bench)."""

    def wait(self, cost: float) -> float:
        """Seconds after a making that took `cost` seconds before the next may start."""
        return cost * (1 - self.share) / self.share

    def view(
        self, service: Service, stream_id: str, options: Options, har_entry: int | None = None
    ) -> Live:
        """The view to show of the stream now (`service.view`'s, unless it is live and was made
        too recently to be made again)."""
        capture = None if example_of(stream_id) else Captures(service.storage).get(stream_id)
        if capture is None or not capture.live:
            self.forget(stream_id)
            view = service.view(stream_id, options, har_entry)
            return Live(view, capture, view_timing(service, view, self.stall_ms))
        key = (stream_id, har_entry, options.canonical())
        with self._lock:
            last = self._made.get(key)
            if last is not None:
                self._made.move_to_end(key)
        if last is not None and last.view.source.info.size == service.info(stream_id).size:
            return self._live(last, options, capture)  # nothing new
        if last is not None and self.clock() - last.at < self.wait(last.cost):
            behind = max(0, service.info(stream_id).size - last.view.source.info.size)
            return replace(self._live(last, options, capture), behind=behind)
        start = self.clock()
        view = service.view(stream_id, options, har_entry)
        timing = view_timing(service, view, self.stall_ms)
        seen = so_far(view)
        made = _Made(view, timing, seen, start, self.clock() - start)
        with self._lock:
            self.makings += 1
            self._made[key] = made
            self._made.move_to_end(key)
            while len(self._made) > self.remembered:
                self._made.popitem(last=False)
        return self._live(made, options, capture)

    def _live(self, made: _Made, options: Options, capture: Capture) -> Live:
        view = made.view if made.view.options == options else made.view.as_asked(options)
        every = made.cost + self.wait(made.cost)
        return Live(view, capture, made.timing, made.seen, every=every)

    def forget(self, stream_id: str) -> None:
        """Drop what is remembered of the stream (it ended, or was never live)."""
        with self._lock:
            for key in [key for key in self._made if key[0] == stream_id]:
                del self._made[key]
