"""Assemble a chat-completions stream into blocks, recording why every fragment went where.

Theory of operation
-------------------
A stream is a sequence of records (`webapp.core.readers`): chunks, the `[DONE]` sentinel,
and text that did not parse. Each record is one step. A *chunk* is one
`chat.completion.chunk` object: we follow the choice whose `index` is the selected one and read
its delta in upstream's order: reasoning, then content, then `tool_calls`, each entry of which
is a *fragment*. Records come parsed (a tuple of `Record`s), or as the payloads of a plain
SSE stream (`webapp.core.records.Payloads`), which this loop parses with orjson, once each; both
go through the same `_chunk`.

State kept while feeding:
- here: the content array (text, thinking and tool-call blocks, in creation order; an event's
  `contentIndex` is a block's position in it), the text and thinking blocks, the finish
  reason, how the stream stopped, the anomalies, and the trace's rows (`webapp.core.columns`),
  which only this module and the columns write;
- in `webapp.core.toolcalls.ToolCalls`: the tool-call blocks (client path) or candidates
  (server-tools path) in opening order, the registry (`by_index`, `by_id`: where each index
  and id points, the latest registration winning as in upstream pi-ai), the blocks still open
  for continuations, and which blocks' arguments are not yet one complete JSON value;
- in `webapp.core.contract.ContractReader` (when `contract`): the wire as the contract reads
  it, fed each record or parsed chunk from this same loop, so no chunk is parsed twice (a
  chunk with no tool call and no finish, which it has nothing to read in once the model is
  known, is not handed over: `WireReader.quiet`).

Each fragment's rule is `webapp.core.rules.decide`: the table tried in order, exact-index,
exact-id, continuation, drop, new (policy `exact-key` has no continuation and no drop); what
then happens is the rule's effect, from its row: it lands on the block its keys found, appends
to the most recently opened block, is dropped, or opens a block. On the
server-tools path a folded candidate takes no fragment, and a candidate folds as soon as it has
a name and its arguments parse as one complete JSON value.

After the last record every block ends in content order, then `done` or `error`. Block
histories are append-only, so `Trace.state_at(n)` bisects them instead of storing snapshots.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

import orjson

from webapp.core.blocks import Block, BlockKind, added
from webapp.core.chunks import (
    REASONING_FIELDS,
    opens_thinking,
    provider_error,
    select_choice,
    stop,
    type_name,
)
from webapp.core.columns import CHUNK, END, EVENT_CODES, INVALID, NONE, Columns
from webapp.core.columns import DONE as STEP_DONE
from webapp.core.contract import ContractReader
from webapp.core.diagnosis import final_verdicts, final_words
from webapp.core.jsvalue import js_string, map_key, read_keys, truthy
from webapp.core.options import Options
from webapp.core.records import Payloads, Record
from webapp.core.rules import APPENDS, DROPS, LANDS, OPENS, RULE_EFFECTS, RULE_NAMES, decide
from webapp.core.steps import Anomaly, Step
from webapp.core.toolcalls import ToolCalls
from webapp.core.trace import Trace
from webapp.core.words import excerpt
from webapp.tuning import paused_gc

__all__ = ["Assembler", "assemble"]


class Assembler:
    """Feed records one at a time; each `feed` returns the step it made, `finish` the last."""

    def __init__(self, options: Options | None = None, *, contract: bool = False) -> None:
        """`contract`: also read the stream's quirks and intended reading from the records as
        they are fed (`webapp.core.contract`; the trace's `contract`)."""
        self.options = options or Options()
        self._contract = ContractReader(self.options.choice) if contract else None
        self._choice = self.options.choice
        self._columns = Columns(self.options.path == "server-tools")
        self._content: list[Block] = []
        self._calls = ToolCalls(self.options, self._anomaly)
        self._text: Block | None = None
        self._thinking: Block | None = None
        self._anomalies: list[Anomaly] = []
        self._stopped_by: str | None = None
        self._provider_error: str | None = None
        self._finish_reason: Any = None
        self._other_choices: set[Any] = set()
        self._unassembled: list[int] = []
        self._trace: Trace | None = None
        self._orjson_values = False

    # Feeding.

    def feed(self, record: Record) -> Step:
        """Assemble one record and return its step."""
        step = self.record(record)
        self._columns.pack()  # its rows, read now
        return self._columns.step(step, self._calls.blocks, self._content)

    def record(self, record: Record) -> int:
        """Assemble one record into the columns and return its step number."""
        if self._trace is not None:
            raise RuntimeError("feed() after finish()")
        columns = self._columns
        step = columns.begin(_KINDS.get(record.kind, CHUNK), record.line)
        if step == 0:
            columns.event(START, None)
        contract = self._contract
        if contract is not None and not contract.ended:
            contract.reader.record(step, record)
        if self._stopped_by is not None:
            self._unassembled.append(step)
            columns.unassembled.add(step)
            columns.notes[step] = (
                f"after {self._stopped_by}: a client stops reading there, so this record "
                "is not assembled"
            )
            if record.error is not None:
                columns.errors[step] = record.error
        elif record.kind == "invalid":
            self._anomaly(
                "invalid-chunk", step, None,
                f"line {record.line}: {record.error}. Upstream's client stops the stream here "
                "with an error; streamviz reads on so that you can see past it.",
            )  # fmt: skip
            if record.error is not None:
                columns.errors[step] = record.error
        elif record.kind == "done":
            self._stopped_by = "[DONE]"
            columns.notes[step] = "end of stream"
        else:
            self._chunk(step, record.value, record.event, record)
        return step

    def payloads(self, records: Payloads, *, consume: bool = False) -> None:
        """Feed a plain stream's records from their payloads, each parsed once, by orjson.

        A payload orjson refuses (not JSON, or JSON that only the standard library reads: a
        lone surrogate, an integer beyond 64 bits) and every record after the stream stopped
        go through `record`, which gives the same steps. `consume` lets each segment of
        payloads go once assembled (`Payloads.let_go`), for a caller that needs the trace only.
        """
        if self._trace is not None:
            raise RuntimeError("feed() after finish()")
        loads, decode_error = orjson.loads, orjson.JSONDecodeError
        columns = self._columns
        kinds, pending = columns.step_kind, columns.pending
        lines, firsts, events = pending.line, pending.fragment, pending.event
        rules, types = columns.fragment_rule, columns.event_type
        reader = None if self._contract is None else self._contract.reader
        self._orjson_values = not kinds  # from the first record on
        line = records.first_line  # `records.line(position)`, counted along
        if records.line(len(records)) >= 1 << 62:  # beyond the line column: see `begin`
            self._orjson_values = False
            for record in records:
                self.record(record)
            return
        position = 0
        for segment in range(len(records.segments)):
            for payload in records.cut(segment):
                try:
                    value = loads(payload)
                except decode_error:
                    self._refused(records[position])
                else:
                    if self._stopped_by is not None or not kinds:
                        self.record(records.parsed(position, value))
                    else:
                        step = len(kinds)  # `columns.begin(CHUNK, line)`
                        kinds.append(CHUNK)
                        lines.append(line)
                        firsts.append(len(rules))
                        events.append(len(types))
                        quiet = self._chunk(step, value, None, None)
                        # The contract reads the same parse (`quiet`: nothing in it for it).
                        if reader is not None and not (quiet and reader.quiet()):
                            if type(value) is dict and "error" not in value:
                                reader.chunk(step, value)
                            else:
                                reader.record(step, records.parsed(position, value))
                position += 1
                line += 2
            columns.pack()
            if consume:
                records.let_go(segment)

    def _refused(self, record: Record) -> None:
        """A payload orjson refused: its record, as the reader makes it."""
        if record.kind == "chunk":  # the standard library's parser took it
            self._orjson_values = False
        self.record(record)

    def _chunk(self, step: int, chunk: Any, event: str | None, record: Record | None) -> bool:
        """Assemble one parsed chunk at `step` (`record`: the one it came from, if any); True
        when it is the usual choice with no finish and no `tool_calls` (reasoning or text,
        say), which the contract has nothing to read in (`WireReader.quiet`)."""
        odd = event is not None or type(chunk) is not dict or "error" in chunk
        if odd and self._odd_chunk(step, chunk, event, record):
            return False
        body: dict[str, Any] = chunk  # `_odd_chunk` takes any other value
        choices = body.get("choices")
        choice: Any = choices[0] if type(choices) is list and len(choices) == 1 else None
        index = choice.get("index", 0) if type(choice) is dict else None
        if type(index) is not int or index != self._choice:  # not the usual one choice
            choice = self._select(step, choices)
            if choice is None:
                return False
            index = None
        followed: dict[str, Any] = choice
        finish = followed.get("finish_reason")
        if finish is not None and truthy(finish):
            self._finish_reason = finish
            self._columns.finish_reasons[step] = js_string(finish)
        delta = followed.get("delta")
        if not isinstance(delta, dict):
            return False
        if not _REASONING_KEYS.isdisjoint(delta):
            self._reasoning(step, delta)
        content = delta.get("content")
        if content:
            self._text_delta(step, content)
        calls = delta.get("tool_calls")
        if calls is None:
            return finish is None and index is not None
        if type(calls) is list and len(calls) == 1:  # the usual chunk: one fragment
            self._fragment(step, 0, calls[0])
        else:
            self._fragments(step, calls)
        return False

    def _fragments(self, step: int, calls: Any) -> None:
        """`delta.tool_calls` when it is not one fragment: each of a list, or an anomaly."""
        if type(calls) is list:
            for position, raw in enumerate(calls):
                self._fragment(step, position, raw)
        elif truthy(calls):
            self._anomaly(
                "malformed-delta", step, None,
                f"delta.tool_calls is {type_name(calls)}, not an array: ignored "
                "(upstream would fail or misread it)",
            )  # fmt: skip

    def _odd_chunk(self, step: int, chunk: Any, event: str | None, record: Record | None) -> bool:
        """A provider's error, an SSE event upstream passes on, or not a chunk object: True
        when that is all there is to it."""
        if record is None:
            record = Record(kind="chunk", line=None, value=chunk, event=event)
        message = provider_error(record)
        notes = self._columns.notes
        if message is not None:
            self._provider_error = message
            self._stopped_by = "the provider's error"
            self._anomaly(
                "provider-error", step, None,
                f"the provider sent an error: {message}. The stream ends here, as in upstream.",
            )  # fmt: skip
            notes[step] = "provider error"
            return True
        if event is not None and event.startswith("thread."):
            skipped = f"an SSE event named {event!r}: upstream's SDK passes it on "
            notes[step] = skipped + "wrapped, so it is not read as a chunk"
            return True
        if not isinstance(chunk, dict):
            notes[step] = f"not a chunk object ({type_name(chunk)}): skipped, as upstream does"
            return True
        return False

    def _select(self, step: int, choices: Any) -> dict[str, Any] | None:
        """The choice followed, when the chunk is not the usual one choice; notes and reports
        what else it holds."""
        selection = select_choice(choices, self.options.choice)
        if selection.note is not None:
            self._columns.notes[step] = selection.note
        if not selection.others:
            return selection.choice
        new = [index for index in selection.others if _hashable(index) not in self._other_choices]
        if new:
            self._other_choices.update(_hashable(index) for index in new)
            self._anomaly(
                "other-choices", step, None,
                f"choices with index {', '.join(map(js_string, new))} are present and "
                f"ignored (following choice {self.options.choice}). Upstream reads choices[0] "
                "whatever its index, which mixes the choices of an n > 1 stream.",
            )  # fmt: skip
        return selection.choice

    def _reasoning(self, step: int, delta: dict[str, Any]) -> None:
        """The first non-empty of `reasoning_content`, `reasoning`, `reasoning_text` feeds the
        thinking block; a reasoning detail opens it even without text."""
        text = (
            delta.get("reasoning_content") or delta.get("reasoning") or delta.get("reasoning_text")
        )
        if type(text) is not str or not text:  # not the usual string: look at each
            text = next((t for n in REASONING_FIELDS if type(t := delta.get(n)) is str and t), None)
        if text is not None:
            block = self._thinking or self._ensure("thinking", step)
            self._piece(block, step, THINKING_DELTA, text)
        elif self._thinking is None and opens_thinking(delta):
            self._ensure("thinking", step)

    def _text_delta(self, step: int, content: Any) -> None:
        """`delta.content` feeds the text block (`String()` of a non-empty array, as `+=`)."""
        if type(content) is str:
            text = content
        elif type(content) is list:
            text = js_string(content)
        else:
            return
        self._piece(self._text or self._ensure("text", step), step, TEXT_DELTA, text)

    def _piece(self, block: Block, step: int, code: int, text: str) -> None:
        """A piece of the text or thinking block, and its delta event."""
        block.pieces.append(text)
        block.piece_steps.append(step)
        self._columns.event(code, block.content_index, text)

    def _ensure(self, kind: BlockKind, step: int) -> Block:
        block = self._text if kind == "text" else self._thinking
        if block is None:
            block = Block(kind, None, step)
            self._push_content(block, step)
            self._columns.event(EVENT_CODES[f"{kind}_start"], block.content_index)
            if kind == "text":
                self._text = block
            else:
                self._thinking = block
        return block

    def _push_content(self, block: Block, step: int) -> None:
        block.content_index = len(self._content)
        block.content_step = step
        self._content.append(block)

    def _start(self, block: Block, step: int, text: str | None) -> None:
        """A tool-call block joins the content array: `toolcall_start`, and on folding (`text`
        not None) one `toolcall_delta` with all its arguments."""
        self._push_content(block, step)
        block.start_steps = added(block.start_steps, step)
        self._columns.event(TOOLCALL_START, block.content_index)
        if text is not None:
            self._columns.event(TOOLCALL_DELTA, block.content_index, text)

    # Fragments.

    def _fragment(self, step: int, position: int, raw: Any) -> None:
        """Resolve one fragment, the heart of the tool: read its keys as JavaScript would (the
        usual types here, any other with `read_keys`), let `decide` name its rule and block,
        open or register (`_unusual` for all but a fragment its keys found), land its text,
        write its rows.
        """
        columns, calls = self._columns, self._calls
        entry: dict[str, Any] = raw if type(raw) is dict else _NOT_AN_OBJECT
        function = entry.get("function")
        usual = False
        if type(function) is dict and "custom" not in entry:
            raw_index, raw_id = entry.get("index"), entry.get("id")
            raw_name, raw_arguments = function.get("name"), function.get("arguments")
            usual = (
                (raw_index is None or type(raw_index) is int)
                and (raw_id is None or type(raw_id) is str)
                and (raw_name is None or type(raw_name) is str)
                and (raw_arguments is None or type(raw_arguments) is str)
            )
        if usual:
            index, call_id, name = raw_index, raw_id or None, raw_name or None
            text, custom_only, custom_input = raw_arguments or "", False, ""
            oddities: tuple[str, ...] = ()
        else:
            (index, call_id, name, text, raw_index, raw_id, raw_name, raw_arguments, custom_only,
             custom_input, oddities) = _odd_keys(raw)  # fmt: skip
        columns.fragment_index.append(raw_index)
        columns.fragment_id.append(raw_id)
        columns.fragment_name.append(raw_name)
        columns.fragment_arguments.append(raw_arguments)
        rule, block, index_miss, id_miss = decide(index, call_id, name, calls, calls.adr)
        server, late = calls.server_path, False
        if oddities or server or rule not in _FOUND:
            block, late = self._unusual(step, position, rule, block, index, call_id, name,
                                        raw_name, text, custom_only, oddities)  # fmt: skip
        elif block is not None and (call_id or name or custom_only or not block.indexes):
            calls.register(step, block, rule, index, call_id, name, custom_only)
        piece = number = NONE
        if block is not None:
            number = block.number  # type: ignore[assignment]  # a tool call: numbered
            appended, folded = calls.land(step, block, text, custom_input)
            if appended:
                piece = len(block.pieces) - 1
            if not server:
                columns.event(TOOLCALL_DELTA, block.content_index, appended)
            elif folded:
                self._start(block, step, block.text)
        columns.fragment_rule.append(rule)
        pending = columns.pending
        pending.block.append(number)
        pending.piece.append(piece)
        pending.index_miss.append(index_miss)
        pending.id_miss.append(id_miss)
        if late:
            self._late(step, position, block, rule)

    def _unusual(
        self, step: int, position: int, rule: int, block: Block | None, index: Any,
        call_id: Any, name: Any, raw_name: Any, text: str, custom_only: bool,
        oddities: tuple[str, ...],
    ) -> tuple[Block | None, bool]:  # fmt: skip
        """The effect of its rule (`webapp.core.rules.RULE_EFFECTS`) for every fragment but
        one its keys found on the client path, and for any with odd keys or on the server-tools
        path: what it opens or registers, what is reported; returns its block and whether it is
        late (its index or id names a folded candidate)."""
        columns, calls = self._columns, self._calls
        row = len(columns.fragment_rule)
        late = calls.server_path and calls.names_folded(index, call_id)
        if oddities:
            self._anomaly("malformed-fragment", step, None, "; ".join(oddities))
            columns.oddities[row] = oddities
        effect = RULE_EFFECTS[rule]
        if effect == DROPS:
            if text:
                self._anomaly(
                    "dropped-fragment", step, None,
                    f"fragment {position} carried arguments {excerpt(text)} and was "
                    "dropped: no block was open to continue",
                )  # fmt: skip
            return None, late
        if effect == OPENS:
            block = calls.open(step, index, call_id, raw_name, custom_only)
            if not calls.server_path:
                self._start(block, step, None)
            return block, late
        assert block is not None
        if effect == APPENDS:
            others = calls.weigh(step, block)
            if others is not None:
                columns.weighed[row] = others
        calls.register(step, block, rule, index, call_id, name, custom_only)
        return block, late

    def _late(self, step: int, position: int, block: Block | None, rule: int) -> None:
        """Server-tools path: the fragment just written named a folded candidate."""
        self._columns.late.add(len(self._columns.fragment_rule) - 1)
        self._anomaly(
            "late-fragment", step, None if block is None else block.number,
            f"fragment {position} names a candidate that has already folded; it was "
            f"resolved as if nothing matched ({RULE_NAMES[rule]})",
        )  # fmt: skip

    # Finishing.

    def finish(self) -> Step:
        """End the stream: fold what is pending, end every block, fire `done` or `error`.
        Returns the `end` step."""
        step = self.close()
        return self._columns.step(step, self.trace.blocks, self.trace.content)

    def close(self) -> int:
        """`finish` without building the `end` step (it can hold an event per block): returns
        its number."""
        if self._trace is not None:
            raise RuntimeError("finish() called twice")
        columns = self._columns
        calls = self._calls
        step = columns.begin(END, None)
        if step == 0:
            columns.event(START, None)
        if self._provider_error is not None:
            columns.stop_event(ERROR, "error", self._provider_error)
            columns.notes[step] = (
                "the provider's error ended the stream: no block ends, as upstream"
            )
        else:
            for block in calls.fold_pending(step):
                self._start(block, step, block.text)
            for block in self._content:
                closing = calls.close(step, block)
                if closing and not calls.server_path:
                    self._columns.event(TOOLCALL_DELTA, block.content_index, closing)
                kind = "toolcall" if block.kind == "toolCall" else block.kind
                self._columns.event(EVENT_CODES[f"{kind}_end"], block.content_index)
            self._stop_event(step)
        if self._unassembled and self._stopped_by == "[DONE]":
            self._anomaly(
                "after-done", self._unassembled[0], None,
                f"{len(self._unassembled)} record(s) after [DONE]: listed, not assembled, "
                "since a client stops reading at [DONE]",
            )  # fmt: skip
        for code, at, block in final_verdicts(calls.blocks, step):
            self._anomalies.append(Anomaly(code, at, block.number, final_words, block))
        columns.pack()
        rules = columns.fragment_rule
        reader = self._contract
        self._trace = Trace(
            policy=self.options.policy,
            path=self.options.path,
            server_tools=self.options.server_tools,
            choice=self.options.choice,
            columns=columns,
            blocks=tuple(calls.blocks),
            content=tuple(self._content),
            anomalies=tuple(sorted(self._anomalies, key=lambda a: a.step)),
            rule_counts=Counter(
                {name: rules.count(code) for code, name in enumerate(RULE_NAMES) if code in rules}
            ),
            stop_reason=self._stop_reason(),
            orjson_values=self._orjson_values,
            contract=None if reader is None else reader.finish(step),
        )
        calls.detach()
        return step

    def _stop_event(self, step: int) -> None:
        if self._finish_reason is None:
            self._anomaly(
                "missing-finish-reason", step, None,
                "no chunk carried a finish_reason: upstream ends such a stream with an error",
            )  # fmt: skip
        reason, error = stop(self._finish_reason)
        if error is not None:
            self._columns.stop_event(ERROR, "error", error)
        else:
            self._columns.stop_event(DONE, reason, None)

    def _stop_reason(self) -> str | None:
        if self._provider_error is not None:
            return "error"
        return None if self._finish_reason is None else stop(self._finish_reason)[0]

    @property
    def trace(self) -> Trace:
        """The finished trace (after `finish()`)."""
        if self._trace is None:
            raise RuntimeError("the trace exists once finish() has been called")
        return self._trace

    def _anomaly(self, code: str, step: int, block: int | None, message: str) -> None:
        self._anomalies.append(Anomaly(code, step, block, message))


def assemble(
    records: Iterable[Record],
    options: Options | None = None,
    *,
    consume: bool = False,
    contract: bool = True,
) -> Trace:
    """Assemble a whole stream in one call; `consume`: see `Assembler.payloads` (the records
    of a plain stream are then no longer readable, only counted). `contract`: also read the
    stream's quirks and intended reading (`webapp.core.contract`), from the records."""
    assembler = Assembler(options, contract=contract)
    with paused_gc():
        if isinstance(records, Payloads):
            assembler.payloads(records, consume=consume)
        else:
            record = assembler.record
            for item in records:
                record(item)
        assembler.close()
    return assembler.trace


_REASONING_KEYS = frozenset((*REASONING_FIELDS, "reasoning_details"))
_NOT_AN_OBJECT: dict[str, Any] = {}
"""What `_fragment` reads the keys of when the fragment is not an object (never written)."""
_KINDS = {"chunk": CHUNK, "done": STEP_DONE, "invalid": INVALID}
START, TEXT_DELTA, THINKING_DELTA, DONE, ERROR, TOOLCALL_START, TOOLCALL_DELTA = (
    EVENT_CODES[name]
    for name in (
        "start",
        "text_delta",
        "thinking_delta",
        "done",
        "error",
        "toolcall_start",
        "toolcall_delta",
    )
)
_NO_KEYS = read_keys({})
_FOUND = frozenset(code for code, effect in enumerate(RULE_EFFECTS) if effect == LANDS)
"""The rules whose fragment lands on the block its keys found: the usual fragment's, resolved
in `_fragment` itself."""


def _odd_keys(raw: Any) -> tuple[Any, ...]:
    """`read_keys` of a fragment whose keys are not of the usual types, or that is no object."""
    if type(raw) is dict:
        return tuple(read_keys(raw))
    oddity = f"the fragment is {type_name(raw)}, not an object: read as one with no keys" + (
        " (upstream's client fails on it with a TypeError)" if raw is None else ""
    )
    return (*_NO_KEYS[:-1], (oddity,))


def _hashable(value: Any) -> object:
    return map_key(value) if isinstance(value, str | int | float | bool) else repr(value)
