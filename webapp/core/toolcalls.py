"""The tool-call blocks of a stream: the registry the rules consult, and how a fragment lands.

On the client path every block is a content block from the moment it opens. On the
server-tools path blocks are *candidates*: they take fragments until they fold (a name and
arguments that parse as one complete JSON value), and only then become a server-tool call
or a client block. A freeform (`custom`) tool call gets its input wrapped as upstream does:
`{"input":"` once, the escaped text, `"}` when it ends.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from itertools import islice
from typing import Any

from webapp.core.blocks import Block, Fold, added
from webapp.core.chunks import type_name
from webapp.core.columns import TOOLCALL_DELTA, TOOLCALL_START, Columns
from webapp.core.delivery import Delivery
from webapp.core.diagnosis import explain, first_break
from webapp.core.jsoncheck import Completion, classify, dumps
from webapp.core.jsvalue import Keys, index_key, js_string, json_piece, map_key, read_keys, truthy
from webapp.core.options import Options
from webapp.core.rules import NO_HOLDER, NO_KEY, RULE_NAMES, Candidate, rules_for
from webapp.core.words import count, excerpt, number

Report = Callable[[str, int, "int | None", str], None]
"""Report an anomaly: code, step, block, message."""
_WHITESPACE = " \t\n\r"
Push = Callable[[Block, int], None]
"""Put a block into the content array at a step."""


class ToolCalls:
    """Tool-call blocks (or server-tools candidates) in opening order, and where keys point."""

    def __init__(self, options: Options, columns: Columns, push: Push, report: Report) -> None:
        self.options = options
        self._columns = columns
        self._adr = "continuation" in {rule.name for rule in rules_for(options.policy)}
        self._server = options.path == "server-tools"
        self._weighing = self._adr and not self._server
        """Whether a continuation weighs the other blocks' arguments (client path, adr-0019):
        only then are they followed on the client path (`_completions`, `_unsettled`)."""
        self._push = push
        self._report = report
        self.blocks: list[Block] = []
        self._by_index: dict[object, Block] = {}
        self._by_id: dict[object, Block] = {}
        self._open: list[Block] = []
        self._completions: dict[Block, Completion] = {}
        """Whether each block's arguments are one complete JSON value (server-tools path: until
        it folds), fed piece by piece."""
        self._unsettled: dict[Block, None] = {}
        """Blocks still taking fragments whose arguments are not one complete JSON value, in
        the order they last became so: where a continuation might have belonged instead."""
        self._stale: list[tuple[Block, str]] = []
        """Client path: the pieces appended since `_unsettled` was last brought up to date, in
        order. Only a continuation reads `_unsettled`, and only for blocks other than its own,
        so their completions are fed when one asks (`_waiting`), not at every piece."""
        self._stale_first: Block | None = None
        self._stale_several = False
        """Whether `_stale` holds pieces of more than one block (`_stale_first`'s)."""
        self._freeform: dict[Block, bool] = {}
        """Blocks taking `custom.input` (freeform tools): whether their JSON text has opened."""

    def detach(self) -> None:
        """Forget the assembler's callbacks once the stream has ended.

        They are its bound methods, so they make a cycle (assembler -> tool calls -> assembler)
        that would keep every block and anomaly alive until the cyclic collector's next full
        pass; without it a finished trace is freed as soon as nothing refers to it.
        """
        self._push = _finished
        self._report = _finished

    # The registry, as the rules see it (webapp.core.rules.Lookup).

    def holder_of_index(self, index: Any) -> Block | None:
        """The block registered under this index, folded or not."""
        return self._by_index.get(index_key(index))

    def holder_of_id(self, call_id: Any) -> Block | None:
        """The block registered under this id, folded or not."""
        return self._by_id.get(map_key(call_id))

    def latest_open(self) -> Block | None:
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

    def fragments(self, step: int, delta: dict[str, Any]) -> None:
        """Resolve every entry of `delta.tool_calls`, in array order, into fragment rows."""
        calls = delta.get("tool_calls")
        if not truthy(calls):
            return
        if not isinstance(calls, list):
            self._report(
                "malformed-delta", step, None,
                f"delta.tool_calls is {type_name(calls)}, not an array: ignored "
                "(upstream would fail or misread it)",
            )  # fmt: skip
            return
        for position, raw in enumerate(calls):
            self._fragment(step, position, raw)

    def plain_fragments(self, step: int, fragments: list[Any]) -> None:
        """`fragments` for a chunk's non-empty list of entries, the usual ones resolved inline."""
        plain = self.plain_fragment
        for position, raw in enumerate(fragments):
            if not plain(step, raw):
                self._fragment(step, position, raw)

    def fragment(self, step: int, position: int, raw: Any) -> None:
        """Resolve one fragment by the rules (what `fragments` does for each entry)."""
        self._fragment(step, position, raw)

    def plain_fragment(self, step: int, raw: Any) -> bool:
        """Resolve a fragment that only carries argument text, if no rule needs more; else False.

        On the server-tools path it always declines (its candidates fold as text arrives).

        The bulk of a long stream on the client path: a fragment with no id and no name (or
        `""` ones), string arguments, and an index that names an open block (`exact-index`)
        or none while the latest block is the only one waiting (an unambiguous
        `continuation`). It registers nothing and reports nothing, so only its rows and its
        text are written, as `_fragment` would write them. Anything else returns False before
        touching any state, and `_fragment` resolves it.
        """
        if type(raw) is not dict or self._server or "custom" in raw:
            return False
        function = raw.get("function")
        if type(function) is not dict:
            return False
        arguments = function.get("arguments")
        if arguments is None:
            piece = ""
        elif type(arguments) is str:
            piece = arguments
        else:
            return False
        return self.plain_keys(
            step, raw.get("index"), raw.get("id"), function.get("name"), arguments, piece
        )

    def plain_keys(
        self, step: int, index: Any, raw_id: Any, raw_name: Any, arguments: Any, piece: str
    ) -> bool:
        """`plain_fragment` once the fragment's keys are read: a dict on the client path,
        `function` a dict, no `custom`, `arguments` None or `piece`. Known without parsing
        for a chunk of a shape seen before (`webapp.core.shapes`)."""
        if not (raw_id is None or raw_id == "") or not (raw_name is None or raw_name == ""):
            return False
        if index is None:
            if not self._adr:
                return False
            block = self.latest_open()
            if block is None or self._waiting(block) > 0:
                return False
            rule = CONTINUATION
        elif type(index) is int and -_SAFE_INDEX <= index <= _SAFE_INDEX:
            holder = self._by_index.get(index)
            if holder is None or holder.fold is not None or not holder.indexes:
                return False
            block, rule = holder, EXACT_INDEX
        else:
            return False
        if block in self._freeform:
            return False
        columns = self._columns
        columns.fragment_index.append(index)
        columns.fragment_id.append(raw_id)
        columns.fragment_name.append(raw_name)
        columns.fragment_arguments.append(arguments)
        if piece:  # `_append`, inlined for the client path
            block.pieces.append(piece)
            block.piece_steps.append(step)
            if self._weighing:
                if not self._stale:
                    self._stale_first = block
                elif block is not self._stale_first:
                    self._stale_several = True
                self._stale.append((block, piece))
        columns.event_type.append(TOOLCALL_DELTA)
        columns.event_index.append(block.content_index)  # type: ignore[arg-type]  # client path
        columns.event_delta.append(piece)
        columns.fragment_rule.append(rule)
        columns.fragment_block.append(block.number)  # type: ignore[arg-type]  # a tool call
        columns.fragment_piece.append(len(block.pieces) - 1 if piece else -1)
        columns.fragment_index_miss.append(NO_KEY)
        columns.fragment_id_miss.append(NO_KEY)
        return True

    def _fragment(self, step: int, position: int, raw: Any) -> None:
        """Resolve one fragment: the heart of the tool.

        Its keys are read with JavaScript truthiness; the first rule of the table that applies
        names its block (`_decide`, the table compiled); `new` opens one, the other rules
        register the fragment's keys on the block they found; then its text lands there.
        Anything odd on the way (keys of the wrong type, a dropped fragment with text, a late
        fragment on the server-tools path) is reported as an anomaly at this step.
        """
        columns = self._columns
        row = len(columns.fragment_rule)
        if isinstance(raw, dict):
            keys = read_keys(raw)
            oddities = keys.oddities
            columns.fragment_index.append(keys.raw_index)
            columns.fragment_id.append(keys.raw_id)
            columns.fragment_name.append(keys.raw_name)
            columns.fragment_arguments.append(keys.raw_arguments)
        else:
            keys = _NO_KEYS
            oddities = (
                f"the fragment is {type_name(raw)}, not an object: read as one with no keys"
                + (" (upstream's client fails on it with a TypeError)" if raw is None else ""),
            )
            columns.fragment_index.append(None)
            columns.fragment_id.append(None)
            columns.fragment_name.append(None)
            columns.fragment_arguments.append(None)
        rule, block, index_miss, id_miss = self._decide(keys)
        late = self._server and self._names_folded(keys)
        if oddities:
            self._report("malformed-fragment", step, None, "; ".join(oddities))
            columns.oddities[row] = oddities
        if rule == DROP:
            if keys.arguments:
                self._report(
                    "dropped-fragment", step, None,
                    f"fragment {position} carried arguments {excerpt(keys.arguments)} and was "
                    "dropped: no block was open to continue",
                )  # fmt: skip
        elif rule == NEW:
            block = self._open_block(step, keys)
        else:
            assert block is not None
            if rule == CONTINUATION:
                self._weigh_continuation(step, block, row)
            self._register(step, block, keys, rule)
        piece = -1
        if block is not None and self._land(step, block, keys):
            piece = len(block.pieces) - 1
        columns.fragment_rule.append(rule)
        columns.fragment_block.append(-1 if block is None else _number(block))
        columns.fragment_piece.append(piece)
        columns.fragment_index_miss.append(index_miss)
        columns.fragment_id_miss.append(id_miss)
        if late:
            columns.late.add(row)
            self._report(
                "late-fragment", step, None if block is None else block.number,
                f"fragment {position} names a candidate that has already folded; it was "
                f"resolved as if nothing matched ({RULE_NAMES[rule]})",
            )  # fmt: skip

    def _decide(self, keys: Keys) -> tuple[int, Block | None, int, int]:
        """The rules table compiled (`webapp.core.rules.RULES`, in order): rule, block, misses."""
        index, call_id = keys.index, keys.id
        index_miss = NO_KEY
        if index is not None:
            holder = self._by_index.get(index_key(index))
            if holder is None:
                index_miss = NO_HOLDER
            elif holder.fold is None:
                return EXACT_INDEX, holder, NO_KEY, NO_KEY
            else:
                index_miss = _number(holder)
        if call_id is None:
            if keys.name is None and self._adr:
                block = self.latest_open()
                if block is None:
                    return DROP, None, index_miss, NO_KEY
                return CONTINUATION, block, index_miss, NO_KEY
            return NEW, None, index_miss, NO_KEY
        holder = self._by_id.get(map_key(call_id))
        if holder is None:
            return NEW, None, index_miss, NO_HOLDER
        if holder.fold is None:
            return EXACT_ID, holder, index_miss, NO_KEY
        return NEW, None, index_miss, _number(holder)

    def _weigh_continuation(self, step: int, block: Block, row: int) -> None:
        """Name the blocks a continuation could also have meant; report the guess if any.

        Spec section 7: ambiguous when another block (still taking fragments) holds arguments
        that are not one complete JSON value. Costs O(1) however many blocks are open.
        """
        waiting = self._waiting(block)
        if waiting == 0:
            return
        shown = [other for other in islice(self._unsettled, 4) if other is not block][:3]
        others = "; ".join(_waiting_block(other) for other in shown)
        if waiting > len(shown):
            others += f"; and {count(waiting - len(shown), 'other block')}"
        self._report(
            "ambiguous-continuation", step, block.number,
            f"a continuation went to block #{block.number} {_label(block)}, the most recently "
            f"opened, while {others}: decision 0019 guessed which call it belongs to",
        )  # fmt: skip
        self._columns.weighed[row] = others

    def _names_folded(self, keys: Keys) -> bool:
        holders = []
        if keys.index is not None:
            holders.append(self._by_index.get(index_key(keys.index)))
        if keys.id is not None:
            holders.append(self._by_id.get(map_key(keys.id)))
        return any(holder is not None and holder.fold is not None for holder in holders)

    def _open_block(self, step: int, keys: Keys) -> Block:
        block = Block("toolCall", len(self.blocks), step)
        self.blocks.append(block)
        self._open.append(block)
        if keys.id is not None:
            block.ids = added(block.ids, (step, keys.id))
            self._alias(step, block, keys.id)
        if keys.raw_name is not None and keys.raw_name != "":
            block.names = added(
                block.names, (step, keys.raw_name)
            )  # upstream opens with `name ?? ""`
        if keys.index is not None:
            self._by_index[index_key(keys.index)] = block
            block.indexes = added(block.indexes, (step, keys.index))
        if keys.custom_only:
            self._freeform[block] = False
            block.custom_input = []
        if self._server or self._weighing:
            self._settle()  # a block joins `_unsettled` after what came before it
            self._completions[block] = Completion()
            self._unsettled[block] = None
        if not self._server:
            self._push(block, step)
            block.start_steps = added(block.start_steps, step)
            self._columns.event(TOOLCALL_START, block.content_index)
        return block

    def _register(self, step: int, block: Block, keys: Keys, rule: int) -> None:
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
        if rule != CONTINUATION and keys.index is not None and not block.indexes:
            self._by_index[index_key(keys.index)] = block
            block.indexes = added(block.indexes, (step, keys.index))
        if keys.id is not None:
            if rule == EXACT_INDEX and truthy(block.id) and block.id != keys.id:
                self._report(
                    "id-conflict", step, block.number,
                    f"index {js_string(keys.index)} names block #{block.number} (id "
                    f"{js_string(block.id)}) but the fragment carries id {js_string(keys.id)}; "
                    "that id now points at this block too",
                )  # fmt: skip
            self._alias(step, block, keys.id)
            if not truthy(block.id):
                block.ids = added(block.ids, (step, keys.id))
        if keys.name is not None:
            if not truthy(block.name):
                block.names = added(block.names, (step, keys.name))
            elif keys.name != block.name:
                self._report(
                    "name-conflict", step, block.number,
                    f"block #{block.number} is named {js_string(block.name)}; a fragment "
                    f"names it {js_string(keys.name)}: the first name is kept",
                )  # fmt: skip

    def _alias(self, step: int, block: Block, call_id: Any) -> None:
        self._by_id[map_key(call_id)] = block
        block.aliases = added(block.aliases, (step, call_id))

    def _land(self, step: int, block: Block, keys: Keys) -> str:
        """Append the fragment's text to the block; returns the text appended."""
        piece = keys.arguments
        if block in self._freeform:
            piece = self._freeform_piece(block, keys.custom_input, closing=False)
            if block.custom_input is not None and keys.custom_input:
                block.custom_input.append(keys.custom_input)
        self._append(step, block, piece)
        server_ready = self._server and self._completions[block].complete
        if server_ready and truthy(block.name):
            self._fold(step, block)
        return piece

    def _append(self, step: int, block: Block, piece: str) -> None:
        if piece:
            block.pieces.append(piece)
            block.piece_steps.append(step)
            if self._server:
                self._settle_piece(block, piece)
            elif self._weighing:
                if not self._stale:
                    self._stale_first = block
                elif block is not self._stale_first:
                    self._stale_several = True
                self._stale.append((block, piece))
        if not self._server:
            columns = self._columns
            columns.event_type.append(TOOLCALL_DELTA)
            columns.event_index.append(_content_index(block))
            columns.event_delta.append(piece)

    def _settle_piece(self, block: Block, piece: str) -> None:
        """Feed a piece to its block's completion; the block leaves or joins `_unsettled`."""
        completion = self._completions.get(block)
        if completion is not None:
            if completion.feed(piece):
                self._unsettled.pop(block, None)
            else:
                self._unsettled[block] = None

    def _settle(self) -> None:
        """Bring `_unsettled` up to date: feed the stale pieces, in the order they came."""
        for block, piece in self._stale:
            self._settle_piece(block, piece)
        self._stale.clear()
        self._stale_first, self._stale_several = None, False

    def _waiting(self, block: Block) -> int:
        """How many blocks other than `block` are unsettled (fed only as far as that needs)."""
        if self._stale and (self._stale_several or self._stale_first is not block):
            self._settle()
        return len(self._unsettled) - (block in self._unsettled)

    def _freeform_piece(self, block: Block, text: str, *, closing: bool) -> str:
        """Upstream's grammar-tool input as JSON text: `{"input":"` once, escaped text, `"}`."""
        if not text and not closing:
            return ""
        opening = "" if self._freeform[block] else '{"input":"'
        self._freeform[block] = True
        return opening + json_piece(text) + ('"}' if closing else "")

    def _fold(self, step: int, block: Block) -> None:
        server = self.options.is_server_tool(block.name)
        block.fold = Fold(step, "server" if server else "client")
        self._completions.pop(block, None)
        self._unsettled.pop(block, None)
        if server:
            return
        self._push(block, step)
        block.start_steps = added(block.start_steps, step)
        self._columns.event(TOOLCALL_START, block.content_index)
        self._columns.event(TOOLCALL_DELTA, block.content_index, block.text)

    # The end of the stream.

    def fold_pending(self, step: int) -> None:
        """Server-tools path: every candidate still pending folds, in opening order."""
        if not self._server:
            return
        for block in self.blocks:
            if block.fold is None:
                self.close(step, block)
                self._fold(step, block)

    def close(self, step: int, block: Block) -> None:
        """A freeform block's JSON closes (`"}`) before it ends or folds, as upstream's does."""
        if block.kind == "toolCall" and block in self._freeform:
            closing = self._freeform_piece(block, "", closing=True)
            del self._freeform[block]  # closed once: closing again adds nothing
            self._append(step, block, closing)

    def final_verdicts(self, end: int) -> Iterator[tuple[str, int, Block]]:
        """Judged on the final blocks: phantoms, and arguments that are not a JSON object, as
        (code, step, block), worded later by `final_words`.

        Broken arguments are reported at the step that broke them (spec section 7), found by
        bisecting the block's pieces; the other verdicts belong to the `end` step.
        """
        for block in self.blocks:
            if block.is_phantom:
                yield "phantom-call", block.opened_step, block
            verdict = argument_verdict(block)
            if verdict is not None:
                code, step = verdict
                yield code, end if step is None else step, block


def argument_verdict(block: Block) -> tuple[str, int | None] | None:
    """What is wrong with a final block's arguments: the anomaly's code and its step (None: the
    `end` step), or None when nothing is."""
    if block.custom_input is not None:
        return None  # freeform input is free text: the tool gets {"input": ...} whatever it is
    text = block.text
    if not text.strip(_WHITESPACE):
        return ("empty-arguments", None) if truthy(block.name) else None
    parsed = classify(text)
    if parsed.state == "complete":
        return None if isinstance(parsed.value, dict) else ("non-object-arguments", None)
    if parsed.state == "partial":
        return "incomplete-arguments", None
    piece = first_break(block.pieces, broken=True)
    if piece is None:  # the whole text is a prefix after all: cannot happen once invalid
        return None
    return "invalid-arguments", block.piece_steps[piece]


def final_words(code: str, block: Block) -> str:
    """The message of a verdict on a final block (one of `FINAL_CODES`)."""
    return _WORDINGS[code](block)


def _phantom_words(block: Block) -> str:
    text = block.text
    held = f" holding {excerpt(text)}" if text else ""
    return f"block #{block.number} ends with no name: a phantom call{held}"


def _empty_words(block: Block) -> str:
    text = block.text
    what = "no arguments" if not text else "arguments that are only whitespace"
    name = _label(block)
    return f"block #{block.number} {name} ended with {what}: {name} would be called with {{}}"


def _non_object_words(block: Block) -> str:
    name = _label(block)
    return (
        f"block #{block.number} {name}'s arguments parse to {type_name(classify(block.text).value)}"
        f", not an object: {name} would be called with {{}}"
    )


def _incomplete_words(block: Block) -> str:
    text = block.text
    return (
        f"block #{block.number} {_label(block)}'s arguments never finished: "
        f"{excerpt(text[-40:], 40)} is the start of a JSON value, not a whole one; "
        f"{_delivered_words(block)}"
    )


def _invalid_words(block: Block) -> str:
    piece = first_break(block.pieces, broken=True)
    assert piece is not None  # worded only for a block that `argument_verdict` found broken
    broken = "".join(block.pieces[: piece + 1])
    cause = explain(broken)
    return (
        f"block #{block.number} {_label(block)}'s arguments stopped being JSON at step "
        f"{number(block.piece_steps[piece])}: {cause.meaning}. "
        f"Around the break: {cause.around(broken)}; {_delivered_words(block)}. "
        f"Parser: {cause.detail}"
    )


_WORDINGS: dict[str, Callable[[Block], str]] = {
    "phantom-call": _phantom_words,
    "empty-arguments": _empty_words,
    "non-object-arguments": _non_object_words,
    "incomplete-arguments": _incomplete_words,
    "invalid-arguments": _invalid_words,
}
FINAL_CODES = frozenset(_WORDINGS)
"""The verdicts on final blocks: worded from the block alone, so a stored trace keeps no text."""


def _finished(*_: object) -> None:
    raise RuntimeError("the stream has ended")


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


def _number(block: Block) -> int:
    assert block.number is not None
    return block.number


def _content_index(block: Block) -> int:
    assert block.content_index is not None
    return block.content_index


_NO_KEYS = read_keys({})
_SAFE_INDEX = 2**53
"""Beyond this an index is not the key it looks like (`jsvalue.index_key`)."""
EXACT_INDEX, EXACT_ID, CONTINUATION, DROP, NEW = (
    RULE_NAMES.index(name) for name in ("exact-index", "exact-id", "continuation", "drop", "new")
)
