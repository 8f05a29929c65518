"""The tool-call blocks of a stream: the registry the rules consult, and what a fragment does to
the block it lands on.

On the client path every block is a content block from the moment it opens. On the
server-tools path blocks are *candidates*: they take fragments until they fold (a name and
arguments that parse as one complete JSON value), and only then become a server-tool call
or a client block. A freeform (`custom`) tool call gets its input wrapped as upstream does:
`{"input":"` once, the escaped text, `"}` when it ends.

This module keeps blocks and registries only; the assembler (`webapp.core.assembler`) decides
each fragment's rule (`webapp.core.rules.decide`, reading `by_index`, `by_id` and
`latest_open` here), calls `open`, `register` and `land`, and writes the trace's rows and
events from what they return.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterator
from itertools import islice
from typing import Any

from webapp.core.blocks import Block, Fold, added
from webapp.core.jsoncheck import Completion
from webapp.core.jsvalue import index_key, js_string, json_piece, map_key, truthy
from webapp.core.options import Options
from webapp.core.rules import APPENDS, EXACT_INDEX, RULE_EFFECTS, rules_for
from webapp.core.words import count, excerpt

Report = Callable[[str, int, "int | None", str], None]
"""Report an anomaly: code, step, block, message."""


class ToolCalls:
    """Tool-call blocks (or server-tools candidates) in opening order, and where keys point."""

    def __init__(self, options: Options, report: Report) -> None:
        self.options = options
        self.adr = "continuation" in {rule.name for rule in rules_for(options.policy)}
        """Whether the policy has continuation and drop (`webapp.core.rules.decide`)."""
        self.server_path = options.path == "server-tools"
        self.weighing = self.adr and not self.server_path
        """Whether a continuation weighs the other blocks' arguments (client path, adr-0019):
        only then are they followed on the client path (`_completions`, `_unsettled`)."""
        self._report = report
        self.blocks: list[Block] = []
        self.by_index: dict[object, Block] = {}
        """Blocks by index (`jsvalue.index_key`): the latest registration wins, as upstream."""
        self.by_id: dict[object, Block] = {}
        """Blocks by id (`jsvalue.map_key`)."""
        self._open: list[Block] = []
        self._completions: dict[Block, Completion] = {}
        """Whether each block's arguments are one complete JSON value (server-tools path: until
        it folds), fed piece by piece."""
        self._unsettled: dict[Block, None] = {}
        """Blocks still taking fragments whose arguments are not one complete JSON value, in
        the order they last became so: where a continuation might have belonged instead."""
        self._stale: list[Block] = []
        """Client path: the pieces appended since `_unsettled` was last brought up to date, in
        order, as runs: each run's block here, the place of its first piece among the block's
        in `_stale_firsts` (two columns, not a tuple a run: 1,000 interleaved calls make a run
        of every piece); a run ends where the next one starts. Only a continuation reads
        `_unsettled`, and only for blocks other than its own, so their completions are fed
        when one asks (`waiting`), not at every piece."""
        self._stale_firsts = array("q")
        self._stale_last: Block | None = None
        """The block of the latest run."""
        self.freeform: dict[Block, bool] = {}
        """Blocks taking `custom.input` (freeform tools): whether their JSON text has opened."""

    def detach(self) -> None:
        """Forget the assembler's callback once the stream has ended.

        It is a bound method, so it makes a cycle (assembler -> tool calls -> assembler) that
        would keep every block and anomaly alive until the cyclic collector's next full pass;
        without it a finished trace is freed as soon as nothing refers to it.
        """
        self._report = _finished

    def latest_open(self) -> Block | None:
        """The most recently opened block that still takes fragments."""
        while self._open and self._open[-1].fold is not None:
            self._open.pop()
        return self._open[-1] if self._open else None

    def names_folded(self, index: Any, call_id: Any) -> bool:
        """Server-tools path: whether a fragment's index or id (those that count) names a
        folded candidate."""
        holders = []
        if index is not None:
            holders.append(self.by_index.get(index_key(index)))
        if call_id is not None:
            holders.append(self.by_id.get(map_key(call_id)))
        return any(holder is not None and holder.fold is not None for holder in holders)

    # What a fragment does to its block.

    def open(self, step: int, index: Any, call_id: Any, raw_name: Any, custom_only: bool) -> Block:
        """Rule `new`: a block opens, registered under the fragment's index and id (those that
        count), named `raw_name` (the name as read, "" or not) unless that is null or "".

        On the client path it is a content block from now on: the assembler puts it into the
        content array and fires `toolcall_start`.
        """
        block = Block("toolCall", len(self.blocks), step)
        self.blocks.append(block)
        self._open.append(block)
        if call_id is not None:
            block.ids = added(block.ids, (step, call_id))
            self._alias(step, block, call_id)
        if raw_name is not None and raw_name != "":
            block.names = added(block.names, (step, raw_name))  # upstream: `name ?? ""`
        if index is not None:
            self.by_index[index_key(index)] = block
            block.indexes = added(block.indexes, (step, index))
        if custom_only:
            self.freeform[block] = False
            block.custom_input = []
        if self.server_path or self.weighing:
            self.settle()  # a block joins `_unsettled` after what came before it
            self._completions[block] = Completion()
            self._unsettled[block] = None
        return block

    def register(
        self,
        step: int,
        block: Block,
        rule: int,
        index: Any,
        call_id: Any,
        name: Any,
        custom_only: bool,
    ) -> None:
        """Record what a fragment that matched an existing block says about it (spec section 2).

        - An index counts only for exact-index/exact-id, and only while the block has none:
          exact-id keeps the block's first index (a later index is not an alias).
          A continuation registers nothing.
        - An id becomes an alias (the latest registration wins, as upstream's `Map.set`); the
          block's own id is set only while it is empty. A different id on an exact-index match
          is an `id-conflict`.
        - A name is set only while the block's is empty; a different one is a `name-conflict`.
        """
        if custom_only and block.custom_input is None:
            self.freeform[block] = False  # upstream switches it to custom input, once
            block.custom_input = []
        if RULE_EFFECTS[rule] != APPENDS and index is not None and not block.indexes:
            self.by_index[index_key(index)] = block
            block.indexes = added(block.indexes, (step, index))
        if call_id is not None:
            if rule == EXACT_INDEX and truthy(block.id) and block.id != call_id:
                self._report(
                    "id-conflict", step, block.number,
                    f"index {js_string(index)} names block #{block.number} (id "
                    f"{js_string(block.id)}) but the fragment carries id {js_string(call_id)}; "
                    "that id now points at this block too",
                )  # fmt: skip
            self._alias(step, block, call_id)
            if not truthy(block.id):
                block.ids = added(block.ids, (step, call_id))
        if name is not None:
            if not truthy(block.name):
                block.names = added(block.names, (step, name))
            elif name != block.name:
                self._report(
                    "name-conflict", step, block.number,
                    f"block #{block.number} is named {js_string(block.name)}; a fragment "
                    f"names it {js_string(name)}: the first name is kept",
                )  # fmt: skip

    def _alias(self, step: int, block: Block, call_id: Any) -> None:
        self.by_id[map_key(call_id)] = block
        block.aliases = added(block.aliases, (step, call_id))

    def land(self, step: int, block: Block, text: str, custom_input: str) -> tuple[str, bool]:
        """Append a fragment's text (its `arguments`; `custom.input` for a freeform block) to
        the block: the text appended, and whether that folded a candidate into a client block
        (the assembler then starts it, with all its text)."""
        piece = text
        if self.freeform and block in self.freeform:
            piece = self._freeform_piece(block, custom_input, closing=False)
            if block.custom_input is not None and custom_input:
                block.custom_input.append(custom_input)
        self.append(step, block, piece)
        if self.server_path and self._completions[block].complete and truthy(block.name):
            return piece, self._fold(step, block)
        return piece, False

    def append(self, step: int, block: Block, piece: str) -> None:
        """Append a piece of argument text (none when it is empty)."""
        if not piece:
            return
        block.pieces.append(piece)
        block.piece_steps.append(step)
        if self.server_path:
            self._settle_piece(block, piece)
        elif self.weighing and block is not self._stale_last:
            self._stale.append(block)
            self._stale_firsts.append(len(block.pieces) - 1)
            self._stale_last = block

    def weigh(self, step: int, block: Block) -> str | None:
        """The blocks a continuation onto `block` could also have meant, in words, reported as
        `ambiguous-continuation`; None when no other block was waiting.

        Spec section 7: ambiguous when another block (still taking fragments) holds arguments
        that are not one complete JSON value. Costs O(1) however many blocks are open.
        """
        waiting = self.waiting(block)
        if waiting == 0:
            return None
        shown = [other for other in islice(self._unsettled, 4) if other is not block][:3]
        others = "; ".join(_waiting_block(other) for other in shown)
        if waiting > len(shown):
            others += f"; and {count(waiting - len(shown), 'other block')}"
        self._report(
            "ambiguous-continuation", step, block.number,
            f"a continuation went to block #{block.number} {block.label}, the most recently "
            f"opened, while {others}: decision 0019 guessed which call it belongs to",
        )  # fmt: skip
        return others

    def waiting(self, block: Block) -> int:
        """How many blocks other than `block` are unsettled (fed only as far as that needs)."""
        stale = self._stale
        if stale and (len(stale) > 1 or stale[0] is not block):
            self.settle()
        return len(self._unsettled) - (block in self._unsettled)

    def _settle_piece(self, block: Block, piece: str) -> None:
        """Feed a piece to its block's completion; the block leaves or joins `_unsettled`."""
        completion = self._completions.get(block)
        if completion is not None:
            if completion.feed(piece):
                self._unsettled.pop(block, None)
            else:
                self._unsettled[block] = None

    def settle(self) -> None:
        """Bring `_unsettled` up to date: feed the stale pieces, in the order they came."""
        runs, firsts = self._stale, self._stale_firsts
        ends: dict[Block, int] = {}
        bounds = array("q", bytes(8 * len(runs)))
        for at in range(len(runs) - 1, -1, -1):  # each run ends where its block's next starts
            block = runs[at]
            bounds[at] = ends.get(block, len(block.pieces))
            ends[block] = firsts[at]
        for at, block in enumerate(runs):
            for piece in block.pieces[firsts[at] : bounds[at]]:
                self._settle_piece(block, piece)
        runs.clear()
        del firsts[:]
        self._stale_last = None

    def _freeform_piece(self, block: Block, text: str, *, closing: bool) -> str:
        """Upstream's grammar-tool input as JSON text: `{"input":"` once, escaped text, `"}`."""
        if not text and not closing:
            return ""
        opening = "" if self.freeform[block] else '{"input":"'
        self.freeform[block] = True
        return opening + json_piece(text) + ('"}' if closing else "")

    def _fold(self, step: int, block: Block) -> bool:
        """Fold a candidate; True when it becomes a client block."""
        server = self.options.is_server_tool(block.name)
        block.fold = Fold(step, "server" if server else "client")
        self._completions.pop(block, None)
        self._unsettled.pop(block, None)
        return not server

    # The end of the stream.

    def fold_pending(self, step: int) -> Iterator[Block]:
        """Server-tools path: every candidate still pending folds, in opening order; yields
        those that become client blocks, as they fold."""
        if not self.server_path:
            return
        for block in self.blocks:
            if block.fold is None:
                self.close(step, block)
                if self._fold(step, block):
                    yield block

    def close(self, step: int, block: Block) -> str:
        """A freeform block's JSON closes (`"}`) before it ends or folds, as upstream's does:
        the text appended ("" for any other block)."""
        if block.kind != "toolCall" or block not in self.freeform:
            return ""
        closing = self._freeform_piece(block, "", closing=True)
        del self.freeform[block]  # closed once: closing again adds nothing
        self.append(step, block, closing)
        return closing


def _finished(*_: object) -> None:
    raise RuntimeError("the stream has ended")


def _waiting_block(block: Block) -> str:
    """`block #0 get_weather was also open, its arguments empty`."""
    text = block.text
    if not text:
        state = "its arguments empty"
    elif len(text) <= 30:
        state = f"its arguments {excerpt(text)} not yet complete"
    else:
        state = f"its arguments not yet complete (...{excerpt(text[-20:])})"
    return f"block #{block.number} {block.label} was also open, {state}"
