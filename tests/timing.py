"""Does a function's time grow linearly? A ratio of times in one run, never a wall-clock limit.

The machine is shared (CI runs tests beside other work), so: the small and the large input are
timed alternately (a burst of load hits both), each the best of several runs with the collector
off, the small one repeated to last a few milliseconds; and a ratio over the bound is measured
again (three times at most) before it counts, since a quadratic cost stays near 64 for 8x the input
however often it is measured, while noise does not repeat.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

GROWTH = 8
MOST = 20
"""The largest ratio allowed for 8 times the input: linear is 8, quadratic 64."""


def _once(run: Callable[[], object], repeats: int) -> float:
    start = time.perf_counter()
    for _ in range(repeats):
        run()
    return (time.perf_counter() - start) / repeats


def growth(small: Callable[[], object], large: Callable[[], object], runs: int = 5) -> float:
    """Time of `large` over time of `small`, best of `runs` each, measured alternately."""
    gc.collect()
    gc.disable()  # a collection landing in one run only would skew its time
    try:
        first = _once(small, 1)
        repeats = max(1, int(0.005 / max(first, 1e-7)))
        best_small = best_large = float("inf")
        for _ in range(runs):
            best_small = min(best_small, _once(small, repeats))
            best_large = min(best_large, _once(large, 1))
    finally:
        gc.enable()
    return best_large / max(best_small, 1e-9)


def assert_linear(name: str, small: Callable[[], object], large: Callable[[], object]) -> None:
    """Fail when 8x the input takes MOST times as long, four measurements in a row."""
    measured = growth(small, large)
    for _ in range(3):
        if measured < MOST:
            break
        measured = min(measured, growth(small, large))
    assert measured < MOST, f"{name}: {GROWTH}x the input took {measured:.1f}x as long"
