"""Client lenses: the published client libraries run, unmodified, on a stored stream.

Each lens (`pins.PINS`) runs in a capped subprocess (`runner`) and reports the tool calls its
library hands the application, or the error it raised (`results`). Our own assembler's two
policies are two more columns (`ours`), and `matrix` lines them all up on the calls the stream
means, with a comparison in one line. The clients read chat-completions streams: on another
API's own stream (`webapp.core.readers.foreign.own_api`) they are not run, and their columns
say so (`skipped`); the chunks streamviz mapped its events to are no bytes any client read.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from webapp.core.contract import Intended
from webapp.core.readers.foreign import own_api
from webapp.core.records import Record
from webapp.lenses.feed import sse_text
from webapp.lenses.matrix import Matrix, build
from webapp.lenses.ours import policy_result
from webapp.lenses.pins import POLICY_COLUMNS
from webapp.lenses.results import LensResult
from webapp.lenses.runner import TIMEOUT, Lens, default_lenses, run_lens

WORKERS = 3
"""Lenses run at once (each is a process; the machine may have two cores)."""


def run_lenses(
    lenses: Sequence[Lens], sse: str, *, timeout: float = TIMEOUT
) -> tuple[LensResult, ...]:
    """Every lens's result for one stream, the lenses run side by side."""
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        futures = [pool.submit(run_lens, lens, [sse], timeout=timeout) for lens in lenses]
        return tuple(future.result()[0] for future in futures)


def client_columns(
    records: Sequence[Record], lenses: Sequence[Lens] | None = None, *, timeout: float = TIMEOUT
) -> tuple[LensResult, ...]:
    """Every client's result on a stream, then adr-0019's and exact-key's."""
    chosen = default_lenses() if lenses is None else lenses
    api = own_api(records)
    if api is not None:
        return columns_of(records, not_run(chosen, api))
    return columns_of(records, run_lenses(chosen, sse_text(records), timeout=timeout))


def columns_of(records: Sequence[Record], results: Sequence[LensResult]) -> tuple[LensResult, ...]:
    """The clients' results (run now, or kept from an earlier run), then our two policies' on
    the same records; on another API's own stream every client's says it was not run."""
    api = own_api(records)
    if api is not None:
        results = tuple(skipped(result.client, result.version, api) for result in results)
    return (*results, *(policy_result(records, policy) for policy in POLICY_COLUMNS))


def not_run(lenses: Sequence[Lens], api: str) -> tuple[LensResult, ...]:
    """Each lens's column on `api`'s own stream: not run, and why."""
    return tuple(skipped(lens.client, lens.pin.version, api) for lens in lenses)


def skipped(client: str, version: str, api: str) -> LensResult:
    """A client's column on a stream of `api` (another API's own): not run, and why."""
    why = f"it reads chat-completions streams, and this is another API's own stream: {api}"
    return LensResult(client, version, "skipped", error=why)


def clients_view(
    records: Sequence[Record],
    lenses: Sequence[Lens] | None = None,
    *,
    intended: Intended | None,
    timeout: float = TIMEOUT,
) -> Matrix:
    """Every client's view of a stream, plus adr-0019 and exact-key, lined up on the calls
    the stream means (`intended`; None when it has no single reading)."""
    return build(client_columns(records, lenses, timeout=timeout), intended)


def matrix_of(
    records: Sequence[Record], results: Sequence[LensResult], *, intended: Intended | None
) -> Matrix:
    """`clients_view` from the clients' results already known."""
    return build(columns_of(records, results), intended)


def lenses_key(lenses: Sequence[Lens]) -> str:
    """The lenses as a key for their results: each client at its version, `-` when missing."""
    return ";".join(
        f"{lens.client}={lens.pin.version if lens.missing is None else '-'}" for lens in lenses
    )


__all__ = [
    "Lens",
    "LensResult",
    "Matrix",
    "client_columns",
    "clients_view",
    "columns_of",
    "default_lenses",
    "lenses_key",
    "matrix_of",
    "not_run",
    "run_lenses",
    "skipped",
]
