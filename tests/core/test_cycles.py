"""A finished trace holds no reference cycle: dropping it frees it at once.

The web app does not pause the cyclic collector, and a trace of 90,000 phantom blocks left in
a cycle kept about 160 MB alive until a full pass (and made that pass take seconds).
"""

from __future__ import annotations

import gc

from tests.core.test_golden import CORPUS
from webapp.core.assembler import assemble
from webapp.core.blocks import Block
from webapp.core.options import Options
from webapp.core.readers import read


def _blocks_alive() -> int:
    return sum(1 for thing in gc.get_objects() if type(thing) is Block)


def test_a_dropped_trace_is_freed_without_the_cyclic_collector() -> None:
    records = read((CORPUS / "no-index.sse").read_text(encoding="utf-8")).records
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        before = _blocks_alive()
        for options in (Options("exact-key"), Options("adr-0019", "server-tools", ("*",))):
            trace = assemble(records, options)
            assert len(trace.blocks) > 0
            assert _blocks_alive() > before
            del trace
            assert _blocks_alive() == before, options
    finally:
        if enabled:
            gc.enable()
