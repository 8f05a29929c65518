"""What the routes ask for, computed once and cached: stored streams, readings, traces.

Reading a 100,000-chunk stream and assembling it take about a second each, so a reading is
cached per stream and a trace per (stream, options), in small LRUs. A `TraceView` adds the
indexes that stepping needs (steps per rule, anomaly steps, runs of alike steps), built once
in linear time, so that every step afterwards costs a bisect and the rendering of one window.
"""

from __future__ import annotations

import logging
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field

from webapp.assembler import assemble
from webapp.compare import Comparison, compare
from webapp.options import Options
from webapp.readers import decode, read
from webapp.records import ReaderError, ReadResult
from webapp.rules import RULE_NAMES, Policy
from webapp.settings import Settings
from webapp.storage import Storage, StreamInfo
from webapp.trace import Anomaly, Block, Trace
from webapp.web.cache import Memo
from webapp.web.ingest import Prepared
from webapp.web.runs import Runs, find_runs

log = logging.getLogger(__name__)


class NotFound(LookupError):
    """No stream has this id."""


class Unreadable(ValueError):
    """A stored stream no longer reads (or does not assemble); the message says why."""


@dataclass(frozen=True, slots=True)
class Reading:
    """A stored stream and what its reader found."""

    info: StreamInfo
    result: ReadResult


@dataclass(slots=True)
class TraceView:
    """A trace plus the indexes for stepping: steps per rule, anomalies per step."""

    reading: Reading
    options: Options
    trace: Trace
    rule_steps: dict[str, list[int]] = field(default_factory=dict)
    anomaly_steps: list[int] = field(default_factory=list)
    anomalies_by_step: dict[int, tuple[Anomaly, ...]] = field(default_factory=dict)
    open_steps: list[int] = field(default_factory=list)
    """The step each tool-call block opened at, in opening order (nondecreasing)."""
    others: list[Block] = field(default_factory=list)
    """The text and thinking blocks (at most a few), in content order."""
    runs: Runs = field(default_factory=lambda: Runs(()))
    """Runs of alike, uneventful steps, which the timeline collapses into one row each."""

    def __post_init__(self) -> None:
        self.rule_steps = {name: [] for name in RULE_NAMES}
        for step in self.trace.steps:
            for rule in {fragment.rule for fragment in step.fragments}:
                self.rule_steps.setdefault(rule, []).append(step.step)
        self.anomalies_by_step = self.trace.anomalies_by_step()
        self.anomaly_steps = sorted(self.anomalies_by_step)
        self.open_steps = [block.opened_step for block in self.trace.blocks]
        self.others = [block for block in self.trace.content if block.kind != "toolCall"]
        self.runs = find_runs(self.trace, self.anomaly_steps)

    @property
    def last(self) -> int:
        """The number of the last step (the `end` step)."""
        return len(self.trace.steps) - 1

    def clamp(self, step: int) -> int:
        """A step number within the trace."""
        return max(0, min(step, self.last))

    def next_rule(self, step: int, rule: str) -> int | None:
        """The first step after `step` with a fragment resolved by `rule`."""
        return _after(self.rule_steps.get(rule, []), step)

    def prev_rule(self, step: int, rule: str) -> int | None:
        """The last step before `step` with a fragment resolved by `rule`."""
        return _before(self.rule_steps.get(rule, []), step)

    def next_anomaly(self, step: int) -> int | None:
        """The first step after `step` that reported an anomaly."""
        return _after(self.anomaly_steps, step)

    def prev_anomaly(self, step: int) -> int | None:
        """The last step before `step` that reported an anomaly."""
        return _before(self.anomaly_steps, step)

    def blocks_open_at(self, step: int) -> int:
        """How many tool-call blocks had opened by the end of `step`."""
        return bisect_right(self.open_steps, step)


def _after(steps: list[int], step: int) -> int | None:
    at = bisect_right(steps, step)
    return steps[at] if at < len(steps) else None


def _before(steps: list[int], step: int) -> int | None:
    at = bisect_left(steps, step)
    return steps[at - 1] if at > 0 else None


class Service:
    """The store and the caches in front of the core."""

    def __init__(self, settings: Settings) -> None:
        self.storage = Storage(settings.db_path)
        self._readings: Memo[str, Reading] = Memo(max(2, settings.trace_cache_size // 2))
        self._traces: Memo[tuple[str, Options], TraceView] = Memo(settings.trace_cache_size)
        self._comparisons: Memo[tuple[str, Options, Policy, Policy], Comparison] = Memo(
            max(2, settings.trace_cache_size // 2)
        )

    def info(self, stream_id: str) -> StreamInfo:
        """The stored stream's record, or NotFound."""
        info = self.storage.info(stream_id) if _plausible(stream_id) else None
        if info is None:
            raise NotFound(stream_id)
        return info

    def raw(self, stream_id: str) -> bytes:
        """The stored bytes, or NotFound."""
        raw = self.storage.raw(stream_id) if _plausible(stream_id) else None
        if raw is None:
            raise NotFound(stream_id)
        return raw

    def store(self, prepared: Prepared, *, title: str, input_format: str = "auto") -> StreamInfo:
        """Store a prepared stream; its reading is cached so that opening it reads nothing."""
        info = self.storage.add(
            prepared.raw,
            title=title,
            format=prepared.result.format,
            input_format=input_format,
            redactions=prepared.redactions,
        )
        self._readings.get(info.id, lambda: Reading(info, prepared.result))
        return info

    def reading(self, stream_id: str) -> Reading:
        """The stream read again from its stored bytes (cached)."""
        info = self.info(stream_id)
        return self._readings.get(stream_id, lambda: self._read(info))

    def _read(self, info: StreamInfo) -> Reading:
        raw = self.raw(info.id)
        try:
            result = read(decode(raw), info.input_format)
        except ReaderError as error:
            raise Unreadable(str(error)) from error
        return Reading(info, result)

    def view(self, stream_id: str, options: Options) -> TraceView:
        """The stream assembled under `options`, with its stepping indexes (cached)."""
        reading = self.reading(stream_id)
        return self._traces.get((stream_id, options), lambda: self._assemble(reading, options))

    def _assemble(self, reading: Reading, options: Options) -> TraceView:
        try:
            trace = assemble(reading.result.records, options)
        except Exception as error:  # a core bug must not become a 500 for the user
            log.exception("assembling stream %s failed", reading.info.id)
            raise Unreadable(f"the assembler failed on this stream: {error!r}") from error
        return TraceView(reading, options, trace)

    def comparison(
        self, stream_id: str, options: Options, left: Policy, right: Policy
    ) -> Comparison:
        """The stream under two policies, aligned by step (cached)."""
        reading = self.reading(stream_id)

        def make() -> Comparison:
            try:
                return compare(reading.result.records, options, left=left, right=right)
            except Exception as error:  # a core bug must not become a 500 for the user
                log.exception("comparing stream %s failed", stream_id)
                raise Unreadable(f"the comparison failed on this stream: {error!r}") from error

        return self._comparisons.get((stream_id, options, left, right), make)

    def close(self) -> None:
        """Close the store."""
        self.storage.close()


def _plausible(stream_id: str) -> bool:
    return 0 < len(stream_id) <= 64 and all(c.isalnum() or c in "-_" for c in stream_id)
