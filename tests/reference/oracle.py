"""An oracle of the assembly rules as /work/shared/spec/assembly.md states them (sections 2-5,
and the anomalies of sections 6 and 7 that follow from them), written from the spec text.

Slow and plain on purpose: one object per fragment and per block, the arguments as one string,
every check done again from scratch when it is needed, nothing shared with `webapp.core` but
the `Record` type it reads. It is the second opinion the real assembler is checked against
(`test_oracle.py`), not a copy of it.

Its domain is what the spec talks about: fragments whose index is an integer, null, absent or a
string, whose id and name are strings, null or absent, whose arguments are a string, null or
absent; deltas with string `content` and reasoning fields; chunks, `[DONE]`, records that are not
JSON, and provider errors (`{"error": {"message": ...}}`). Where the spec leaves a detail open,
the choice is the one named below (`# spec:` comments point at the section that decides).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from webapp.core.records import Record

STOP_REASONS = {
    "stop": "stop",
    "end": "stop",
    "length": "length",
    "tool_calls": "toolUse",
    "function_call": "toolUse",
}
"""Section 5: what `done` says for each finish_reason; any other gives `error`."""
REASONING = ("reasoning_content", "reasoning", "reasoning_text")


# Strict JSON: complete, a prefix of some valid text, or neither (and where it broke).


class _Broken(Exception):
    def __init__(self, at: int) -> None:
        self.at = at


class _End(Exception):
    """The text ended inside a value: it may still become valid."""


def json_state(text: str) -> str:
    """ "complete" (one JSON value, strictly), "partial" (a prefix of one), or "invalid"."""
    try:
        end = _value(text, _space(text, 0))
    except _End:
        return "partial"
    except _Broken:
        return "invalid"
    return "complete" if _space(text, end) == len(text) else "invalid"


def _space(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t\n\r":
        at += 1
    return at


def _peek(text: str, at: int) -> str:
    if at >= len(text):
        raise _End
    return text[at]


def _value(text: str, at: int) -> int:
    """Parse one value from `at`; returns where it ends."""
    char = _peek(text, at)
    if char == "{":
        return _container(text, at, "}", member=True)
    if char == "[":
        return _container(text, at, "]", member=False)
    if char == '"':
        return _string(text, at)
    for word in ("true", "false", "null"):
        if char == word[0]:
            for k, expected in enumerate(word):
                if _peek(text, at + k) != expected:
                    raise _Broken(at + k)
            return at + len(word)
    if char == "-" or char.isdigit():
        return _number(text, at)
    raise _Broken(at)


def _container(text: str, at: int, close: str, *, member: bool) -> int:
    at = _space(text, at + 1)
    if _peek(text, at) == close:
        return at + 1
    while True:
        if member:
            if _peek(text, at) != '"':
                raise _Broken(at)
            at = _space(text, _string(text, at))
            if _peek(text, at) != ":":
                raise _Broken(at)
            at = _space(text, at + 1)
        at = _space(text, _value(text, at))
        char = _peek(text, at)
        if char == close:
            return at + 1
        if char != ",":
            raise _Broken(at)
        at = _space(text, at + 1)


def _string(text: str, at: int) -> int:
    at += 1
    while True:
        char = _peek(text, at)
        if char == '"':
            return at + 1
        if char == "\\":
            escape = _peek(text, at + 1)
            if escape == "u":
                for k in range(4):
                    if _peek(text, at + 2 + k) not in "0123456789abcdefABCDEF":
                        raise _Broken(at + 2 + k)
                at += 6
                continue
            if escape not in '"\\/bfnrt':
                raise _Broken(at + 1)
            at += 2
            continue
        if ord(char) < 0x20:
            raise _Broken(at)
        at += 1


def _number(text: str, at: int) -> int:
    digits = "0123456789"
    if text[at] == "-":
        at += 1
    if _peek(text, at) == "0":
        at += 1
    elif _peek(text, at) in digits:
        while at < len(text) and text[at] in digits:
            at += 1
    else:
        raise _Broken(at)
    if at < len(text) and text[at] == ".":
        at += 1
        if _peek(text, at) not in digits:
            raise _Broken(at)
        while at < len(text) and text[at] in digits:
            at += 1
    if at < len(text) and text[at] in "eE":
        at += 1
        if _peek(text, at) in "+-":
            at += 1
        if _peek(text, at) not in digits:
            raise _Broken(at)
        while at < len(text) and text[at] in digits:
            at += 1
    return at


def parses_to(text: str) -> Any:
    """The value of a complete JSON text (NaN and Infinity are not JSON)."""

    def refuse(name: str) -> Any:
        raise ValueError(name)

    return json.loads(text, parse_constant=refuse)


# The assembly.


@dataclass
class Block:
    """A tool-call block (client path) or candidate (server-tools path)."""

    number: int
    id: Any
    name: Any
    arguments: str = ""
    content_index: int | None = None
    starts: int = 0
    folded: tuple[int, str] | None = None
    """Section 4: (step, "server" | "client") once folded."""
    broke_at: int | None = None
    """The step after whose fragment the arguments stopped being a JSON prefix."""
    indexes: list[int] = field(default_factory=list)
    """The indexes registered for it."""

    def snapshot(self) -> tuple[Any, ...]:
        return (
            self.number,
            self.content_index,
            self.id,
            self.name,
            self.arguments,
            self.starts,
            self.folded,
        )


@dataclass
class Step:
    fragments: list[tuple[str, int | None]] = field(default_factory=list)
    """(rule, block) per fragment, in array order."""
    events: list[dict[str, Any]] = field(default_factory=list)
    assembled: bool = True
    blocks: list[tuple[Any, ...]] = field(default_factory=list)
    """Every tool-call block's snapshot at the end of the step."""


@dataclass
class Result:
    steps: list[Step]
    blocks: list[Block]
    anomalies: set[tuple[str, int, int | None]]
    """(code, step, block) for the codes sections 6 and 7 define (block None where it names
    none); phantom calls with no step (section 6 gives none): (code, -1, block)."""


def counts_index(value: Any) -> bool:
    """Section 1: an index counts only when it is an integer (0 counts)."""
    return type(value) is int


def counts_text(value: Any) -> bool:
    """Section 1: an id or a name counts only when it is a non-empty string."""
    return type(value) is str and value != ""


class Oracle:
    def __init__(
        self, policy: str, server_tools: tuple[str, ...] | None = None, choice: int = 0
    ) -> None:
        self.adr = policy == "adr-0019"
        self.server = server_tools is not None
        self.server_tools = server_tools or ()
        self.choice = choice
        self.blocks: list[Block] = []
        self.by_index: dict[int, Block] = {}
        self.by_id: dict[str, Block] = {}
        self.content: list[Any] = []  # "text", "thinking" or a Block, in creation order
        self.text = ""
        self.thinking = ""
        self.finish: str | None = None
        self.stopped: str | None = None  # "done" or "error"
        self.error: str | None = None
        self.seen_choices: set[Any] = set()
        self.unassembled: list[int] = []
        self.anomalies: set[tuple[str, int, int | None]] = set()
        self.steps: list[Step] = []

    # Section 2-4: which block a fragment lands on.

    def takes_fragments(self, block: Block) -> bool:
        return block.folded is None  # section 4: folded candidates take no part

    def resolve(self, index: Any, call_id: Any, name: Any) -> tuple[str, Block | None]:
        if index is not None:  # rule 1
            block = self.by_index.get(index)
            if block is not None and self.takes_fragments(block):
                return "exact-index", block
        if call_id is not None:  # rule 2
            block = self.by_id.get(call_id)
            if block is not None and self.takes_fragments(block):
                return "exact-id", block
        if self.adr and name is None and call_id is None:  # rule 3, whatever the index
            open_blocks = [b for b in self.blocks if self.takes_fragments(b)]
            if open_blocks:
                return "continuation", open_blocks[-1]  # the most recently opened
            return "drop", None
        return "new", None  # rule 4 (exact-key: a fragment that matches nothing)

    def fragment(self, step: int, raw: dict[str, Any], out: Step) -> None:
        function = raw.get("function") or {}
        index = raw.get("index") if counts_index(raw.get("index")) else None
        call_id = raw.get("id") if counts_text(raw.get("id")) else None
        name = function.get("name") if counts_text(function.get("name")) else None
        arguments = function.get("arguments")
        arguments = "" if arguments is None else arguments
        late = self.server and any(
            holder is not None and holder.folded is not None
            for holder in (self.by_index.get(index), self.by_id.get(call_id))  # type: ignore[arg-type]
        )
        rule, block = self.resolve(index, call_id, name)
        if rule == "drop":
            if arguments:
                self.anomalies.add(("dropped-fragment", step, None))
            out.fragments.append((rule, None))
            if late:
                self.anomalies.add(("late-fragment", step, None))
            return
        if rule == "new":
            block = Block(len(self.blocks), call_id or "", name or "")
            self.blocks.append(block)
            if index is not None:
                self.by_index[index] = block
                block.indexes.append(index)
            if call_id is not None:
                self.by_id[call_id] = block
            if not self.server:
                self.start(block, out)
        else:
            assert block is not None
            if rule == "continuation":
                self.weigh(step, block)
            if call_id is not None:
                if rule == "exact-index" and block.id and block.id != call_id:
                    self.anomalies.add(("id-conflict", step, block.number))
                self.by_id[call_id] = block  # the latest registration wins
                if not block.id:
                    block.id = call_id
            if rule != "continuation" and index is not None and not block.indexes:
                self.by_index[index] = block  # rules 1 and 2 only, and only the first index
                block.indexes.append(index)
            if name is not None:
                if not block.name:
                    block.name = name
                elif name != block.name:
                    self.anomalies.add(("name-conflict", step, block.number))
        out.fragments.append((rule, block.number))
        block.arguments += arguments
        if block.broke_at is None and json_state(block.arguments) == "invalid":
            block.broke_at = step
        if not self.server:
            out.events.append(
                {
                    "type": "toolcall_delta",
                    "contentIndex": block.content_index,
                    "delta": arguments,
                }
            )
        elif block.name and json_state(block.arguments) == "complete":
            self.fold(step, block, out)
        if late:
            self.anomalies.add(("late-fragment", step, block.number))

    def weigh(self, step: int, block: Block) -> None:
        """Section 7: a continuation is ambiguous when another block that still takes
        fragments holds arguments that are not one complete JSON value."""
        others = [b for b in self.blocks if b is not block and self.takes_fragments(b)]
        if any(json_state(b.arguments) != "complete" for b in others):
            self.anomalies.add(("ambiguous-continuation", step, block.number))

    def start(self, block: Block, out: Step) -> None:
        block.content_index = len(self.content)
        self.content.append(block)
        block.starts += 1
        out.events.append({"type": "toolcall_start", "contentIndex": block.content_index})

    def fold(self, step: int, block: Block, out: Step) -> None:
        """Section 4: a server tool's candidate becomes a server-tool call (no events);
        any other a client block: `toolcall_start`, then one delta with all its arguments."""
        server = block.name != "" and any(
            block.name.startswith(tool[:-1]) if tool.endswith("*") else block.name == tool
            for tool in self.server_tools
        )
        block.folded = (step, "server" if server else "client")
        if not server:
            self.start(block, out)
            out.events.append(
                {
                    "type": "toolcall_delta",
                    "contentIndex": block.content_index,
                    "delta": block.arguments,
                }
            )

    # Section 5: text, thinking, ends.

    def chunk(self, step: int, value: Any, out: Step) -> None:
        if isinstance(value, dict) and value.get("error"):
            self.stopped, self.error = "error", value["error"]["message"]
            self.anomalies.add(("provider-error", step, None))
            return
        choices = value.get("choices") if isinstance(value, dict) else None
        if not isinstance(choices, list):
            return
        chosen = None
        others = []
        for position, item in enumerate(choices):
            index = item.get("index", position)
            if index == self.choice and chosen is None:
                chosen = item
            else:
                others.append(index)
        if any(index not in self.seen_choices for index in others):
            self.anomalies.add(("other-choices", step, None))
            self.seen_choices.update(others)
        if chosen is None:
            return
        if chosen.get("finish_reason"):
            self.finish = chosen["finish_reason"]
        delta = chosen.get("delta")
        if not isinstance(delta, dict):
            return
        reasoning = next((delta[k] for k in REASONING if delta.get(k)), None)
        if reasoning:
            self.grow("thinking", reasoning, out)
        if delta.get("content"):
            self.grow("text", delta["content"], out)
        for raw in delta.get("tool_calls") or []:
            self.fragment(step, raw, out)

    def grow(self, kind: str, text: str, out: Step) -> None:
        if kind not in self.content:
            self.content.append(kind)
            out.events.append({"type": f"{kind}_start", "contentIndex": self.content.index(kind)})
        if kind == "text":
            self.text += text
        else:
            self.thinking += text
        out.events.append(
            {"type": f"{kind}_delta", "contentIndex": self.content.index(kind), "delta": text}
        )

    def record(self, step: int, record: Record) -> None:
        out = Step()
        self.steps.append(out)
        if step == 0:
            out.events.append({"type": "start"})
        if self.stopped is not None:  # section 6: listed, not assembled
            out.assembled = False
            self.unassembled.append(step)
        elif record.kind == "invalid":
            self.anomalies.add(("invalid-chunk", step, None))
        elif record.kind == "done":
            self.stopped = "done"
        else:
            self.chunk(step, record.value, out)
        out.blocks = [block.snapshot() for block in self.blocks]

    def end(self, step: int) -> None:
        out = Step()
        self.steps.append(out)
        if step == 0:
            out.events.append({"type": "start"})
        if self.stopped == "error":  # section 5: the error alone
            out.events.append({"type": "error", "reason": "error"})
        else:
            if self.server:  # section 4: every pending candidate folds, in opening order
                for block in self.blocks:
                    if block.folded is None:
                        self.fold(step, block, out)
            for item in self.content:
                if item in ("text", "thinking"):
                    out.events.append(
                        {
                            "type": f"{item}_end",
                            "contentIndex": self.content.index(item),
                            "content": self.text if item == "text" else self.thinking,
                        }
                    )
                else:
                    out.events.append(
                        {
                            "type": "toolcall_end",
                            "contentIndex": item.content_index,
                            "content": item.arguments,
                        }
                    )
            if self.finish is None:
                self.anomalies.add(("missing-finish-reason", step, None))
            reason = STOP_REASONS.get(self.finish) if isinstance(self.finish, str) else None
            out.events.append(
                {"type": "done", "reason": reason}
                if reason
                else {"type": "error", "reason": "error"}
            )
        if self.stopped == "done" and self.unassembled:
            self.anomalies.add(("after-done", self.unassembled[0], None))
        for block in self.blocks:
            self.final(step, block)
        out.blocks = [block.snapshot() for block in self.blocks]

    def final(self, end: int, block: Block) -> None:
        """Sections 6 and 7 on a final block."""
        server_call = block.folded is not None and block.folded[1] == "server"
        if not server_call and not block.name:
            self.anomalies.add(("phantom-call", -1, block.number))
        text = block.arguments
        if not text.strip(" \t\n\r"):  # spec: "" (whitespace alone counts as none too)
            if block.name:
                self.anomalies.add(("empty-arguments", end, block.number))
            return
        state = json_state(text)
        if state == "invalid":
            self.anomalies.add(("invalid-arguments", block.broke_at, block.number))  # type: ignore[arg-type]
        elif state == "partial":
            self.anomalies.add(("incomplete-arguments", end, block.number))
        elif not isinstance(parses_to(text), dict):
            self.anomalies.add(("non-object-arguments", end, block.number))


def run(
    records: list[Record],
    policy: str,
    server_tools: tuple[str, ...] | None = None,
    choice: int = 0,
) -> Result:
    """Assemble `records`; `server_tools` None for the client path."""
    oracle = Oracle(policy, server_tools, choice)
    for step, record in enumerate(records):
        oracle.record(step, record)
    oracle.end(len(records))
    return Result(oracle.steps, oracle.blocks, oracle.anomalies)
