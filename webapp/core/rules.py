"""The five rules that resolve a tool-call fragment to a block, as one table.

The assembler tries them in table order and the first that returns a match fires; the
timeline, the /rules page, the CLI legend and the tests all read this same table. Policy
`exact-key` (upstream before decision 0019) has no `continuation` and no `drop`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple, Protocol

from webapp.core.jsvalue import Keys

RuleName = Literal["exact-index", "exact-id", "continuation", "drop", "new"]
Policy = Literal["adr-0019", "exact-key"]
POLICIES: tuple[Policy, ...] = ("adr-0019", "exact-key")


class Candidate(Protocol):
    """What a rule may know of a block: its number, and whether it still takes fragments."""

    @property
    def number(self) -> int | None: ...

    @property
    def folded_step(self) -> int | None: ...


class Lookup(Protocol):
    """The assembler's registry, as the rules see it."""

    def holder_of_index(self, index: Any) -> Candidate | None:
        """The block registered under this index, folded or not."""

    def holder_of_id(self, call_id: Any) -> Candidate | None:
        """The block registered under this id, folded or not."""

    def latest_open(self) -> Candidate | None:
        """The most recently opened block that still takes fragments."""

    def takes_fragments(self, block: Candidate) -> bool:
        """False for a folded candidate on the server-tools path."""

    @property
    def server_path(self) -> bool:
        """Whether blocks are server-tools candidates that fold."""


class Match(NamedTuple):
    """A rule's verdict: the block the fragment lands on (None: dropped, or a new one)."""

    rule: RuleName
    block: Candidate | None
    reason: str


Handler = Callable[[Keys, Lookup], Match | None]


@dataclass(frozen=True, slots=True)
class Rule:
    """One row of the table: a name, what it means, an example, and the code that applies it."""

    name: RuleName
    meaning: str
    example: str
    policies: frozenset[Policy]
    handler: Handler


def _exact_index(keys: Keys, lookup: Lookup) -> Match | None:
    if keys.index is None:
        return None
    block = lookup.holder_of_index(keys.index)
    if block is None or not lookup.takes_fragments(block):
        return None
    return Match("exact-index", block, f"index {_text(keys.index)} names block #{block.number}")


def _exact_id(keys: Keys, lookup: Lookup) -> Match | None:
    if keys.id is None:
        return None
    block = lookup.holder_of_id(keys.id)
    if block is None or not lookup.takes_fragments(block):
        return None
    reason = f"id {_text(keys.id)} names block #{block.number}"
    return Match("exact-id", block, f"{_index_miss(keys, lookup)}; {reason}")


def _continuation(keys: Keys, lookup: Lookup) -> Match | None:
    if not keys.bare:
        return None
    block = lookup.latest_open()
    if block is None:
        return None
    which = " candidate not yet folded" if lookup.server_path else ""
    return Match(
        "continuation",
        block,
        f"{_index_miss(keys, lookup)}, no id, no name: continuation onto block "
        f"#{block.number}, the most recently opened{which}",
    )


def _drop(keys: Keys, lookup: Lookup) -> Match | None:
    if not keys.bare:
        return None
    which = "candidate still pending" if lookup.server_path else "open block"
    return Match(
        "drop",
        None,
        f"{_index_miss(keys, lookup)}, no id, no name, and no {which} to continue: dropped",
    )


def _new(keys: Keys, lookup: Lookup) -> Match:
    misses = [_index_miss(keys, lookup)]
    if keys.id is not None:
        misses.append(_id_miss(keys, lookup))
    if keys.bare:
        why = "no name and no id: under exact-key matching this opens a phantom block"
    elif keys.name is None:
        why = f"id {_text(keys.id)} without a name is a call header: opens a new block"
    else:
        why = f"name {_text(keys.name)}: opens a new block"
    return Match("new", None, f"{', '.join(misses)}; {why}")


def _index_miss(keys: Keys, lookup: Lookup) -> str:
    if keys.index is None:
        return "no index"
    holder = lookup.holder_of_index(keys.index)
    if holder is None:
        return f"no block under index {_text(keys.index)}"
    return f"index {_text(keys.index)} names only block #{holder.number} (folded)"


def _id_miss(keys: Keys, lookup: Lookup) -> str:
    holder = lookup.holder_of_id(keys.id)
    if holder is None:
        return f"no block under id {_text(keys.id)}"
    return f"id {_text(keys.id)} names only block #{holder.number} (folded)"


# The table compiled for the assembler's loop: a verdict is recorded as integers (the rule's
# position in RULE_NAMES, the block, and what the index and id missed), and its reason is put
# into words from them on demand, by the same phrases as the handlers above. The tests check
# that both give the same rule, block and reason on every row.

NO_KEY = -2
"""A miss: the fragment has no such key (no index, or no id)."""
NO_HOLDER = -1
"""A miss: no block is registered under the key (a number >= 0: only that folded block is)."""


def reason(
    rule: RuleName,
    keys: tuple[Any, Any, Any],
    number: int | None,
    misses: tuple[int, int],
    server_path: bool,
) -> str:
    """The words a handler gives for a verdict: `keys` are the index, id and name that count."""
    index, call_id, name = keys
    index_miss = _miss("index", index, misses[0])
    if rule == "exact-index":
        return f"index {_text(index)} names block #{number}"
    if rule == "exact-id":
        return f"{index_miss}; id {_text(call_id)} names block #{number}"
    if rule == "continuation":
        which = " candidate not yet folded" if server_path else ""
        return (
            f"{index_miss}, no id, no name: continuation onto block #{number}, the most "
            f"recently opened{which}"
        )
    if rule == "drop":
        which = "candidate still pending" if server_path else "open block"
        return f"{index_miss}, no id, no name, and no {which} to continue: dropped"
    found = [index_miss]
    if call_id is not None:
        found.append(_miss("id", call_id, misses[1]))
    if name is None and call_id is None:
        why = "no name and no id: under exact-key matching this opens a phantom block"
    elif name is None:
        why = f"id {_text(call_id)} without a name is a call header: opens a new block"
    else:
        why = f"name {_text(name)}: opens a new block"
    return f"{', '.join(found)}; {why}"


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
        _exact_index,
    ),
    Rule(
        "exact-id",
        "No block under its index, but its id names a block: it lands there.",
        '{"id": "call_1", "function": {"arguments": "}"}} after call_1 opened with no index',
        _BOTH,
        _exact_id,
    ),
    Rule(
        "continuation",
        "Nothing matched, and it has no name and no id: it continues the most recently "
        "opened block (decision 0019).",
        '{"function": {"arguments": "ris\\"}"}} while call_1 is open',
        _ADR,
        _continuation,
    ),
    Rule(
        "drop",
        "Nothing matched, it has no name and no id, and no block is open: it is dropped "
        "(decision 0019).",
        '{"function": {"arguments": "{}"}} before any call opened',
        _ADR,
        _drop,
    ),
    Rule(
        "new",
        "Nothing matched: a new block opens, registered under its index and id.",
        '{"index": 0, "id": "call_1", "function": {"name": "get_weather"}} first in the stream',
        _BOTH,
        _new,
    ),
)

RULE_NAMES: tuple[RuleName, ...] = tuple(rule.name for rule in RULES)


def rules_for(policy: Policy) -> tuple[Rule, ...]:
    """The rules a policy tries, in order."""
    return tuple(rule for rule in RULES if policy in rule.policies)


def resolve(keys: Keys, lookup: Lookup, rules: tuple[Rule, ...]) -> Match:
    """Apply the rules in order; the first verdict wins (`new` always gives one)."""
    for rule in rules:
        match = rule.handler(keys, lookup)
        if match is not None:
            return match
    raise AssertionError("the rule table must end with a rule that always matches")
