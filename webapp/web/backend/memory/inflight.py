"""The bytes of trace views being made or held by their requests: the memory the cache does
not see, bounded too.

The cache keeps at most `--cache-mb` of finished views. A view being made, or held by the
request that made it while its page renders, is outside the cache (a view heavier than the
whole cache is never kept), so sixteen requests for sixteen option sets of one large stream
held sixteen views at once. Before making a large stream's view, a request takes a ticket
for an estimate of its weight (`InFlight.take`) and waits while other tickets fill the
budget (one ticket always fits, however heavy); once the view is made the ticket is settled
to the view's own weight. The request keeps it until its response is sent (`RequestScope`),
so the budget covers rendering too, and a second view the same request needs (a report shows
both policies) is free. A request that waits longer than `wait` seconds gets `Busy` (503 with
Retry-After), never a hang. Outside a request (a minimise job's thread) the ticket is given
back as soon as the view is made.

`RequestScope` also trims the heap after a request during which heavy work ended
(`webapp.tuning.trim`). `Gate` holds a worker's budget together with its other bound:
how many pieces of heavy work run at once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from contextvars import ContextVar

import anyio.to_thread
from starlette.types import ASGIApp, Receive, Scope, Send

from webapp import tuning


class Busy(Exception):
    """The budget for views being made stayed full for as long as a request may wait."""

    def __init__(self, waited: float) -> None:
        super().__init__(
            f"the server is making other large traces and waited {waited:g} s for room; "
            "try again in a moment"
        )


class Ticket:
    """Bytes taken from an `InFlight` budget, given back once."""

    __slots__ = ("_budget", "weight")

    def __init__(self, budget: InFlight, weight: int) -> None:
        self._budget: InFlight | None = budget
        self.weight = weight

    def settle(self, weight: int) -> None:
        """Hold `weight` bytes from now on instead of the estimate."""
        if self._budget is not None:
            self._budget._change(weight - self.weight)
            self.weight = weight

    def release(self) -> None:
        """Give the bytes back (a second call does nothing)."""
        budget, self._budget = self._budget, None
        if budget is not None:
            budget._change(-self.weight)


class InFlight:
    """A byte budget for views being made, shared by one worker's threads."""

    def __init__(self, budget: int, wait: float) -> None:
        self.budget = max(1, budget)
        self.wait = wait
        self.used = 0
        self._room = threading.Condition()

    def take(self, estimate: int) -> Ticket:
        """A ticket for `min(estimate, budget)` bytes, once they fit (or nothing else is
        held); raises `Busy` after `wait` seconds."""
        weight = max(1, min(estimate, self.budget))
        with self._room:
            fits = self._room.wait_for(
                lambda: self.used == 0 or self.used + weight <= self.budget, timeout=self.wait
            )
            if not fits:
                raise Busy(self.wait)
            self.used += weight
        return Ticket(self, weight)

    def _change(self, delta: int) -> None:
        with self._room:
            self.used += delta
            self._room.notify_all()


_HELD: ContextVar[list[Ticket] | None] = ContextVar("streamviz_tickets", default=None)
"""The tickets of the request being answered (None outside a request)."""


@contextmanager
def holding(budget: InFlight, estimate: int) -> Iterator[Ticket | None]:
    """A ticket for making one view: None when this request already holds one (its second
    view is free); given back at the end of the block on failure, or outside a request, else
    when the request's response is sent."""
    held = _HELD.get()
    if held:
        yield None
        return
    ticket = budget.take(estimate)
    try:
        yield ticket
    except BaseException:
        ticket.release()
        raise
    if held is None:
        ticket.release()
    else:
        held.append(ticket)


class RequestScope:
    """ASGI middleware: gives back a request's tickets once its response is sent, then trims
    the heap if heavy work ended meanwhile (`done` moved)."""

    def __init__(self, app: ASGIApp, done: Callable[[], int]) -> None:
        self.app = app
        self.done = done

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        before = self.done()
        tickets: list[Ticket] = []
        token = _HELD.set(tickets)
        try:
            await self.app(scope, receive, send)
        finally:
            _HELD.reset(token)
            for ticket in tickets:
                ticket.release()
            if self.done() != before:
                await anyio.to_thread.run_sync(tuning.trim)


class Gate:
    """One worker's memory gate: at most `at_once` pieces of heavy work at a time (reading,
    assembling, comparing or packing a large stream), and the views being made share one
    `InFlight` budget of `budget` bytes (a request waits up to `wait` seconds for room)."""

    def __init__(self, at_once: int, budget: int, wait: float) -> None:
        self.heavy = threading.BoundedSemaphore(at_once)
        self.inflight = InFlight(budget, wait)
        self.heavy_done = 0
        """How many pieces of heavy work have ended (`RequestScope` trims the heap after a
        request during which one did)."""

    def making(self, estimate: int | None) -> AbstractContextManager[Ticket | None]:
        """A ticket for making a view of about `estimate` bytes (`holding`); nothing to wait
        for when `estimate` is None (a light stream, made in milliseconds)."""
        return nullcontext() if estimate is None else holding(self.inflight, estimate)

    def heavy_for(self, light: bool) -> AbstractContextManager[object]:
        """The bound on heavy work, for work on a large stream; none for a light one, whose
        work takes milliseconds and must not queue behind seconds of someone else's."""
        return nullcontext() if light else self.heavy_work()

    @contextmanager
    def heavy_work(self) -> Iterator[None]:
        """One piece of heavy work, inside the bound."""
        with self.heavy:
            try:
                yield
            finally:
                self.heavy_done += 1  # a lost update under a race only skips one trim
