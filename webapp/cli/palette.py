"""One colour per resolution rule, the same in every view: the rules table's own colours.

`terminal` is a Rich style string (the CLI); `hex` is the same hue for anything drawn in a
browser, so that a rule looks alike on the page and in the terminal. The stylesheet carries the
same values (tests/core/test_rule_table.py keeps it in step).
"""

from __future__ import annotations

from types import MappingProxyType

from webapp.core.rules import RULES, Colour

__all__ = ["RULE_COLOURS", "Colour", "rule_style"]

RULE_COLOURS: MappingProxyType[str, Colour] = MappingProxyType(
    {rule.name: rule.colour for rule in RULES}
)


def rule_style(rule: str) -> str:
    """The terminal style of a rule name (plain for anything that is not a rule)."""
    colour = RULE_COLOURS.get(rule)
    return colour.terminal if colour is not None else ""
