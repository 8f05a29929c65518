"""A thread-safe LRU bounded by weight (bytes), that computes each missing value once.

A miss takes the key's own lock: concurrent misses for one key wait for the first to
finish and share its value, while misses for other keys go on. A value heavier than the
whole budget is returned but not kept.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


def _one(value: object) -> int:
    return 1


class _Pending(Generic[V]):
    """One key's computation: its lock, and its value once made (shared with the waiters)."""

    __slots__ = ("lock", "result")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.result: tuple[V] | None = None


class Memo(Generic[K, V]):
    """Keeps the most recently used values while their weights sum to at most `budget`."""

    def __init__(self, budget: int, weigh: Callable[[V], int] = _one) -> None:
        self.budget = max(1, budget)
        self._weigh = weigh
        self._values: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._weight = 0
        self._lock = threading.Lock()
        self._pending: dict[K, _Pending[V]] = {}

    def get(self, key: K, make: Callable[[], V]) -> V:
        """The cached value for `key`, computing it with `make` on a miss."""
        with self._lock:
            found = self._hit(key)
            if found is not None:
                return found[0]
            pending = self._pending.setdefault(key, _Pending())
        with pending.lock:
            if pending.result is not None:  # another thread made it while this one waited
                return pending.result[0]
            with self._lock:
                found = self._hit(key)
                if found is not None:
                    return found[0]
            return self._made(key, make, pending)

    def peek(self, key: K) -> V | None:
        """The kept value for `key` (None when it is not kept), computing nothing."""
        with self._lock:
            entry = self._values.get(key)
            return None if entry is None else entry[0]

    def touch(self, key: K) -> bool:
        """Count the value kept for `key` as just used (the last to be dropped), computing
        nothing; whether one was kept."""
        with self._lock:
            return self._hit(key) is not None

    def _hit(self, key: K) -> tuple[V] | None:
        entry = self._values.get(key)
        if entry is None:
            return None
        self._values.move_to_end(key)
        return (entry[0],)

    def _keep(self, key: K, value: V, weight: int) -> None:
        if weight > self.budget:
            return
        old = self._values.pop(key, None)
        if old is not None:
            self._weight -= old[1]
        self._values[key] = (value, weight)
        self._weight += weight
        while self._weight > self.budget:
            _, (_, dropped) = self._values.popitem(last=False)
            self._weight -= dropped

    def swap(self, key: K, old: V, new: V) -> bool:
        """Keep `new` for `key` in place of `old`, as recently used, when `old` is what is kept
        for it; whether it was."""
        with self._lock:
            entry = self._values.get(key)
            if entry is None or entry[0] is not old:
                return False
            weight = max(1, self._weigh(new))
            self._values[key] = (new, weight)
            self._values.move_to_end(key)
            self._weight += weight - entry[1]
            while self._weight > self.budget and len(self._values) > 1:
                _, (_, dropped) = self._values.popitem(last=False)
                self._weight -= dropped
            return True

    def renew(self, key: K, make: Callable[[], V]) -> bool:
        """Make the value kept for `key` again with `make`, the kept one dropped first: the two
        are never both held here, and the old one's memory goes back once the requests using it
        end. A `get` for `key` meanwhile waits for the new value (or, if `make` raises, makes
        its own). Nothing when no value is kept for `key` or one is being made; whether it
        was made."""
        with self._lock:
            if key not in self._values or key in self._pending:
                return False
            pending = self._pending[key] = _Pending()
            pending.lock.acquire()  # a new lock: at once; `get` now waits on it
            self._weight -= self._values.pop(key)[1]
        try:
            self._made(key, make, pending)
        finally:
            pending.lock.release()
        return True

    def _made(self, key: K, make: Callable[[], V], pending: _Pending[V]) -> V:
        """`make`'s value, kept for `key` and handed to those waiting on `pending` (holding its
        lock); when `make` raises, `key` is no longer pending and the next `get` makes it."""
        try:
            value = make()
            weight = max(1, self._weigh(value))
        except BaseException:
            with self._lock:
                self._pending.pop(key, None)
            raise
        pending.result = (value,)
        with self._lock:
            self._keep(key, value, weight)
            self._pending.pop(key, None)
        return value

    def discard(self, doomed: Callable[[K], bool]) -> int:
        """Drop the kept values whose key is `doomed`; how many were dropped."""
        with self._lock:
            keys = [key for key in self._values if doomed(key)]
            for key in keys:
                self._weight -= self._values.pop(key)[1]
            return len(keys)

    @property
    def weight(self) -> int:
        """The summed weight of the values kept."""
        with self._lock:
            return self._weight

    def __len__(self) -> int:
        with self._lock:
            return len(self._values)
