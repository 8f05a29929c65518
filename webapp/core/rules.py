"""The five rules that resolve a tool-call fragment to a block: the table, and the one decision.

Each row of `RULES` is one rule: its name, what it means, an example, the policies that have
it, its colour (a terminal style and a hex value for the light and the dark scheme: the CLI's
palette, the flow diagram of /rules and the pages' stylesheet, `webapp.web.http.palette`, all
read it), its effect and what that is in words, and the words of its reason. `decide` is the table
applied, in table order, to one fragment's keys and the registry of blocks: the assembler calls
it for every fragment. It answers in small integers (the rule's row, the block, and what the
index and the id missed), and the row's `reason` puts that verdict into words when someone
reads it (`reason`). The row's `effect` is what the assembler then does (`RULE_EFFECTS`): the
fragment lands on the block found, appends to the most recently opened block, is dropped, or
opens a block.

The order is the decision (spec sections 2 and 3): exact-index, exact-id, then, for a fragment
with no name and no id, continuation onto the most recently opened block or drop when there is
none; anything else opens a block (`new`). Policy `exact-key` (upstream before decision 0019)
has no continuation and no drop. On the server-tools path a folded candidate takes no fragment:
a key that names only folded candidates misses.

WARNING
-------
What a rule is lives in this file, all but what follows. A rule's effect is one of the four
above, and the assembler does each (`Assembler._fragment` lands a fragment found by a key,
`Assembler._unusual` does the other three): a rule with one of them needs nothing there, a
new effect does. These places name rules by hand; look at each when a row changes (a sixth
rule, a renamed one, another order):

- this file: the row, the words of its reason, `RuleName`, its branch of `decide`, and the
  row constants (`EXACT_INDEX` ...);
- `webapp.core.toolcalls`: `ToolCalls.register` (an exact-index match whose id differs is an
  id-conflict) and `ToolCalls.adr` (whether the policy has continuation and drop);
- `webapp.core.contract.wire`, the contract's own reading of the wire, which resolves each
  fragment again by the rules a client follows, and `webapp.core.contract.quirks` and
  `webapp.core.contract.intended`, which name quirks and readings by the rule a fragment took;
- `webapp.web.views.timeline` (`RUN_NOUNS`: what the timeline calls a run of each rule) and
  `webapp.web.views.stories` (`SEE_IT`: the example where the /rules page shows each fire);
- `webapp.triage.compare` (it counts the drops) and `webapp.web.http.problems` (the API's
  example trace);
- `webapp.storage.tracefile` and `webapp.web.backend.trace.stored`, whose `_FIVE` are the
  rules of a trace stored before it named them: they stay as they are, but a renamed rule must
  still be found in old traces;
- the spec's oracle, `tests/reference/oracle.py`, which decides again as the spec words it,
  and the cases of `tests/core/test_rule_table.py`. That test finds every module that names
  a rule (a row constant, or a rule's name as a string) and fails until it is on this list,
  or on its own list of those that only seem to (an example called `continuation`).

The colours need no stylesheet edit (`webapp.web.http.palette` writes /rules.css from the
rows), and the pages count the rules from the table.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple, Protocol

from webapp.core.blocks import Block
from webapp.core.jsvalue import index_key, map_key

RuleName = Literal["exact-index", "exact-id", "continuation", "drop", "new"]
Effect = Literal["lands", "appends", "drops", "opens"]
EFFECTS: tuple[Effect, ...] = ("lands", "appends", "drops", "opens")
LANDS, APPENDS, DROPS, OPENS = range(len(EFFECTS))
"""Each effect's number, as `RULE_EFFECTS` gives it for a rule's row."""
Policy = Literal["adr-0019", "exact-key"]
POLICIES: tuple[Policy, ...] = ("adr-0019", "exact-key")

NO_KEY = -2
"""A miss: the fragment has no such key (no index, or no id)."""
NO_HOLDER = -1
"""A miss: no block is registered under the key (a number >= 0: only that folded block is)."""


class Verdict(NamedTuple):
    """What a reason is worded from: the keys that count, the block, the misses, the path."""

    index: Any
    """The index when it is a number, else None."""
    id: Any
    """The id when it counts (a truthy value), else None."""
    name: Any
    """The name when it counts, else None."""
    block: int | None
    """The block it landed on (None: dropped, or a new one not yet numbered in the words)."""
    index_miss: int
    id_miss: int
    server_path: bool


@dataclass(frozen=True, slots=True)
class Colour:
    """A rule's colour: a Rich style for the terminal, hex values for the light and dark page."""

    terminal: str
    light: str
    dark: str

    @property
    def hex(self) -> str:
        """The light scheme's value (what the page shows by default)."""
        return self.light


@dataclass(frozen=True, slots=True)
class Rule:
    """One row of the table."""

    name: RuleName
    meaning: str
    example: str
    policies: frozenset[Policy]
    colour: Colour
    effect: Effect
    """What the assembler does when it fires (`Assembler._fragment`, `Assembler._unusual`)."""
    outcome: str
    """The effect in a few words (the flow diagram's answer to "yes")."""
    reason: Callable[[Verdict], str]
    """The words of a verdict by this rule."""


# The reasons. A continuation's reason gains, where the trace is written, which other blocks
# were waiting for arguments (`webapp.core.columns`): that is the assembler's, not the rule's.


def _exact_index(v: Verdict) -> str:
    return f"index {_text(v.index)} names block #{v.block}"


def _exact_id(v: Verdict) -> str:
    return f"{_index_miss(v)}; id {_text(v.id)} names block #{v.block}"


def _continuation(v: Verdict) -> str:
    which = " candidate not yet folded" if v.server_path else ""
    return (
        f"{_index_miss(v)}, no id, no name: continuation onto block #{v.block}, the most "
        f"recently opened{which}"
    )


def _drop(v: Verdict) -> str:
    which = "candidate still pending" if v.server_path else "open block"
    return f"{_index_miss(v)}, no id, no name, and no {which} to continue: dropped"


def _new(v: Verdict) -> str:
    found = [_index_miss(v)]
    if v.id is not None:
        found.append(_miss("id", v.id, v.id_miss))
    if v.name is None and v.id is None:
        why = "no name and no id: under exact-key matching this opens a phantom block"
    elif v.name is None:
        why = f"id {_text(v.id)} without a name is a call header: opens a new block"
    else:
        why = f"name {_text(v.name)}: opens a new block"
    return f"{', '.join(found)}; {why}"


def _index_miss(v: Verdict) -> str:
    return _miss("index", v.index, v.index_miss)


def _miss(key: str, value: Any, miss: int) -> str:
    if miss == NO_KEY:
        return f"no {key}"
    if miss == NO_HOLDER:
        return f"no block under {key} {_text(value)}"
    return f"{key} {_text(value)} names only block #{miss} (folded)"


def _text(value: Any) -> str:
    if isinstance(value, str):
        return f'"{value}"' if len(value) <= 40 else f'"{value[:37]}..."'
    return repr(value)


_BOTH: frozenset[Policy] = frozenset(POLICIES)
_ADR: frozenset[Policy] = frozenset({"adr-0019"})

RULES: tuple[Rule, ...] = (
    Rule(
        "exact-index",
        "The fragment has an index and a block is registered under it: it lands there.",
        '{"index": 0, "function": {"arguments": "\\"Paris\\"}"}} after a block opened at index 0',
        _BOTH,
        Colour("green", "#2e7d32", "#66bb6a"),
        "lands",
        "lands on the block under its index",
        _exact_index,
    ),
    Rule(
        "exact-id",
        "No block under its index, but its id names a block: it lands there.",
        '{"id": "call_1", "function": {"arguments": "}"}} after call_1 opened with no index',
        _BOTH,
        Colour("cyan", "#00838f", "#4dd0e1"),
        "lands",
        "lands on the block its id names",
        _exact_id,
    ),
    Rule(
        "continuation",
        "Nothing matched, and it has no name and no id: it continues the most recently "
        "opened block (decision 0019).",
        '{"function": {"arguments": "ris\\"}"}} while call_1 is open',
        _ADR,
        Colour("yellow", "#b58900", "#e0b341"),
        "appends",
        "appends to the most recently opened block",
        _continuation,
    ),
    Rule(
        "drop",
        "Nothing matched, it has no name and no id, and no block is open: it is dropped "
        "(decision 0019).",
        '{"function": {"arguments": "{}"}} before any call opened',
        _ADR,
        Colour("red", "#c62828", "#ef5350"),
        "drops",
        "is dropped: nothing is created",
        _drop,
    ),
    Rule(
        "new",
        "Nothing matched: a new block opens, registered under its index and id.",
        '{"index": 0, "id": "call_1", "function": {"name": "get_weather"}} first in the stream',
        _BOTH,
        Colour("magenta", "#8e24aa", "#ce93d8"),
        "opens",
        "opens a new block",
        _new,
    ),
)

RULE_NAMES: tuple[RuleName, ...] = tuple(rule.name for rule in RULES)
EXACT_INDEX, EXACT_ID, CONTINUATION, DROP, NEW = (
    RULE_NAMES.index(name) for name in ("exact-index", "exact-id", "continuation", "drop", "new")
)
"""Each rule's row in the table: what `decide` answers and the trace's columns keep."""
RULE_EFFECTS: tuple[int, ...] = tuple(EFFECTS.index(rule.effect) for rule in RULES)
"""Each rule's effect (`LANDS` ...), by the rule's row."""


def rules_for(policy: Policy) -> tuple[Rule, ...]:
    """The rules a policy tries, in order."""
    return tuple(rule for rule in RULES if policy in rule.policies)


class Registry(Protocol):
    """Where the assembler's keys point (`webapp.core.toolcalls.ToolCalls`)."""

    @property
    def by_index(self) -> dict[object, Block]:
        """Blocks by index (`jsvalue.index_key`), folded or not; the latest registration wins."""

    @property
    def by_id(self) -> dict[object, Block]:
        """Blocks by id (`jsvalue.map_key`), folded or not."""

    def latest_open(self) -> Block | None:
        """The most recently opened block that still takes fragments."""


Decision = tuple[int, Block | None, int, int]
"""The rule's row, the block it lands on (None: dropped or new), the index's and id's misses."""
_SAFE = 2**53


def decide(index: Any, call_id: Any, name: Any, registry: Registry, adr: bool) -> Decision:
    """The first rule of the table that applies to a fragment with these keys.

    `index` is the index when it is a number, `call_id` and `name` the id and name when they
    count (truthy), else None; `adr` whether the policy has continuation and drop. A block
    that has folded (server-tools path) takes no fragment.
    """
    index_miss = NO_KEY
    if index is not None:  # exact-index
        key = index if type(index) is int and -_SAFE <= index <= _SAFE else index_key(index)
        holder = registry.by_index.get(key)
        if holder is None:
            index_miss = NO_HOLDER
        elif holder.fold is None:
            return EXACT_INDEX, holder, NO_KEY, NO_KEY
        else:
            index_miss = _number(holder)
    if call_id is not None:  # exact-id
        holder = registry.by_id.get(map_key(call_id))
        if holder is None:
            return NEW, None, index_miss, NO_HOLDER
        if holder.fold is None:
            return EXACT_ID, holder, index_miss, NO_KEY
        return NEW, None, index_miss, _number(holder)
    if name is None and adr:  # continuation, drop
        block = registry.latest_open()
        if block is None:
            return DROP, None, index_miss, NO_KEY
        return CONTINUATION, block, index_miss, NO_KEY
    return NEW, None, index_miss, NO_KEY


def reason(code: int, verdict: Verdict) -> str:
    """Why a fragment went where it did, in the words of its rule's row."""
    return RULES[code].reason(verdict)


def _number(block: Block) -> int:
    assert block.number is not None  # a tool-call block, numbered when it opened
    return block.number
