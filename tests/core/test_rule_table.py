"""The rules table (`webapp.core.rules`): its rows, its one decision, the words of each verdict,
and everything that reads the rows (the stylesheet, the palette, the flow diagram).

A sixth rule is a row and a branch of `decide` in `webapp/core/rules.py`, its cases here, and
a look at every place its header's WARNING names. The test of those places below finds them in
the package (each module that imports a row constant or spells a rule's name) and fails on one
the header does not name. Its colours and the pages' count of the rules come from the rows.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.streamkit import chunk, frag, records, tool_stream
from webapp.cli.palette import RULE_COLOURS, rule_style
from webapp.core.assembler import assemble
from webapp.core.options import Options
from webapp.core.records import Record
from webapp.core.rules import EFFECTS, POLICIES, RULE_EFFECTS, RULE_NAMES, RULES, rules_for
from webapp.web.http.palette import RULES_CSS
from webapp.web.views.flow import rule_flow

ROOT = Path(__file__).resolve().parents[2]
_HEX = re.compile(r"#[0-9a-f]{6}")


def _declared(block: str) -> dict[str, str]:
    return dict(re.findall(r"--rule-([a-z-]+):\s*(#[0-9a-fA-F]{6});", block))


def _schemes(css: str) -> tuple[str, str]:
    """The light `:root` block and the dark one (inside `prefers-color-scheme: dark`)."""
    light = css[css.index(":root {") : css.index("}", css.index(":root {"))]
    dark_start = css.index("@media (prefers-color-scheme: dark)")
    dark = css[dark_start : css.index("}", css.index(":root {", dark_start))]
    return light, dark


def test_the_stylesheet_carries_exactly_the_tables_colours() -> None:
    css = RULES_CSS  # what /rules.css serves and the exported file inlines
    light, dark = _schemes(css)
    assert _declared(light) == {rule.name: rule.colour.light for rule in RULES}
    assert _declared(dark) == {rule.name: rule.colour.dark for rule in RULES}
    classes = re.findall(r"^\.rule-([a-z-]+) \{ --rule: var\(--rule-\1\); \}$", css, re.M)
    assert classes == list(RULE_NAMES)
    # The overview's columns name a rule by its row: `.oc.r<n>` and `.oc.q<n>` for each.
    for n, name in enumerate(RULE_NAMES):
        assert (
            f".oc.r{n} {{ --a: var(--rule-{name}); }} .oc.q{n} {{ --b: var(--rule-{name}); }}"
            in css
        )
    assert not re.search(rf"\.[rq]{len(RULES)} ", css), "a row class past the table"


def test_every_row_is_filled_in_and_every_colour_is_its_own() -> None:
    for rule in RULES:
        assert rule.meaning and rule.example and rule.outcome and rule.policies
        assert _HEX.fullmatch(rule.colour.light) and _HEX.fullmatch(rule.colour.dark)
        assert rule.effect in EFFECTS
    for kind in ("terminal", "light", "dark"):
        assert len({getattr(rule.colour, kind) for rule in RULES}) == len(RULES), kind
    assert {policy for rule in RULES for policy in rule.policies} == set(POLICIES)
    assert [rule.name for rule in rules_for("exact-key")] == ["exact-index", "exact-id", "new"]
    assert tuple(EFFECTS.index(rule.effect) for rule in RULES) == RULE_EFFECTS
    assert [rule.effect for rule in RULES] == ["lands", "lands", "appends", "drops", "opens"]


def test_the_palette_and_the_flow_diagram_read_the_rows() -> None:
    assert {name: colour.terminal for name, colour in RULE_COLOURS.items()} == {
        rule.name: rule.colour.terminal for rule in RULES
    }
    assert rule_style("exact-id") == "cyan" and rule_style("no-such-rule") == ""
    svg = str(rule_flow())
    boxes = re.findall(r'<g class="flow-rule rule-([a-z-]+)"', svg)
    assert boxes == list(RULE_NAMES)
    for rule in RULES:
        first_word = rule.outcome.split()[0]
        assert f">{first_word}" in svg, rule.name


# Every place outside the table that names a rule: the WARNING of its header names each.

ROW_CONSTANTS = {name.replace("-", "_").upper() for name in RULE_NAMES}
"""`EXACT_INDEX` ...: each rule's row, as `webapp.core.rules` names it."""
SEEMING = {
    "webapp.examples": "an example is called continuation",
    "webapp.web.views.decision": "links the continuation example",
    "webapp.web.routes.teach": "opens the continuation example",
}
"""Modules that spell a rule's name for something else; a new rule leaves them alone."""


def naming_a_rule(sources: dict[str, str]) -> dict[str, list[int]]:
    """Each module that imports or reads a row constant or spells a rule's name, with those
    lines."""
    found: dict[str, list[int]] = {}
    for name, source in sources.items():
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ImportFrom) and node.module == "webapp.core.rules":
                if ROW_CONSTANTS & {alias.name for alias in node.names}:
                    found.setdefault(name, []).append(node.lineno)
            elif _names_a_rule(node):
                found.setdefault(name, []).append(node.lineno)
    return found


def _names_a_rule(node: ast.AST) -> bool:
    """A row constant read from the module (`rules.DROP`), or a rule's name as a string."""
    if isinstance(node, ast.Attribute):
        return node.attr in ROW_CONSTANTS
    return isinstance(node, ast.Constant) and node.value in RULE_NAMES


def package_sources() -> dict[str, str]:
    """Every module of the package but the table's own, by dotted name."""
    out = {}
    for path in sorted((ROOT / "webapp").rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if "node_modules" in parts or (path.name == "rules.py" and parts[-2] == "core"):
            continue
        dotted = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[dotted] = path.read_text(encoding="utf-8")
    return out


def header() -> str:
    """The table's header, read from its source (the compiled module keeps no docstring).

    From the checkout, not from `rules.__file__`: a compiled module first imported by another
    of its group (the assembler imports the rules) gets a `__file__` mypyc builds from the
    group's library, `webapp/core/webapp/core/rules...so`, which names no real folder."""
    source = (ROOT / "webapp" / "core" / "rules.py").read_text(encoding="utf-8")
    return ast.get_docstring(ast.parse(source)) or ""


def warned() -> set[str]:
    """The modules the WARNING of the table's header lists."""
    doc = header()
    listed = doc[doc.index("WARNING") : doc.index("\n\n", doc.index("\n- "))]
    return set(re.findall(r"`(webapp(?:\.[a-z_]+)+)`", listed))


def test_every_module_that_names_a_rule_is_in_the_warning() -> None:
    found = naming_a_rule(package_sources())
    assert {"webapp.core.toolcalls", "webapp.web.views.stories"} <= set(found), "the scan works"
    unnamed = {name: lines for name, lines in found.items() if name not in warned() | set(SEEMING)}
    assert unnamed == {}, "name these in the WARNING of webapp/core/rules.py, or in SEEMING"
    stale = (warned() | set(SEEMING)) - set(found)
    assert stale == set(), "these no longer name a rule: take them off the list"
    for path in ("tests/reference/oracle.py", "tests/core/test_rule_table.py"):
        assert path in header() and (ROOT / path).is_file()


def test_the_scan_sees_each_way_of_naming_a_rule() -> None:
    sources = {
        "a": "from webapp.core.rules import CONTINUATION, RULES\n",
        "b": "from webapp.core.rules import RULE_NAMES, RULES\n",
        "c": 'NOUNS = {"exact-id": "match"}\n',
        "d": 'def f(rule):\n    return rule == "drop"\n',
        "e": 'WORD = "newer"\n',
        "f": "from webapp.core import rules\n\n\nSKIP = rules.DROP\n",
    }
    assert naming_a_rule(sources) == {"a": [1], "c": [1], "d": [2], "f": [4]}


def test_no_page_counts_the_rules_itself() -> None:
    for template in sorted((ROOT / "templates").glob("*.html")):
        assert not re.search(r"\b(five|5) rules\b", template.read_text(), re.I), template.name


# Each rule with each kind of miss: the rule `decide` names, and the words of its row.

SERVER = Options("adr-0019", "server-tools", ("web_search",))
FOLDED = tool_stream([[frag(0, "a", "web_search", "{}")], [frag(1, "b", "f", "{")]])[:2]
OPEN = tool_stream([[frag(0, "a", "f", "{")]])[:1]
CASES = [
    ("exact-index", OPEN, Options(), frag(0, args="}"), 'index 0 names block #0'),
    ("exact-id", OPEN, Options(), frag(id="a", args="}"), 'no index; id "a" names block #0'),
    ("exact-id", OPEN, Options(), frag(7, "a", args="}"),
     'no block under index 7; id "a" names block #0'),
    ("continuation", OPEN, Options(), frag(args="}"),
     "no index, no id, no name: continuation onto block #0, the most recently opened; "
     "no other block was waiting for arguments"),
    ("continuation", FOLDED, SERVER, frag(0, args="}"),
     "index 0 names only block #0 (folded), no id, no name: continuation onto block #1, the "
     "most recently opened candidate not yet folded; no other block was waiting for arguments"),
    ("drop", [], Options(), frag(args="{}"),
     "no index, no id, no name, and no open block to continue: dropped"),
    ("drop", [], SERVER, frag(3, args="{}"),
     "no block under index 3, no id, no name, and no candidate still pending to continue: "
     "dropped"),
    ("new", OPEN, Options("exact-key"), frag(args="}"),
     "no index; no name and no id: under exact-key matching this opens a phantom block"),
    ("new", OPEN, Options(), frag(1, "b", "g", "{"),
     'no block under index 1, no block under id "b"; name "g": opens a new block'),
    ("new", OPEN, Options(), frag(id="b"),
     'no index, no block under id "b"; id "b" without a name is a call header: opens a new '
     "block"),
    ("new", FOLDED[:1], SERVER, frag(0, "a", "g", "{"),
     'index 0 names only block #0 (folded), id "a" names only block #0 (folded); name "g": '
     "opens a new block"),
]  # fmt: skip


def _judged(stream: list[Record], options: Options, probe: dict[str, object]) -> tuple[str, str]:
    line = 2 * len(stream) + 1
    trace = assemble([*stream, Record("chunk", line, chunk(probe))], options)
    (fragment,) = trace.steps[len(stream)].fragments
    return fragment.rule, fragment.reason


@pytest.mark.parametrize(("rule", "stream", "options", "probe", "words"), CASES)
def test_each_rule_is_decided_and_worded_by_its_row(
    rule: str, stream: list[Record], options: Options, probe: dict[str, object], words: str
) -> None:
    assert _judged(stream, options, probe) == (rule, words)


def test_the_cases_cover_every_row() -> None:
    assert {rule for rule, *_ in CASES} == set(RULE_NAMES)


def test_a_continuation_names_the_other_blocks_that_were_waiting() -> None:
    stream = records([chunk(frag(0, "a", "f", "{")), chunk(frag(1, "b", "g", '{"x":'))], done=False)
    rule, words = _judged(stream, Options(), frag(args="1}"))
    assert rule == "continuation"
    assert words.endswith(
        "recently opened; block #0 f was also open, its arguments '{' not yet complete"
    )
