"""One colour per resolution rule, the same in every view, keyed by `webapp.core.rules.RULE_NAMES`.

`terminal` is a Rich style string (the CLI); `hex` is the same hue for anything drawn in a
browser, so that a rule looks alike on the page and in the terminal.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

from webapp.core.rules import RULE_NAMES


@dataclass(frozen=True, slots=True)
class Colour:
    """A rule's colour: a Rich style for the terminal and a hex value for the web."""

    terminal: str
    hex: str


RULE_COLOURS: MappingProxyType[str, Colour] = MappingProxyType(
    {
        "exact-index": Colour("green", "#2e7d32"),
        "exact-id": Colour("cyan", "#00838f"),
        "continuation": Colour("yellow", "#b58900"),
        "drop": Colour("red", "#c62828"),
        "new": Colour("magenta", "#8e24aa"),
    }
)

if tuple(RULE_COLOURS) != RULE_NAMES:  # pragma: no cover - guards the table against drift
    raise AssertionError("RULE_COLOURS must name every rule of webapp.core.rules.RULES, in order")


def rule_style(rule: str) -> str:
    """The terminal style of a rule name (plain for anything that is not a rule)."""
    colour = RULE_COLOURS.get(rule)
    return colour.terminal if colour is not None else ""
