"""The decision-flow diagram of /rules: an SVG drawn from the rules table, one box per rule.

A fragment enters at the top; each box asks whether its rule applies: "yes" leads right to
what happens, "no" leads down to the next rule. The last rule always applies.
"""

from __future__ import annotations

import textwrap
from functools import cache

from markupsafe import Markup, escape

from webapp.core.rules import POLICIES, RULES

BOX_X, BOX_W, BOX_H, GAP = 20, 380, 78, 40
OUT_X, OUT_W = 470, 190
WIDTH = OUT_X + OUT_W + 20
LINE = 15
WRAP = 58


def _text(x: int, y: int, lines: list[str], css: str) -> str:
    spans = "".join(
        f'<tspan x="{x}" dy="{0 if n == 0 else LINE}">{escape(line)}</tspan>'
        for n, line in enumerate(lines)
    )
    return f'<text class="{css}" x="{x}" y="{y}">{spans}</text>'


def _box(n: int) -> str:
    rule = RULES[n]
    top = 30 + n * (BOX_H + GAP)
    mid = top + BOX_H // 2
    only = "" if rule.policies == frozenset(POLICIES) else " (adr-0019 only)"
    lines = textwrap.wrap(rule.meaning, WRAP)[:3]
    parts = [
        f'<g class="flow-rule rule-{rule.name}" id="flow-{rule.name}">',
        f'<a href="#{rule.name}"><rect class="flow-box" x="{BOX_X}" y="{top}" '
        f'width="{BOX_W}" height="{BOX_H}" rx="8"/>',
        _text(BOX_X + 12, top + 20, [f"{n + 1}. {rule.name}{only}"], "flow-name"),
        _text(BOX_X + 12, top + 38, lines, "flow-meaning"),
        "</a>",
        f'<line class="flow-arrow" x1="{BOX_X + BOX_W}" y1="{mid}" x2="{OUT_X - 4}" y2="{mid}" '
        'marker-end="url(#flow-head)"/>',
        _text(BOX_X + BOX_W + 12, mid - 6, ["yes"], "flow-yes"),
        f'<rect class="flow-out" x="{OUT_X}" y="{mid - 22}" width="{OUT_W}" height="44" rx="22"/>',
        _text(OUT_X + 14, mid - 3, textwrap.wrap(rule.outcome, 26), "flow-o"),
    ]
    if n + 1 < len(RULES):
        bottom = top + BOX_H
        parts.append(
            f'<line class="flow-arrow" x1="{BOX_X + 40}" y1="{bottom}" x2="{BOX_X + 40}" '
            f'y2="{bottom + GAP - 4}" marker-end="url(#flow-head)"/>'
        )
        parts.append(_text(BOX_X + 50, bottom + GAP // 2 + 5, ["no"], "flow-no"))
    parts.append("</g>")
    return "".join(parts)


@cache
def rule_flow() -> Markup:
    """The diagram as inline SVG markup (every text escaped)."""
    height = 30 + len(RULES) * (BOX_H + GAP)
    head = (
        '<defs><marker id="flow-head" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto"><path class="flow-tip" d="M0,0 L10,5 L0,10 z"/>'
        "</marker></defs>"
    )
    start = _text(
        BOX_X, 18, ["a fragment arrives: the rules are tried in this order"], "flow-start"
    )
    boxes = "".join(_box(n) for n in range(len(RULES)))
    svg = (
        f'<svg class="flow" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" '
        f'role="group" aria-labelledby="flow-title"><title id="flow-title">The rules as a '
        f"decision flow</title>{head}{start}{boxes}</svg>"
    )
    return Markup(svg)  # every text above went through escape()
