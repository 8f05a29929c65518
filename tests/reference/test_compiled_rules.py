"""The rules table compiled for the loop (`ToolCalls._decide`, `webapp.core.rules.reason`)
agrees with the table's own handlers (`webapp.core.rules.resolve`) on every row: same rule, block
and reason.

A registry is built by assembling a generated stream; then each generated fragment is judged
both ways against it. The continuation's note about other waiting blocks is the loop's own
addition (spec section 7) and is not part of a handler's reason.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.core.test_properties import any_options, any_records, fragments
from tests.streamkit import frag, tool_stream
from webapp.core.assembler import Assembler
from webapp.core.jsvalue import read_keys
from webapp.core.options import Options
from webapp.core.records import Record
from webapp.core.rules import RULE_NAMES, RULES, reason, resolve, rules_for


def judge(stream: list[Record], options: Options, raw: Any) -> str:
    """Judge `raw` both ways against the registry `stream` left; returns the rule."""
    assembler = Assembler(options)
    for record in stream:
        assembler.record(record)
    calls = assembler._calls
    keys = read_keys(raw if isinstance(raw, dict) else {})
    expected = resolve(keys, calls, rules_for(options.policy))
    code, block, index_miss, id_miss = calls._decide(keys)
    assert RULE_NAMES[code] == expected.rule
    assert block is expected.block or expected.rule in ("new", "drop")
    number = None if block is None else block.number
    words = reason(
        expected.rule,
        (keys.index, keys.id, keys.name),
        number,
        (index_miss, id_miss),
        calls.server_path,
    )
    assert words == expected.reason
    return expected.rule


@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(any_records, any_options, st.lists(fragments, min_size=1, max_size=4))
def test_the_compiled_table_agrees_with_the_handlers(
    stream: list[Record], options: Options, probes: list[Any]
) -> None:
    for raw in probes:
        judge(stream, options, raw)


SERVER = Options("adr-0019", "server-tools", ("web_search",))
FOLDED = tool_stream([[frag(0, "a", "web_search", "{}")], [frag(1, "b", "f", "{")]])
OPEN = tool_stream([[frag(0, "a", "f", "{")]])[:1]
CASES = [
    ("exact-index", OPEN, Options(), frag(0, args="}")),
    ("exact-id", OPEN, Options(), frag(id="a", args="}")),
    ("exact-id", OPEN, Options(), frag(7, "a", args="}")),
    ("continuation", OPEN, Options(), frag(args="}")),
    ("continuation", FOLDED[:2], SERVER, frag(0, args="}")),
    ("drop", [], Options(), frag(args="{}")),
    ("drop", [], SERVER, frag(3, args="{}")),
    ("new", OPEN, Options("exact-key"), frag(args="}")),
    ("new", OPEN, Options(), frag(1, "b", "g", "{")),
    ("new", OPEN, Options(), frag(id="b")),
    ("new", FOLDED[:1], SERVER, frag(0, "a", "g", "{")),
    ("new", FOLDED[:1], SERVER, frag(id="a", name="g")),
]


def test_every_row_of_the_table_is_judged_both_ways() -> None:
    """Each rule, with each kind of miss (no key, no holder, a folded holder)."""
    fired = [judge(stream, options, raw) for _, stream, options, raw in CASES]
    assert fired == [rule for rule, *_ in CASES]
    assert {rule.name for rule in RULES} == set(fired)
