"""A small thread-safe LRU that computes each missing value once, even under concurrent misses."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Memo(Generic[K, V]):
    """Keeps the `size` most recently used values; a miss is computed by one thread only."""

    def __init__(self, size: int) -> None:
        self.size = max(1, size)
        self._values: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()
        self._pending: dict[K, threading.Lock] = {}

    def get(self, key: K, make: Callable[[], V]) -> V:
        """The cached value for `key`, computing it with `make` on a miss."""
        with self._lock:
            if key in self._values:
                self._values.move_to_end(key)
                return self._values[key]
            pending = self._pending.setdefault(key, threading.Lock())
        with pending:
            with self._lock:
                if key in self._values:
                    self._values.move_to_end(key)
                    return self._values[key]
            try:
                value = make()
            except BaseException:
                with self._lock:
                    self._pending.pop(key, None)
                raise
            with self._lock:
                self._values[key] = value
                self._pending.pop(key, None)
                while len(self._values) > self.size:
                    self._values.popitem(last=False)
            return value

    def __len__(self) -> int:
        with self._lock:
            return len(self._values)
