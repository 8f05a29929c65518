"""The bound on client lenses in one worker: at most `at_once` lens processes at a time.

Each stream's page hands over a batch (every lens, on that stream); batches are served in
arrival order, a lens at a time as a process slot frees, so a stream's lenses run side by side
and the next stream's start as the last of the previous one's ends. A batch waiting in line
holds nothing but a way to make its stream's text (made when its first lens starts), and at
most `waiting` batches may wait: one more is refused (`Full`), never queued without end.
`position` says where a batch is: running, or its place among those waiting.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field

from webapp.lenses import Lens, LensResult
from webapp.lenses.runner import MEMORY, TIMEOUT, run_lens

log = logging.getLogger(__name__)
Spawn = Callable[[Callable[[], None]], None]
Run = Callable[[Lens, str, float, int], LensResult]
"""Runs one lens on one stream's text with a timeout and a memory cap (a process)."""


class Full(RuntimeError):
    """As many streams as may wait are waiting for the lenses already."""


def _thread(work: Callable[[], None]) -> None:
    threading.Thread(target=work, name="streamviz-lenses", daemon=True).start()


def one_lens(lens: Lens, text: str, timeout: float, memory: int) -> LensResult:
    """The lens in a capped subprocess of its own (`webapp.lenses.runner.run_lens`)."""
    (result,) = run_lens(lens, [text], timeout=timeout, memory=memory)
    return result


@dataclass
class Batch:
    """Every lens on one stream: handed out one lens at a time, done when all have answered."""

    key: Hashable
    lenses: tuple[Lens, ...]
    text: Callable[[], str]
    results: list[LensResult | None] = field(default_factory=list)
    started: int = 0
    """Lenses handed to a process so far."""
    finished: int = 0
    error: BaseException | None = None
    """Why the stream's text could not be made (then no lens ran)."""
    done: threading.Event = field(default_factory=threading.Event)
    _sse: str | None = None
    _ready: threading.Event = field(default_factory=threading.Event)

    def answers(self) -> tuple[LensResult, ...]:
        """Every lens's result, in lens order (once `done`, and without `error`)."""
        found = tuple(result for result in self.results if result is not None)
        assert len(found) == len(self.lenses), "the batch is not done"
        return found


@dataclass(frozen=True, slots=True)
class Place:
    """Where a batch is: `running` (with how many lenses answered), or waiting at `position`
    (1: next)."""

    running: bool
    position: int
    finished: int
    total: int


class LensQueue:
    """Runs batches of lenses, at most `at_once` processes at a time, first come first served."""

    def __init__(
        self,
        at_once: int,
        waiting: int,
        *,
        timeout: float = TIMEOUT,
        memory: int = MEMORY,
        spawn: Spawn = _thread,
        run: Run = one_lens,
    ) -> None:
        self.at_once = max(1, at_once)
        self.waiting = max(0, waiting)
        self.timeout = timeout
        self.memory = memory
        self._spawn = spawn
        self._run_one = run
        self._batches: OrderedDict[Hashable, Batch] = OrderedDict()
        self._workers = 0
        self._closed = False
        self._lock = threading.Lock()

    def submit(self, key: Hashable, lenses: Sequence[Lens], text: Callable[[], str]) -> Batch:
        """The batch for `key` (the one already in line, or a new one at the end); `Full` when
        `waiting` batches wait already."""
        with self._lock:
            found = self._batches.get(key)
            if found is not None:
                return found
            if self._closed:
                raise Full("the server is stopping")
            if sum(1 for batch in self._batches.values() if not batch.started) >= self.waiting:
                raise Full(f"{self.waiting} streams are waiting for the client libraries already")
            batch = Batch(key, tuple(lenses), text, [None] * len(lenses))
            self._batches[key] = batch
            if not batch.lenses:
                self._close(batch)
                return batch
            wanted = min(self.at_once, self._claimable()) - self._workers
            self._workers += max(0, wanted)
        for _ in range(max(0, wanted)):
            self._spawn(self._work)
        return batch

    def close(self) -> None:
        """Start no more lenses (the server is stopping): every lens not started yet ends as
        not run, so that no batch waits for ever; the lenses running end on their own."""
        with self._lock:
            self._closed = True
            for batch in list(self._batches.values()):
                first, batch.started = batch.started, len(batch.lenses)
                for index in range(first, len(batch.lenses)):
                    self._finish(batch, index, None)

    def place(self, key: Hashable) -> Place | None:
        """Where the batch for `key` is, or None when none is queued or running."""
        with self._lock:
            ahead = 0
            for found_key, batch in self._batches.items():
                if found_key == key:
                    total = len(batch.lenses)
                    if batch.started:
                        return Place(True, 0, batch.finished, total)
                    return Place(False, ahead + 1, batch.finished, total)
                if not batch.started:
                    ahead += 1
            return None

    def _claimable(self) -> int:
        return sum(len(batch.lenses) - batch.started for batch in self._batches.values())

    def _next(self) -> tuple[Batch, int] | None:
        for batch in self._batches.values():
            if batch.started < len(batch.lenses):
                batch.started += 1
                return batch, batch.started - 1
        return None

    def _work(self) -> None:
        """A worker thread: run lenses while there are any to start, then end."""
        while True:
            with self._lock:
                claimed = self._next()
                if claimed is None:
                    self._workers -= 1
                    return
            batch, index = claimed
            try:
                self._run(batch, index)
            except BaseException:  # never leave a batch waiting for a lens that died
                log.exception("a client lens failed outside its process")
                with self._lock:
                    self._finish(batch, index, None)

    def _run(self, batch: Batch, index: int) -> None:
        text = self._text(batch, first=index == 0)
        if text is None:
            with self._lock:
                self._finish(batch, index, None)
            return
        result = self._run_one(batch.lenses[index], text, self.timeout, self.memory)
        with self._lock:
            self._finish(batch, index, result)

    def _text(self, batch: Batch, *, first: bool) -> str | None:
        """The stream's text, made once by the batch's first lens (the others wait for it)."""
        if first:
            try:
                batch._sse = batch.text()
            except BaseException as error:  # reported once the batch is done
                batch.error = error
            finally:
                batch._ready.set()
        batch._ready.wait()
        return batch._sse

    def _finish(self, batch: Batch, index: int, result: LensResult | None) -> None:
        """Record one lens's end (under the lock); the batch leaves the queue with its last."""
        if result is not None:
            batch.results[index] = result
        elif batch.error is None:
            batch.error = RuntimeError(f"{batch.lenses[index].client} did not run")
        batch.finished += 1
        if batch.finished == len(batch.lenses):
            batch._sse = None  # the text goes with the batch's last lens
            self._close(batch)

    def _close(self, batch: Batch) -> None:
        self._batches.pop(batch.key, None)
        batch.done.set()
