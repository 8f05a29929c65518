"""Each stream's client verdict: the lenses run once (in the worker's line), kept in the store.

A clients page asks for the verdict on (stream, HAR entry) under the lenses as this machine
has them now (checked at each ask, so a library installed after the server started is seen:
it is another key). The verdict is looked up in this worker's memo, then in the store (the
lens results another worker or host kept: the grades are computed again from them, no library
runs), and only then are the lenses queued (`lensqueue`: at most `Settings.lens_processes`
processes per worker, the page saying where in line the stream is). Their results are kept in
the store before the verdict is made; `forget` drops them when the page asks to compute again.
On another API's own stream no lens is queued: no chat-completions client reads it, and each
column says so (`webapp.lenses.not_run`).
Judging a large stream (its contract, our two policies) runs under the service's bound on
heavy work.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import webapp.lenses
from webapp.core.contract import read_contract
from webapp.core.readers.foreign import own_api
from webapp.lenses import Lens, LensResult, lenses_key
from webapp.lenses.feed import sse_text
from webapp.lenses.runner import MEMORY, TIMEOUT
from webapp.storage.lensresults import LensResults
from webapp.triage.verdict import Verdict, results_verdict
from webapp.web.backend.capture.hops import gateway_of
from webapp.web.backend.jobs.lensqueue import Batch, Full, LensQueue, Place, Run, one_lens
from webapp.web.backend.service import LIGHT_BELOW, Service

log = logging.getLogger(__name__)
KEPT = 64
"""Streams (or HAR entries) whose verdicts one worker keeps in memory."""
PROCESSES = 2
"""Lens processes one worker runs at once, by default (`Settings.lens_processes`)."""
WAITING = 16
"""Streams that may wait in one worker's line, by default (`Settings.lens_waiting`)."""
Key = tuple[str, int | None, str]
"""A stream id, its HAR entry (None: the reader's default) and the lenses' key."""

__all__ = ["ClientJobs", "Full", "Pending"]


@dataclass(frozen=True, slots=True)
class Pending:
    """A verdict not made yet: where its lenses are (None: they have answered, or were kept,
    and the grades are being computed)."""

    place: Place | None


class ClientJobs:
    """Every stream's verdict, computed once per lenses and kept (this worker's memo, the
    store's lens results)."""

    def __init__(
        self,
        lenses: Sequence[Lens] | None = None,
        *,
        timeout: float = TIMEOUT,
        memory: int = MEMORY,
        processes: int = PROCESSES,
        waiting: int = WAITING,
        kept: int = KEPT,
        run: Run = one_lens,
    ) -> None:
        self.lenses = None if lenses is None else tuple(lenses)
        self.timeout = timeout
        self.kept = kept
        self.queue = LensQueue(processes, waiting, timeout=timeout, memory=memory, run=run)
        self._service: Service | None = None
        self._done: OrderedDict[Key, Verdict] = OrderedDict()
        self._running: dict[Key, threading.Event] = {}
        self._lock = threading.Lock()

    def bind(self, service: Service) -> ClientJobs:
        """Work on this service's streams and store (once; later calls change nothing)."""
        with self._lock:
            if self._service is None:
                self._service = service
        return self

    @property
    def service(self) -> Service:
        assert self._service is not None, "ClientJobs.bind(service) first"
        return self._service

    def chosen(self) -> tuple[Lens, ...]:
        """The lenses as they are now: the given ones, else every pinned client's, each found
        installed or missing at this call."""
        return self.lenses if self.lenses is not None else webapp.lenses.default_lenses()

    def _key(self, stream_id: str, har_entry: int | None) -> tuple[Key, tuple[Lens, ...]]:
        lenses = self.chosen()
        return (stream_id, har_entry, lenses_key(lenses)), lenses

    def get(self, stream_id: str, har_entry: int | None = None) -> Verdict | None:
        """The verdict if this worker made it, or another one kept its lens results (then the
        grades are computed here, now); None otherwise (nothing is run)."""
        key, _ = self._key(stream_id, har_entry)
        found = self._memo(key)
        if found is not None:
            return found
        results = self._kept(key)
        return None if results is None else self._judge(key, results)

    def start(self, stream_id: str, har_entry: int | None = None) -> Verdict | Pending:
        """The verdict if it is made; otherwise start making it (once) and say where it is.
        Raises `Full` when the worker's line for the lenses is full."""
        key, lenses = self._key(stream_id, har_entry)
        with self._lock:
            found = self._hit(key)
            if found is not None:
                return found
            if key in self._running:
                return Pending(self.queue.place(key))
        kept = self._not_run(stream_id, har_entry, lenses) or self._kept(key)
        with self._lock:
            if key in self._running:
                return Pending(self.queue.place(key))
            finished = self._running[key] = threading.Event()
        try:
            batch = None
            if kept is None:
                batch = self.queue.submit(key, lenses, lambda: self._text(stream_id, har_entry))
        except BaseException:
            with self._lock:
                self._running.pop(key, None)
            finished.set()
            raise
        thread = threading.Thread(
            target=self._compute,
            args=(key, kept, batch, finished),
            name=f"clients-{stream_id[:8]}",
            daemon=True,
        )
        thread.start()
        return Pending(None if batch is None else self.queue.place(key))

    def wait(self, stream_id: str, timeout: float, har_entry: int | None = None) -> Verdict | None:
        """Wait for a started computation (tests and `?wait=1`); None if it is not done."""
        key, _ = self._key(stream_id, har_entry)
        with self._lock:
            finished = self._running.get(key)
        if finished is not None:
            finished.wait(timeout)
        return self._memo(key)

    def forget(self, stream_id: str, har_entry: int | None = None) -> int:
        """Drop the verdicts and the kept lens results of this stream's entry, whatever lenses
        made them (a computation running now goes on); how many kept results were dropped."""
        with self._lock:
            for key in [key for key in self._done if key[:2] == (stream_id, har_entry)]:
                del self._done[key]
        return LensResults(self.service.storage).forget(stream_id, har_entry)

    def close(self, timeout: float) -> bool:
        """The server is stopping: no lens starts any more, and the verdicts being made end
        (within `timeout` seconds) before the store closes under them; False if one did not."""
        self.queue.close()
        with self._lock:
            running = list(self._running.values())
        deadline = time.monotonic() + timeout
        return all(event.wait(max(0.0, deadline - time.monotonic())) for event in running)

    def _memo(self, key: Key) -> Verdict | None:
        with self._lock:
            return self._hit(key)

    def _hit(self, key: Key) -> Verdict | None:
        verdict = self._done.get(key)
        if verdict is not None:
            self._done.move_to_end(key)
        return verdict

    def _kept(self, key: Key) -> tuple[LensResult, ...] | None:
        stream_id, har_entry, lenses = key
        return LensResults(self.service.storage).get(stream_id, har_entry, lenses)

    def _not_run(
        self, stream_id: str, har_entry: int | None, lenses: Sequence[Lens]
    ) -> tuple[LensResult, ...] | None:
        """Each lens's column, not run, when the stream is another API's own (no
        chat-completions client reads it); None for a chat-completions stream."""
        api = own_api(self.service.reading(stream_id, har_entry).result.records)
        return None if api is None else webapp.lenses.not_run(lenses, api)

    def _text(self, stream_id: str, har_entry: int | None) -> str:
        """The stream as its transport carried it, for the lenses (made when its turn comes)."""
        return sse_text(self.service.reading(stream_id, har_entry).result.records)

    def _compute(
        self,
        key: Key,
        kept: tuple[LensResult, ...] | None,
        batch: Batch | None,
        finished: threading.Event,
    ) -> None:
        stream_id, har_entry, lenses = key
        try:
            results = kept
            if results is None:
                assert batch is not None
                batch.done.wait()
                if batch.error is not None:
                    raise batch.error
                results = batch.answers()
                LensResults(self.service.storage).put(stream_id, har_entry, lenses, results)
            self._judge(key, results)
        except Exception:  # the page shows "computing" again and the next visit retries
            log.exception("running the client lenses on stream %s failed", stream_id)
        finally:
            with self._lock:
                self._running.pop(key, None)
            finished.set()

    def _judge(self, key: Key, results: Sequence[LensResult]) -> Verdict:
        """The verdict from the lenses' results (kept in the memo)."""
        stream_id, har_entry, _ = key
        service = self.service
        reading = service.reading(stream_id, har_entry)
        with service.gate.heavy_for(reading.info.size < LIGHT_BELOW):
            result = reading.result
            contract = read_contract(result.records).as_recorded(  # a capture cut, a paste
                reading.info.end,
                recorded=reading.info.recorded,  # that shows no end
            )
            gateway = None if har_entry is not None else gateway_of(
                service, stream_id, contract.codes
            )  # fmt: skip
            verdict = results_verdict(
                result.records, results, contract=contract, model=result.model, gateway=gateway
            )
        with self._lock:
            self._done[key] = verdict
            self._done.move_to_end(key)
            while len(self._done) > self.kept:
                self._done.popitem(last=False)
        return verdict
