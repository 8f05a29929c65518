"""The five rules, one table row per rule and per edge spec sections 1 to 4 name.

Every row is a stream of tool-call fragments (one list per chunk), followed by a chunk with
`finish_reason: "tool_calls"` and `[DONE]`; so with n chunks of fragments the end step is n + 2.
Rows that differ between the policies appear once per policy: that is how decision 0019 is
taught, and it keeps the exact-key column honest (it must stay upstream's behaviour).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.core.schema import ANOMALY_CODES, check_schema
from tests.streamkit import frag, tool_stream
from webapp.core.assembler import assemble
from webapp.core.options import Options
from webapp.core.trace import Trace

END: Any = "end"
"""In an expected fold or anomaly step: the end step."""
ANY: Any = "any"
"""In an expected anomaly step: whichever step the assembler reports it at (phantom-call is
about the final state; the spec does not fix the step it is shown at)."""


@dataclass
class Row:
    desc: str
    policy: str
    chunks: list[list[dict]]
    rules: list[list[str]]
    blocks: list[tuple]
    """(id, name, arguments), plus (fold as, fold step) on the server-tools path."""
    anomalies: list[tuple[str, Any, int | None]] = field(default_factory=list)
    """(code, step, block) of every anomaly the spec names; order does not matter."""
    starts: list[int] | None = None
    landed: list[list[int | None]] | None = None
    events: dict[int, list[tuple]] = field(default_factory=dict)
    """step -> its events other than `start`, as (type, contentIndex, delta)."""
    server_tools: tuple[str, ...] | None = None

    @property
    def options(self) -> Options:
        if self.server_tools is None:
            return Options(policy=self.policy)  # type: ignore[arg-type]
        return Options(self.policy, "server-tools", self.server_tools)  # type: ignore[arg-type]


def both(desc: str, *args: Any, **kwargs: Any) -> list[Row]:
    """The same expectations under both policies (decision 0019 changes nothing here)."""
    return [Row(desc, policy, *args, **kwargs) for policy in ("adr-0019", "exact-key")]


def adr(desc: str, *args: Any, **kwargs: Any) -> list[Row]:
    return [Row(desc, "adr-0019", *args, **kwargs)]


def ek(desc: str, *args: Any, **kwargs: Any) -> list[Row]:
    return [Row(desc, "exact-key", *args, **kwargs)]


CLIENT: list[Row] = [
    # -- exact-index ---------------------------------------------------------------------
    *both(
        "exact-index: index 0 counts and names the open block",
        [[frag(0, "call_1", "get_weather", '{"city":')], [frag(0, args='"Paris"}')]],
        [["new"], ["exact-index"]],
        [("call_1", "get_weather", '{"city":"Paris"}')],
        starts=[1],
        events={
            0: [("toolcall_start", 0, None), ("toolcall_delta", 0, '{"city":')],
            1: [("toolcall_delta", 0, '"Paris"}')],
        },
    ),
    # -- what the final arguments are (spec section 7) ----------------------------------------
    *both(
        "section 7: arguments that parse to an array: non-object-arguments at the end",
        [[frag(0, "c1", "f", "[1, ")], [frag(0, args="2]")]],
        [["new"], ["exact-index"]],
        [("c1", "f", "[1, 2]")],
        [("non-object-arguments", END, 0)],
    ),
    *both(
        "section 7: a named call with no arguments: empty-arguments at the end",
        [[frag(0, "c1", "f")], [frag(1, "c2", "g", "{}")]],
        [["new"], ["new"]],
        [("c1", "f", ""), ("c2", "g", "{}")],
        [("empty-arguments", END, 0)],
    ),
    *adr(
        "section 7: a continuation while another block's arguments are unfinished is a guess",
        [[frag(0, "c1", "f", '{"a": '), frag(1, "c2", "g", "")], [frag(args="1}")]],
        [["new", "new"], ["continuation"]],
        [("c1", "f", '{"a": '), ("c2", "g", "1}")],
        [
            ("ambiguous-continuation", 1, 1),
            ("incomplete-arguments", END, 0),
            ("invalid-arguments", 1, 1),
        ],
    ),
    # -- exact-id --------------------------------------------------------------------------
    *both(
        "exact-id: no index, the id names the block",
        [[frag(id="call_1", name="f", args='{"a":')], [frag(id="call_1", args="1}")]],
        [["new"], ["exact-id"]],
        [("call_1", "f", '{"a":1}')],
        starts=[1],
    ),
    *both(
        "exact-id registers the fragment's index when the block had none",
        [[frag(id="c1", name="f")], [frag(3, "c1", args="{}")], [frag(3, args=" ")]],
        [["new"], ["exact-id"], ["exact-index"]],
        [("c1", "f", "{} ")],
    ),
    *adr(
        "exact-id leaves the block's first index alone; the other index then names nothing",
        [[frag(0, "c1", "f", "{")], [frag(5, "c1", args="}")], [frag(5, args=" ")]],
        [["new"], ["exact-id"], ["continuation"]],
        [("c1", "f", "{} ")],
    ),
    *ek(
        "exact-id leaves the block's first index alone; the other index then names nothing",
        [[frag(0, "c1", "f", "{")], [frag(5, "c1", args="}")], [frag(5, args=" ")]],
        [["new"], ["exact-id"], ["new"]],
        [("c1", "f", "{}"), ("", "", " ")],
        [("phantom-call", ANY, 1)],
        starts=[1, 1],
    ),
    # -- continuation ----------------------------------------------------------------------
    *adr(
        "continuation: a bare fragment appends to the open block",
        [[frag(0, "c1", "f", '{"a":')], [frag(args="1}")]],
        [["new"], ["continuation"]],
        [("c1", "f", '{"a":1}')],
        starts=[1],
        events={1: [("toolcall_delta", 0, "1}")]},
    ),
    *ek(
        "continuation: a bare fragment appends to the open block",
        [[frag(0, "c1", "f", '{"a":')], [frag(args="1}")]],
        [["new"], ["new"]],
        [("c1", "f", '{"a":'), ("", "", "1}")],
        [
            ("phantom-call", ANY, 1),
            ("incomplete-arguments", END, 0),
            ("invalid-arguments", 1, 1),
        ],
        starts=[1, 1],
        events={1: [("toolcall_start", 1, None), ("toolcall_delta", 1, "1}")]},
    ),
    *adr(
        "continuation whatever its index; a continuation registers nothing",
        [[frag(0, "c1", "f", "{")], [frag(7, args='"k":1')], [frag(7, args="}")]],
        [["new"], ["continuation"], ["continuation"]],
        [("c1", "f", '{"k":1}')],
        starts=[1],
    ),
    *ek(
        "continuation whatever its index; a continuation registers nothing",
        [[frag(0, "c1", "f", "{")], [frag(7, args='"k":1')], [frag(7, args="}")]],
        [["new"], ["new"], ["exact-index"]],
        [("c1", "f", "{"), ("", "", '"k":1}')],
        [
            ("phantom-call", ANY, 1),
            ("incomplete-arguments", END, 0),
            ("invalid-arguments", 1, 1),
        ],
        starts=[1, 1],
    ),
    # -- drop ------------------------------------------------------------------------------
    *adr(
        "drop: a bare fragment with no block open",
        [[frag(args='{"a":1}')], [frag(0, "c1", "f", "{}")]],
        [["drop"], ["new"]],
        [("c1", "f", "{}")],
        [("dropped-fragment", 0, None)],
        landed=[[None], [0]],
        events={0: [], 1: [("toolcall_start", 0, None), ("toolcall_delta", 0, "{}")]},
    ),
    *ek(
        "drop: a bare fragment with no block open",
        [[frag(args='{"a":1}')], [frag(0, "c1", "f", "{}")]],
        [["new"], ["new"]],
        [("", "", '{"a":1}'), ("c1", "f", "{}")],
        [("phantom-call", ANY, 0)],
        starts=[1, 1],
    ),
    *adr(
        "drop without arguments: no block, no event, no dropped-fragment",
        [[frag(None, None, None, None)]],
        [["drop"]],
        [],
        events={0: []},
    ),
    *ek(
        "drop without arguments: no block, no event, no dropped-fragment",
        [[frag(None, None, None, None)]],
        [["new"]],
        [("", "", "")],
        [("phantom-call", ANY, 0)],
    ),
    *adr(
        "drop: an index that names no block does not save a bare fragment",
        [[frag(2, args="x")]],
        [["drop"]],
        [],
        [("dropped-fragment", 0, None)],
    ),
    # -- JavaScript truthiness -------------------------------------------------------------
    *adr(
        "index null does not count",
        [[frag(0, "c1", "f", "{")], [frag(None, args="}")]],
        [["new"], ["continuation"]],
        [("c1", "f", "{}")],
    ),
    *ek(
        "index null does not count",
        [[frag(0, "c1", "f", "{")], [frag(None, args="}")]],
        [["new"], ["new"]],
        [("c1", "f", "{"), ("", "", "}")],
        [
            ("phantom-call", ANY, 1),
            ("incomplete-arguments", END, 0),
            ("invalid-arguments", 1, 1),
        ],
    ),
    *adr(
        "a string index does not count, not even to register the block",
        [[frag("0", "c1", "f", "{")], [frag(0, args="}")]],
        [["new"], ["continuation"]],
        [("c1", "f", "{}")],
    ),
    *ek(
        "a string index does not count, not even to register the block",
        [[frag("0", "c1", "f", "{")], [frag(0, args="}")]],
        [["new"], ["new"]],
        [("c1", "f", "{"), ("", "", "}")],
        [
            ("phantom-call", ANY, 1),
            ("incomplete-arguments", END, 0),
            ("invalid-arguments", 1, 1),
        ],
    ),
    *adr(
        'id "" counts as no id',
        [[frag(0, "c1", "f", "{")], [frag(id="", args="}")]],
        [["new"], ["continuation"]],
        [("c1", "f", "{}")],
    ),
    *ek(
        'id "" counts as no id',
        [[frag(0, "c1", "f", "{")], [frag(id="", args="}")]],
        [["new"], ["new"]],
        [("c1", "f", "{"), ("", "", "}")],
        [
            ("phantom-call", ANY, 1),
            ("incomplete-arguments", END, 0),
            ("invalid-arguments", 1, 1),
        ],
    ),
    *adr(
        "id null counts as no id",
        [[frag(0, "c1", "f", "{")], [frag(id=None, args="}")]],
        [["new"], ["continuation"]],
        [("c1", "f", "{}")],
    ),
    *both(
        'id "" on an exact-index match: no conflict, the block keeps its id',
        [[frag(0, "c1", "f", "{")], [frag(0, "", args="}")]],
        [["new"], ["exact-index"]],
        [("c1", "f", "{}")],
    ),
    *both(
        'a block opened with id "" takes the first non-empty id; a later one conflicts',
        [[frag(0, "", "f", "{")], [frag(0, "c9", args="}")], [frag(0, "c10", args=" ")]],
        [["new"], ["exact-index"], ["exact-index"]],
        [("c9", "f", "{} ")],
        [("id-conflict", 2, 0)],
    ),
    *adr(
        'name "" counts as no name',
        [[frag(0, "c1", "f", "{")], [frag(name="", args="}")]],
        [["new"], ["continuation"]],
        [("c1", "f", "{}")],
    ),
    *ek(
        'name "" counts as no name',
        [[frag(0, "c1", "f", "{")], [frag(name="", args="}")]],
        [["new"], ["new"]],
        [("c1", "f", "{"), ("", "", "}")],
        [
            ("phantom-call", ANY, 1),
            ("incomplete-arguments", END, 0),
            ("invalid-arguments", 1, 1),
        ],
    ),
    *adr(
        "name null counts as no name",
        [[frag(0, "c1", "f", "{")], [frag(name=None, args="}")]],
        [["new"], ["continuation"]],
        [("c1", "f", "{}")],
    ),
    *both(
        'a header with name "" opens a nameless block that a later name fills',
        [[frag(0, "c1", "", "{}")], [frag(0, name="f")]],
        [["new"], ["exact-index"]],
        [("c1", "f", "{}")],
    ),
    *both(
        'arguments absent or null append "" and still fire toolcall_delta',
        [[frag(0, "c1", "f", None)], [frag(0)], [frag(0, args="{}")]],
        [["new"], ["exact-index"], ["exact-index"]],
        [("c1", "f", "{}")],
        events={
            0: [("toolcall_start", 0, None), ("toolcall_delta", 0, "")],
            1: [("toolcall_delta", 0, "")],
            2: [("toolcall_delta", 0, "{}")],
        },
    ),
    # -- most recently opened, not most recently updated -------------------------------------
    *adr(
        "a continuation goes to the most recently opened block, not the last updated one",
        [
            [frag(0, "a", "f1", '{"x":')],
            [frag(1, "b", "f2", '{"y":')],
            [frag(0, args="1}")],
            [frag(args="2}")],
        ],
        [["new"], ["new"], ["exact-index"], ["continuation"]],
        [("a", "f1", '{"x":1}'), ("b", "f2", '{"y":2}')],
        landed=[[0], [1], [0], [1]],
        starts=[1, 1],
    ),
    *ek(
        "a continuation goes to the most recently opened block, not the last updated one",
        [
            [frag(0, "a", "f1", '{"x":')],
            [frag(1, "b", "f2", '{"y":')],
            [frag(0, args="1}")],
            [frag(args="2}")],
        ],
        [["new"], ["new"], ["exact-index"], ["new"]],
        [("a", "f1", '{"x":1}'), ("b", "f2", '{"y":'), ("", "", "2}")],
        [
            ("phantom-call", ANY, 2),
            ("incomplete-arguments", END, 1),
            ("invalid-arguments", 3, 2),
        ],
        starts=[1, 1, 1],
    ),
    # -- a nameless fragment with an id is a header ------------------------------------------
    *both(
        "a nameless fragment with an id opens a new block (never a continuation), named later",
        [
            [frag(0, "a", "f", "{}")],
            [frag(id="b", args='{"q":')],
            [frag(id="b", name="g", args="1}")],
        ],
        [["new"], ["new"], ["exact-id"]],
        [("a", "f", "{}"), ("b", "g", '{"q":1}')],
        starts=[1, 1],
        landed=[[0], [1], [1]],
    ),
    # -- several fragments in one chunk ------------------------------------------------------
    *adr(
        "several fragments in one chunk resolve in array order",
        [[frag(0, "a", "f", "{"), frag(1, "b", "g", "{"), frag(args="}")], [frag(0, args="}")]],
        [["new", "new", "continuation"], ["exact-index"]],
        [("a", "f", "{}"), ("b", "g", "{}")],
        # block #0 holds "{" (not a whole value) when the bare "}" goes to #1: a guess
        [("ambiguous-continuation", 0, 1)],
        landed=[[0, 1, 1], [0]],
        events={
            0: [
                ("toolcall_start", 0, None),
                ("toolcall_delta", 0, "{"),
                ("toolcall_start", 1, None),
                ("toolcall_delta", 1, "{"),
                ("toolcall_delta", 1, "}"),
            ],
        },
    ),
    *ek(
        "several fragments in one chunk resolve in array order",
        [[frag(0, "a", "f", "{"), frag(1, "b", "g", "{"), frag(args="}")], [frag(0, args="}")]],
        [["new", "new", "new"], ["exact-index"]],
        [("a", "f", "{}"), ("b", "g", "{"), ("", "", "}")],
        [
            ("phantom-call", ANY, 2),
            ("incomplete-arguments", END, 1),
            ("invalid-arguments", 0, 2),
        ],
    ),
    *adr(
        "a bare fragment before the header in the same chunk is dropped",
        [[frag(args="x"), frag(0, "a", "f", "{}")]],
        [["drop", "new"]],
        [("a", "f", "{}")],
        [("dropped-fragment", 0, None)],
        landed=[[None, 0]],
    ),
    # -- id aliasing, conflicts --------------------------------------------------------------
    *both(
        "id aliasing: the latest registration of an id wins; the block keeps its first id",
        [
            [frag(0, "a", "f", "{")],
            [frag(1, "b", "g", "{")],
            [frag(0, "b", args="}")],
            [frag(id="b", args=" ")],
        ],
        [["new"], ["new"], ["exact-index"], ["exact-id"]],
        [("a", "f", "{} "), ("b", "g", "{")],
        [("id-conflict", 2, 0), ("incomplete-arguments", END, 1)],
        landed=[[0], [1], [0], [0]],
    ),
    *both(
        "name-conflict: the first name is kept; repeating the same name is fine",
        [[frag(0, "a", "f", "{")], [frag(0, name="g", args="}")], [frag(0, name="f")]],
        [["new"], ["exact-index"], ["exact-index"]],
        [("a", "f", "{}")],
        [("name-conflict", 1, 0)],
    ),
    *both(
        "the same id repeated on every fragment: no conflict",
        [[frag(0, "a", "f", "{")], [frag(0, "a", args="}")]],
        [["new"], ["exact-index"]],
        [("a", "f", "{}")],
    ),
]

WEB = ("web_search",)
OPENROUTER = ("openrouter:*",)

SERVER: list[Row] = [
    *both(
        "server-tools: a server tool folds as a server-tool call right after it completes",
        [[frag(0, "a", "web_search", '{"q":')], [frag(0, args='"x"}')]],
        [["new"], ["exact-index"]],
        [("a", "web_search", '{"q":"x"}', "server", 1)],
        starts=[0],
        events={0: [], 1: [], 4: [("done", None, None)]},
        server_tools=WEB,
    ),
    *both(
        "server-tools: another candidate folds as a client block, one delta with everything",
        [[frag(0, "a", "get_weather", '{"city":')], [frag(0, args='"P"}')]],
        [["new"], ["exact-index"]],
        [("a", "get_weather", '{"city":"P"}', "client", 1)],
        starts=[1],
        events={
            0: [],
            1: [("toolcall_start", 0, None), ("toolcall_delta", 0, '{"city":"P"}')],
        },
        server_tools=WEB,
    ),
    *both(
        "server-tools: a prefix pattern ending in * names server tools",
        [[frag(0, "a", "openrouter:web_search", "{}")], [frag(1, "b", "openrouterweb", "{}")]],
        [["new"], ["new"]],
        [
            ("a", "openrouter:web_search", "{}", "server", 0),
            ("b", "openrouterweb", "{}", "client", 1),
        ],
        starts=[0, 1],
        events={1: [("toolcall_start", 0, None), ("toolcall_delta", 0, "{}")]},
        server_tools=OPENROUTER,
    ),
    *adr(
        "server-tools: a late fragment with a folded index continues another pending candidate",
        [
            [frag(0, "a", "openrouter:web_search", '{"q":"x"}')],
            [frag(1, "b", "lookup", '{"k":')],
            [frag(0, args=" ")],
            [frag(1, args="1}")],
        ],
        [["new"], ["new"], ["continuation"], ["exact-index"]],
        [
            ("a", "openrouter:web_search", '{"q":"x"}', "server", 0),
            ("b", "lookup", '{"k": 1}', "client", 3),
        ],
        [("late-fragment", 2, 1)],
        starts=[0, 1],
        landed=[[0], [1], [1], [1]],
        events={
            2: [],
            3: [("toolcall_start", 0, None), ("toolcall_delta", 0, '{"k": 1}')],
        },
        server_tools=OPENROUTER,
    ),
    *ek(
        "server-tools: a late fragment with a folded index continues another pending candidate",
        [
            [frag(0, "a", "openrouter:web_search", '{"q":"x"}')],
            [frag(1, "b", "lookup", '{"k":')],
            [frag(0, args=" ")],
            [frag(1, args="1}")],
        ],
        [["new"], ["new"], ["new"], ["exact-index"]],
        [
            ("a", "openrouter:web_search", '{"q":"x"}', "server", 0),
            ("b", "lookup", '{"k":1}', "client", 3),
            ("", "", " ", "client", END),
        ],
        [
            ("late-fragment", 2, 2),
            ("phantom-call", ANY, 2),
        ],
        starts=[0, 1, 1],
        server_tools=OPENROUTER,
    ),
    *adr(
        "server-tools: a late fragment with nothing pending is dropped",
        [[frag(0, "a", "f", "{}")], [frag(0, args=" ")]],
        [["new"], ["drop"]],
        [("a", "f", "{}", "client", 0)],
        [("dropped-fragment", 1, None), ("late-fragment", 1, None)],
        landed=[[0], [None]],
        events={1: []},
        server_tools=WEB,
    ),
    *ek(
        "server-tools: a late fragment with nothing pending is dropped",
        [[frag(0, "a", "f", "{}")], [frag(0, args=" ")]],
        [["new"], ["new"]],
        [("a", "f", "{}", "client", 0), ("", "", " ", "client", END)],
        [("late-fragment", 1, 1), ("phantom-call", ANY, 1)],
        server_tools=WEB,
    ),
    *both(
        "server-tools: a new candidate takes over an index that only a folded one held",
        [[frag(0, "a", "f", "{}")], [frag(0, "b", "g", '{"x":')], [frag(0, args="1}")]],
        [["new"], ["new"], ["exact-index"]],
        [("a", "f", "{}", "client", 0), ("b", "g", '{"x":1}', "client", 2)],
        [("late-fragment", 1, 1)],
        starts=[1, 1],
        landed=[[0], [1], [1]],
        events={2: [("toolcall_start", 1, None), ("toolcall_delta", 1, '{"x":1}')]},
        server_tools=WEB,
    ),
    *both(
        "server-tools: a new candidate takes over an id that only a folded one held",
        [
            [frag(id="a", name="f", args="{}")],
            [frag(id="a", name="g", args='{"y":')],
            [frag(id="a", args="2}")],
        ],
        [["new"], ["new"], ["exact-id"]],
        [("a", "f", "{}", "client", 0), ("a", "g", '{"y":2}', "client", 2)],
        [("late-fragment", 1, 1)],
        landed=[[0], [1], [1]],
        server_tools=WEB,
    ),
    *both(
        "server-tools: pending candidates fold at the end, in opening order",
        [[frag(0, "a", "f", '{"x":')], [frag(1, "b", None, "{}")]],
        [["new"], ["new"]],
        [("a", "f", '{"x":', "client", END), ("b", "", "{}", "client", END)],
        [("incomplete-arguments", END, 0), ("phantom-call", ANY, 1)],
        starts=[1, 1],
        events={
            0: [],
            1: [],
            4: [
                ("toolcall_start", 0, None),
                ("toolcall_delta", 0, '{"x":'),
                ("toolcall_start", 1, None),
                ("toolcall_delta", 1, "{}"),
                ("toolcall_end", 0, None),
                ("toolcall_end", 1, None),
                ("done", None, None),
            ],
        },
        server_tools=WEB,
    ),
    *both(
        "server-tools: a name that arrives after complete arguments folds the candidate then",
        [[frag(0, "a", None, "{}")], [frag(0, name="web_search")]],
        [["new"], ["exact-index"]],
        [("a", "web_search", "{}", "server", 1)],
        starts=[0],
        server_tools=WEB,
    ),
    *adr(
        "server-tools: a bare continuation goes to the pending candidate",
        [[frag(0, "a", "f", '{"x":')], [frag(args="1}")]],
        [["new"], ["continuation"]],
        [("a", "f", '{"x":1}', "client", 1)],
        server_tools=WEB,
    ),
    *ek(
        "server-tools: a bare continuation goes to the pending candidate",
        [[frag(0, "a", "f", '{"x":')], [frag(args="1}")]],
        [["new"], ["new"]],
        [("a", "f", '{"x":', "client", END), ("", "", "1}", "client", END)],
        [
            ("phantom-call", ANY, 1),
            ("incomplete-arguments", END, 0),
            ("invalid-arguments", 1, 1),
        ],
        server_tools=WEB,
    ),
    *adr(
        "server-tools: a candidate folded mid-chunk takes no later fragment of that chunk",
        [[frag(0, "a", "f", "{}"), frag(args=" ")]],
        [["new", "drop"]],
        [("a", "f", "{}", "client", 0)],
        [("dropped-fragment", 0, None)],
        server_tools=WEB,
    ),
    *both(
        "server-tools: an index naming a folded candidate, an id naming a pending one: exact-id",
        [[frag(0, "a", "f", "{}")], [frag(1, "b", "g", "{")], [frag(0, "b", args="}")]],
        [["new"], ["new"], ["exact-id"]],
        [("a", "f", "{}", "client", 0), ("b", "g", "{}", "client", 2)],
        [("late-fragment", 2, 1)],
        landed=[[0], [1], [1]],
        server_tools=WEB,
    ),
    *adr(
        "server-tools: a continuation skips a later candidate that folded already",
        [[frag(0, "a", "f", '{"x":')], [frag(1, "b", "g", "{}")], [frag(args="1}")]],
        [["new"], ["new"], ["continuation"]],
        [("a", "f", '{"x":1}', "client", 2), ("b", "g", "{}", "client", 1)],
        landed=[[0], [1], [0]],
        events={
            1: [("toolcall_start", 0, None), ("toolcall_delta", 0, "{}")],
            2: [("toolcall_start", 1, None), ("toolcall_delta", 1, '{"x":1}')],
        },
        server_tools=WEB,
    ),
]


def _anomaly_key(item: tuple[str, Any, Any]) -> tuple[str, int, Any]:
    code, step, block = item
    return (code, -1 if block is None else block, step if isinstance(step, int) else -1)


def check_row(row: Row) -> Trace:
    """Assemble the row's stream and compare everything the row states."""
    stream = tool_stream(row.chunks)
    trace = assemble(stream, row.options)
    check_schema(trace.to_json())
    end = len(row.chunks) + 2
    assert len(trace.steps) == end + 1
    steps = trace.steps[: len(row.chunks)]
    assert [[f.rule for f in step.fragments] for step in steps] == row.rules
    if row.landed is not None:
        assert [[f.block for f in step.fragments] for step in steps] == row.landed
    for step in steps:
        for fragment in step.fragments:
            assert (fragment.rule == "drop") == (fragment.block is None)
            assert fragment.reason, "every fragment says why its rule fired"

    got = []
    for block in trace.blocks:
        row_block: tuple = (block.id, block.name, block.text)
        if row.server_tools is not None:
            assert block.fold is not None, "every candidate has folded by the end"
            fold_step = END if block.fold.step == end else block.fold.step
            row_block += (block.fold.as_, fold_step)
        else:
            assert block.fold is None
        got.append(row_block)
    assert got == row.blocks

    if row.starts is not None:
        assert [len(block.start_steps) for block in trace.blocks] == row.starts
        json_blocks = trace.to_json()["blocks"]
        assert [block["starts"] for block in json_blocks] == row.starts

    for number, expected in row.events.items():
        events = [
            (e.type, e.contentIndex, e.delta)
            for e in trace.steps[number].events
            if e.type != "start"
        ]
        assert events == expected, f"events of step {number}"

    actual = sorted(
        ((a.code, a.step, a.block) for a in trace.anomalies if a.code in ANOMALY_CODES),
        key=_anomaly_key,
    )
    expected_anomalies = sorted(row.anomalies, key=_anomaly_key)
    assert [(c, b) for c, _, b in actual] == [(c, b) for c, _, b in expected_anomalies]
    for (_, step, _), (_, want, _) in zip(actual, expected_anomalies, strict=True):
        assert want is ANY or (want is END and step == end) or step == want
    return trace


def _rows(rows: list[Row]) -> list[Any]:
    return [pytest.param(row, id=f"{row.policy}: {row.desc}") for row in rows]


@pytest.mark.parametrize("row", _rows(CLIENT))
def test_client_path(row: Row) -> None:
    check_row(row)


@pytest.mark.parametrize("row", _rows(SERVER))
def test_server_tools_path(row: Row) -> None:
    check_row(row)
