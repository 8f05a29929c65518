"""The tool-call blocks of a stream: the registry the rules consult, and how a fragment lands.

On the client path every block is a content block from the moment it opens. On the
server-tools path blocks are *candidates*: they take fragments until they fold (a name and
arguments that parse as one complete JSON value), and only then become a server-tool call
or a client block. A freeform (`custom`) tool call gets its input wrapped as upstream does:
`{"input":"` once, the escaped text, `"}` when it ends.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from itertools import islice
from typing import Any

from tests.reference.trace import Block, Event, Fold, Fragment
from webapp.core.chunks import type_name
from webapp.core.delivery import Delivery
from webapp.core.diagnosis import explain, first_break
from webapp.core.jsoncheck import Completion, classify, dumps
from webapp.core.jsvalue import Keys, js_string, json_piece, map_key, read_keys, truthy
from webapp.core.options import Options
from webapp.core.rules import Candidate, Match, resolve, rules_for
from webapp.core.words import count, excerpt, number

Report = Callable[[str, int, "int | None", str], None]
"""Report an anomaly: code, step, block, message."""
_WHITESPACE = " \t\n\r"
Push = Callable[[Block, int], None]
"""Put a block into the content array at a step."""


class ToolCalls:
    """Tool-call blocks (or server-tools candidates) in opening order, and where keys point."""

    def __init__(self, options: Options, push: Push, report: Report) -> None:
        self.options = options
        self._rules = rules_for(options.policy)
        self._server = options.path == "server-tools"
        self._push = push
        self._report = report
        self.blocks: list[Block] = []
        self.rule_counts: Counter[str] = Counter()
        self._by_index: dict[object, Block] = {}
        self._by_id: dict[object, Block] = {}
        self._open: list[Block] = []
        self._completions: dict[Block, Completion] = {}
        """Whether each block's arguments are one complete JSON value (server-tools path: until
        it folds), fed piece by piece."""
        self._unsettled: dict[Block, None] = {}
        """Blocks still taking fragments whose arguments are not one complete JSON value, in
        opening order: where a continuation might have belonged instead."""
        self._freeform: dict[Block, bool] = {}
        """Blocks taking `custom.input` (freeform tools): whether their JSON text has opened."""

    # The registry, as the rules see it (webapp.core.rules.Lookup).

    def holder_of_index(self, index: Any) -> Candidate | None:
        """The block registered under this index, folded or not."""
        return self._by_index.get(map_key(index))

    def holder_of_id(self, call_id: Any) -> Candidate | None:
        """The block registered under this id, folded or not."""
        return self._by_id.get(map_key(call_id))

    def latest_open(self) -> Candidate | None:
        """The most recently opened block that still takes fragments."""
        while self._open and self._open[-1].fold is not None:
            self._open.pop()
        return self._open[-1] if self._open else None

    def takes_fragments(self, block: Candidate) -> bool:
        """False for a folded candidate."""
        return block.folded_step is None

    @property
    def server_path(self) -> bool:
        """Whether blocks are server-tools candidates that fold."""
        return self._server

    # Fragments.

    def fragments(
        self, step: int, delta: dict[str, Any], events: list[Event]
    ) -> tuple[Fragment, ...]:
        """Resolve every entry of `delta.tool_calls`, in array order."""
        calls = delta.get("tool_calls")
        if not truthy(calls):
            return ()
        if not isinstance(calls, list):
            self._report(
                "malformed-delta", step, None,
                f"delta.tool_calls is {type_name(calls)}, not an array: ignored "
                "(upstream would fail or misread it)",
            )  # fmt: skip
            return ()
        return tuple(
            self._fragment(step, position, raw, events) for position, raw in enumerate(calls)
        )

    def _fragment(self, step: int, position: int, raw: Any, events: list[Event]) -> Fragment:
        """Resolve one fragment: the heart of the tool.

        Its keys are read with JavaScript truthiness; the first rule of the table that applies
        names its block (`webapp.core.rules.resolve`); `new` opens one, the other rules register the
        fragment's keys on the block they found; then its text lands there. Anything odd on the
        way (keys of the wrong type, a dropped fragment with text, a late fragment on the
        server-tools path) is reported as an anomaly at this step.
        """
        keys = read_keys(raw if isinstance(raw, dict) else {})
        oddities = keys.oddities
        if not isinstance(raw, dict):
            oddities = (
                f"the fragment is {type_name(raw)}, not an object: read as one with no keys"
                + (" (upstream's client fails on it with a TypeError)" if raw is None else ""),
            )
        match = resolve(keys, self, self._rules)
        self.rule_counts[match.rule] += 1
        late = self._server and self._names_folded(keys)
        if oddities:
            self._report("malformed-fragment", step, None, "; ".join(oddities))
        if match.rule == "drop":
            if keys.arguments:
                self._report(
                    "dropped-fragment", step, None,
                    f"fragment {position} carried arguments {excerpt(keys.arguments)} and was "
                    "dropped: no block was open to continue",
                )  # fmt: skip
            block = None
        elif match.rule == "new":
            block = self._open_block(step, keys, events)
        else:
            block = _block(match)
            if match.rule == "continuation":
                match = match._replace(reason=self._weigh_continuation(step, block, match.reason))
            self._register(step, block, keys, match)
        appended = "" if block is None else self._land(step, block, keys, events)
        if late:
            self._report(
                "late-fragment", step, None if block is None else block.number,
                f"fragment {position} names a candidate that has already folded; it was "
                f"resolved as if nothing matched ({match.rule})",
            )  # fmt: skip
        return Fragment(
            position,
            keys.raw_index if isinstance(raw, dict) else None,
            keys.raw_id if isinstance(raw, dict) else None,
            keys.raw_name if isinstance(raw, dict) else None,
            keys.raw_arguments if isinstance(raw, dict) else None,
            match.rule,
            None if block is None else block.number,
            match.reason,
            appended,
            late,
            oddities,
        )

    def _weigh_continuation(self, step: int, block: Block, reason: str) -> str:
        """Name the blocks a continuation could also have meant; report the guess if any.

        Spec section 7: ambiguous when another block (still taking fragments) holds arguments
        that are not one complete JSON value. Costs O(1) however many blocks are open.
        """
        waiting = len(self._unsettled) - (block in self._unsettled)
        if waiting == 0:
            return f"{reason}; no other block was waiting for arguments"
        shown = [other for other in islice(self._unsettled, 4) if other is not block][:3]
        others = "; ".join(_waiting_block(other) for other in shown)
        if waiting > len(shown):
            others += f"; and {count(waiting - len(shown), 'other block')}"
        self._report(
            "ambiguous-continuation", step, block.number,
            f"a continuation went to block #{block.number} {_label(block)}, the most recently "
            f"opened, while {others}: decision 0019 guessed which call it belongs to",
        )  # fmt: skip
        return f"{reason}; {others}"

    def _names_folded(self, keys: Keys) -> bool:
        holders = []
        if keys.index is not None:
            holders.append(self._by_index.get(map_key(keys.index)))
        if keys.id is not None:
            holders.append(self._by_id.get(map_key(keys.id)))
        return any(holder is not None and holder.fold is not None for holder in holders)

    def _open_block(self, step: int, keys: Keys, events: list[Event]) -> Block:
        block = Block("toolCall", len(self.blocks), step)
        self.blocks.append(block)
        self._open.append(block)
        if keys.id is not None:
            block.ids.append((step, keys.id))
            self._alias(step, block, keys.id)
        if keys.raw_name is not None and keys.raw_name != "":
            block.names.append((step, keys.raw_name))  # upstream opens with `name ?? ""`
        if keys.index is not None:
            self._by_index[map_key(keys.index)] = block
            block.indexes.append((step, keys.index))
        if keys.custom_only:
            self._freeform[block] = False
            block.custom_input = []
        self._completions[block] = Completion()
        self._unsettled[block] = None
        if not self._server:
            self._push(block, step)
            block.start_steps.append(step)
            events.append(Event("toolcall_start", block.content_index))
        return block

    def _register(self, step: int, block: Block, keys: Keys, match: Match) -> None:
        """Record what a fragment that matched an existing block says about it (spec section 2).

        - An index counts only for exact-index/exact-id, and only while the block has none:
          exact-id keeps the block's first index (a later index is not an alias).
          A continuation registers nothing.
        - An id becomes an alias (the latest registration wins, as upstream's `Map.set`); the
          block's own id is set only while it is empty. A different id on an exact-index match
          is an `id-conflict`.
        - A name is set only while the block's is empty; a different one is a `name-conflict`.
        """
        if keys.custom_only and block.custom_input is None:
            self._freeform[block] = False  # upstream switches it to custom input, once
            block.custom_input = []
        if match.rule != "continuation" and keys.index is not None and not block.indexes:
            self._by_index[map_key(keys.index)] = block
            block.indexes.append((step, keys.index))
        if keys.id is not None:
            if match.rule == "exact-index" and truthy(block.id) and block.id != keys.id:
                self._report(
                    "id-conflict", step, block.number,
                    f"index {js_string(keys.index)} names block #{block.number} (id "
                    f"{js_string(block.id)}) but the fragment carries id {js_string(keys.id)}; "
                    "that id now points at this block too",
                )  # fmt: skip
            self._alias(step, block, keys.id)
            if not truthy(block.id):
                block.ids.append((step, keys.id))
        if keys.name is not None:
            if not truthy(block.name):
                block.names.append((step, keys.name))
            elif keys.name != block.name:
                self._report(
                    "name-conflict", step, block.number,
                    f"block #{block.number} is named {js_string(block.name)}; a fragment "
                    f"names it {js_string(keys.name)}: the first name is kept",
                )  # fmt: skip

    def _alias(self, step: int, block: Block, call_id: Any) -> None:
        self._by_id[map_key(call_id)] = block
        block.aliases.append((step, call_id))

    def _land(self, step: int, block: Block, keys: Keys, events: list[Event]) -> str:
        """Append the fragment's text to the block; returns the text appended."""
        piece = keys.arguments
        if block in self._freeform:
            piece = self._freeform_piece(block, keys.custom_input, closing=False)
            if block.custom_input is not None and keys.custom_input:
                block.custom_input.append(keys.custom_input)
        self._append(step, block, piece, events)
        server_ready = self._server and self._completions[block].complete
        if server_ready and truthy(block.name):
            self._fold(step, block, events)
        return piece

    def _append(self, step: int, block: Block, piece: str, events: list[Event]) -> None:
        if piece:
            block.append(step, piece)
            completion = self._completions.get(block)
            if completion is not None:
                if completion.feed(piece):
                    self._unsettled.pop(block, None)
                else:
                    self._unsettled[block] = None
        if not self._server:
            events.append(Event("toolcall_delta", block.content_index, delta=piece))

    def _freeform_piece(self, block: Block, text: str, *, closing: bool) -> str:
        """Upstream's grammar-tool input as JSON text: `{"input":"` once, escaped text, `"}`."""
        if not text and not closing:
            return ""
        opening = "" if self._freeform[block] else '{"input":"'
        self._freeform[block] = True
        return opening + json_piece(text) + ('"}' if closing else "")

    def _fold(self, step: int, block: Block, events: list[Event]) -> None:
        server = self.options.is_server_tool(block.name)
        block.fold = Fold(step, "server" if server else "client")
        self._completions.pop(block, None)
        self._unsettled.pop(block, None)
        if server:
            return
        self._push(block, step)
        block.start_steps.append(step)
        events.append(Event("toolcall_start", block.content_index))
        events.append(Event("toolcall_delta", block.content_index, delta=block.text))

    # The end of the stream.

    def fold_pending(self, step: int, events: list[Event]) -> None:
        """Server-tools path: every candidate still pending folds, in opening order."""
        if not self._server:
            return
        for block in self.blocks:
            if block.fold is None:
                self.close(step, block, events)
                self._fold(step, block, events)

    def close(self, step: int, block: Block, events: list[Event]) -> None:
        """A freeform block's JSON closes (`"}`) before it ends or folds, as upstream's does."""
        if block.kind == "toolCall" and block in self._freeform:
            closing = self._freeform_piece(block, "", closing=True)
            del self._freeform[block]  # closed once: closing again adds nothing
            self._append(step, block, closing, events)

    def final_anomalies(self, end: int) -> None:
        """Judged on the final blocks: phantoms, and arguments that are not a JSON object.

        Broken arguments are reported at the step that broke them (spec section 7), found by
        bisecting the block's pieces; the other verdicts belong to the `end` step.
        """
        for block in self.blocks:
            if block.is_phantom:
                self._report(
                    "phantom-call", block.opened_step, block.number,
                    f"block #{block.number} ends with no name: a phantom call"
                    + (f" holding {excerpt(block.text)}" if block.text else ""),
                )  # fmt: skip
            self._judge_arguments(end, block)

    def _judge_arguments(self, end: int, block: Block) -> None:
        if block.custom_input is not None:
            return  # freeform input is free text: the tool gets {"input": ...} whatever it is
        text = block.text
        label = f"block #{block.number} {_label(block)}"
        if not text.strip(_WHITESPACE):
            if truthy(block.name):
                what = "no arguments" if not text else "arguments that are only whitespace"
                self._report(
                    "empty-arguments", end, block.number,
                    f"{label} ended with {what}: {_label(block)} would be called with {{}}",
                )  # fmt: skip
            return
        parsed = classify(text)
        if parsed.state == "complete":
            if not isinstance(parsed.value, dict):
                self._report(
                    "non-object-arguments", end, block.number,
                    f"{label}'s arguments parse to {type_name(parsed.value)}, not an object: "
                    f"{_label(block)} would be called with {{}}",
                )  # fmt: skip
        elif parsed.state == "partial":
            self._report(
                "incomplete-arguments", end, block.number,
                f"{label}'s arguments never finished: {excerpt(text[-40:], 40)} is the start of "
                f"a JSON value, not a whole one; {_delivered_words(block)}",
            )  # fmt: skip
        else:
            self._report_break(block, label)

    def _report_break(self, block: Block, label: str) -> None:
        piece = first_break(block.pieces)
        if piece is None:  # the whole text is a prefix after all: cannot happen once invalid
            return
        broken = "".join(block.pieces[: piece + 1])
        cause = explain(broken)
        step = block.piece_steps[piece]
        self._report(
            "invalid-arguments", step, block.number,
            f"{label}'s arguments stopped being JSON at step {number(step)}: {cause.meaning}. "
            f"Around the break: {cause.around(broken)}; {_delivered_words(block)}. "
            f"Parser: {cause.detail}",
        )  # fmt: skip


def _label(block: Block) -> str:
    """A block's name as of now, or `(no name)`."""
    return js_string(block.name) if truthy(block.name) else "(no name)"


def _waiting_block(block: Block) -> str:
    """`block #0 get_weather was also open, its arguments empty`."""
    text = block.text
    if not text:
        state = "its arguments empty"
    elif len(text) <= 30:
        state = f"its arguments {excerpt(text)} not yet complete"
    else:
        state = f"its arguments not yet complete (...{excerpt(text[-20:])})"
    return f"block #{block.number} {_label(block)} was also open, {state}"


def _delivered_words(block: Block) -> str:
    delivered = block.delivered
    name = _label(block)
    if delivered.error is not None:
        return f"upstream's client would call {name} with {{}}"
    return f"upstream's client repairs it and would call {name} with {_json_excerpt(delivered)}"


def _json_excerpt(delivered: Delivery) -> str:
    return excerpt(dumps(delivered.arguments).decode("utf-8", "replace"), 60)


def _block(match: Match) -> Block:
    assert isinstance(match.block, Block)
    return match.block
