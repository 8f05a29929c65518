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
from typing import Any

from webapp.chunks import type_name
from webapp.jsoncheck import Completion, parses
from webapp.jsvalue import Keys, js_string, json_piece, map_key, read_keys, truthy
from webapp.options import Options
from webapp.rules import Candidate, Match, resolve, rules_for
from webapp.trace import Block, Event, Fold, Fragment
from webapp.words import excerpt

Report = Callable[[str, int, "int | None", str], None]
"""Report an anomaly: code, step, block, message."""
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
        self._freeform: dict[Block, bool] = {}
        """Blocks taking `custom.input` (freeform tools): whether their JSON text has opened."""

    # The registry, as the rules see it (webapp.rules.Lookup).

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
        names its block (`webapp.rules.resolve`); `new` opens one, the other rules register the
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
        if self._server:
            self._completions[block] = Completion()
        else:
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
        if keys.custom_only and block not in self._freeform:
            self._freeform[block] = False  # upstream switches it to custom input
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
        self._append(step, block, piece, events)
        server_ready = self._server and self._completions[block].complete
        if server_ready and truthy(block.name):
            self._fold(step, block, events)
        return piece

    def _append(self, step: int, block: Block, piece: str, events: list[Event]) -> None:
        if piece:
            block.append(step, piece)
        if self._server:
            self._completions[block].feed(piece)
        else:
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

    def final_anomalies(self, step: int) -> None:
        """Phantom calls and invalid arguments, judged on the final blocks."""
        for block in self.blocks:
            if block.is_phantom:
                self._report(
                    "phantom-call", block.opened_step, block.number,
                    f"block #{block.number} ends with no name: a phantom call"
                    + (f" holding {excerpt(block.text)}" if block.text else ""),
                )  # fmt: skip
            text = block.text
            if text and not parses(text):
                self._report(
                    "invalid-arguments", step, block.number,
                    f"block #{block.number}'s final arguments are not valid JSON: {excerpt(text)}",
                )  # fmt: skip


def _block(match: Match) -> Block:
    assert isinstance(match.block, Block)
    return match.block
