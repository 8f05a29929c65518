"""Assemble a chat-completions stream into blocks, recording why every fragment went where.

Theory of operation
-------------------
A stream is a sequence of records read by `webapp.core.readers`: chunks, the `[DONE]` sentinel,
and text that did not parse. Each record is one step. From a chunk we follow the choice whose
`index` is the selected one and read its delta in upstream's order: reasoning, then content,
then `tool_calls`, each entry of which is a *fragment*.

State kept while feeding:
- here, `content`: the content array (text, thinking and tool-call blocks) in creation
  order; an event's `contentIndex` is a block's position in it; and how the stream stopped.
- in `webapp.core.toolcalls.ToolCalls`: `blocks`, the tool-call blocks (client path) or
  candidates (server-tools path) in opening order; the registry, `by_index` and `by_id`,
  where each index and id points (the latest registration wins, as in upstream pi-ai); and
  `open`, the blocks in opening order that still take fragments, for continuations.
- `webapp.core.chunks` reads a chunk (the choice followed, reasoning, text, stop reasons)
  without keeping anything.

Each fragment goes through the rules table (`webapp.core.rules.RULES`) in order: exact-index,
exact-id, continuation, drop, new; policy `exact-key` has no continuation and no drop. On the
server-tools path a folded candidate takes no fragments, and a candidate folds as soon as it
has a name and its arguments parse as one complete JSON value.

After the last record every block ends in content order, then `done` or `error`. Block
histories are append-only, so `Trace.state_at(n)` bisects them instead of storing snapshots.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

import orjson

from webapp.core.blocks import Block, BlockKind
from webapp.core.chunks import (
    REASONING_FIELDS,
    content_text,
    opens_thinking,
    provider_error,
    reasoning_text,
    select_choice,
    stop,
    type_name,
)
from webapp.core.columns import CHUNK, END, EVENT_CODES, INVALID, Columns
from webapp.core.columns import DONE as STEP_DONE
from webapp.core.contract import read_contract
from webapp.core.jsvalue import js_string, map_key, truthy
from webapp.core.options import Options
from webapp.core.records import Payloads, Record
from webapp.core.rules import RULE_NAMES
from webapp.core.shapes import Shapes
from webapp.core.steps import Anomaly, Step
from webapp.core.toolcalls import ToolCalls, final_words
from webapp.core.trace import Trace
from webapp.tuning import paused_gc

__all__ = ["Assembler", "assemble"]


class Assembler:
    """Feed records one at a time; each `feed` returns the step it made, `finish` the last."""

    def __init__(self, options: Options | None = None) -> None:
        self.options = options or Options()
        self._columns = Columns(self.options.path == "server-tools")
        self._content: list[Block] = []
        self._calls = ToolCalls(self.options, self._columns, self._push_content, self._anomaly)
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
        return self._columns.step(step, self._calls.blocks, self._content)

    def record(self, record: Record) -> int:
        """Assemble one record into the columns and return its step number."""
        if self._trace is not None:
            raise RuntimeError("feed() after finish()")
        columns = self._columns
        step = columns.begin(_KINDS.get(record.kind, CHUNK), record.line)
        if step == 0:
            columns.event(START, None)
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
            self._chunk(step, record)
        return step

    def plain(self, records: Payloads, *, consume: bool = False) -> None:
        """Feed a plain stream's records, parsing each payload at most once.

        A chunk that only carries fragments is assembled inline (`_plain_chunk`); every other
        record goes through `record` with the same state, so the steps are those `record` makes
        of each record in turn (tests/reference/test_plain.py compares them). A chunk of a
        shape learnt from an earlier one (`webapp.core.shapes`) is not parsed at all: its one
        fragment's keys are the shape's, its argument text is sliced from the payload, and the
        rules resolve it as they would have (`ToolCalls.plain_keys`), or decline, and then it
        is parsed after all. `consume` lets each payload's text go once it is assembled
        (`records` keeps its length, not its records): for a caller that needs the trace only,
        whose peak memory is then lower by the text.
        """
        if self._trace is not None:
            raise RuntimeError("feed() after finish()")
        loads = orjson.loads
        plain_chunk = self._plain_chunk
        plain_keys = self._calls.plain_keys
        columns = self._columns
        kinds, lines = columns.step_kind, columns.step_line
        firsts, events = columns.step_fragment, columns.step_event
        rules, types = columns.fragment_rule, columns.event_type
        self._orjson_values = not kinds  # from the first record on
        shapes = Shapes()
        read_shape = shapes.read
        live = True  # until the stream stops: nothing after the stop is assembled inline
        hits = 0
        line = records.first_line  # `records.line(position)`, counted along
        payloads = records.payloads
        for position, payload in enumerate(payloads):
            found = read_shape(payload) if live else None
            if found is not None:
                text, (index, raw_id, raw_name) = found
                if plain_keys(len(kinds), index, raw_id, raw_name, text, text):
                    kinds.append(CHUNK)  # `columns.begin`, after its one fragment's rows
                    lines.append(line)
                    firsts.append(len(rules) - 1)
                    events.append(len(types) - 1)
                    hits += 1
                    if consume:
                        payloads[position] = ""
                    line += 2
                    continue
            try:
                value = loads(payload)
            except orjson.JSONDecodeError:
                record = records[position]
                if record.kind == "chunk":  # the standard library's parser took it
                    self._orjson_values = False
                self.record(record)
            else:
                kind = NOT_PLAIN if self._stopped_by is not None else plain_chunk(value, line)
                if kind == NOT_PLAIN:
                    self.record(records.parsed(position, value))
                elif kind == LEARNABLE:
                    shapes.learn(payload, value, hits)
            live = self._stopped_by is None
            if consume:
                payloads[position] = ""
            line += 2

    def _plain_chunk(self, chunk: Any, line: int) -> int:
        """Assemble a chunk whose one choice's delta carries only `tool_calls`: `LEARNABLE`
        when it was one fragment resolved inline, else `PLAIN`; `NOT_PLAIN` for any other.

        The checks are `_chunk`'s and `select_choice`'s usual case, made before any state is
        touched: one choice, the one followed, no finish_reason, no text, no reasoning.
        """
        if type(chunk) is not dict or "error" in chunk:
            return NOT_PLAIN
        choices = chunk.get("choices")
        if type(choices) is not list or len(choices) != 1:
            return NOT_PLAIN
        choice = choices[0]
        if type(choice) is not dict or choice.get("finish_reason") is not None:
            return NOT_PLAIN
        index = choice.get("index", 0)
        delta = choice.get("delta")
        if type(index) is not int or index != self.options.choice or type(delta) is not dict:
            return NOT_PLAIN
        fragments = delta.get("tool_calls")
        if type(fragments) is not list or not fragments or delta.get("content") is not None:
            return NOT_PLAIN
        if not _REASONING_KEYS.isdisjoint(delta):
            return NOT_PLAIN
        columns = self._columns
        step = len(columns.step_kind)  # `columns.begin(CHUNK, line)` for a line that fits
        if step == 0 or line >= 1 << 62:
            columns.begin(CHUNK, line)
            if step == 0:
                columns.event(START, None)
        else:
            columns.step_kind.append(CHUNK)
            columns.step_line.append(line)
            columns.step_fragment.append(len(columns.fragment_rule))
            columns.step_event.append(len(columns.event_type))
        calls = self._calls
        if len(fragments) == 1:  # the usual chunk: one call at a time
            if calls.plain_fragment(step, fragments[0]):
                return LEARNABLE
            calls.fragment(step, 0, fragments[0])
        else:
            calls.plain_fragments(step, fragments)
        return PLAIN

    def _chunk(self, step: int, record: Record) -> None:
        chunk = record.value
        notes = self._columns.notes
        if record.event is not None or not isinstance(chunk, dict) or "error" in chunk:
            message = provider_error(record)
            if message is not None:
                self._error_record(step, message)
                return
            if record.event is not None and record.event.startswith("thread."):
                skipped = f"an SSE event named {record.event!r}: upstream's SDK passes it on "
                notes[step] = skipped + "wrapped, so it is not read as a chunk"
                return
            if not isinstance(chunk, dict):
                notes[step] = f"not a chunk object ({type_name(chunk)}): skipped, as upstream does"
                return
        choice, note = self._select(step, chunk.get("choices"))
        if note is not None:
            notes[step] = note
        if choice is None:
            return
        finish = choice.get("finish_reason")
        if finish is not None and truthy(finish):
            self._finish_reason = finish
            self._columns.finish_reasons[step] = js_string(finish)
        delta = choice.get("delta")
        if isinstance(delta, dict):
            if not _REASONING_KEYS.isdisjoint(delta):
                self._reasoning(step, delta)
            if "content" in delta:
                self._text_delta(step, delta)
            if "tool_calls" in delta:
                self._calls.fragments(step, delta)

    def _error_record(self, step: int, message: str) -> None:
        self._provider_error = message
        self._stopped_by = "the provider's error"
        self._anomaly(
            "provider-error", step, None,
            f"the provider sent an error: {message}. The stream ends here, as in upstream.",
        )  # fmt: skip
        self._columns.notes[step] = "provider error"

    def _select(self, step: int, choices: Any) -> tuple[dict[str, Any] | None, str | None]:
        selection = select_choice(choices, self.options.choice)
        if not selection.others:
            return selection.choice, selection.note
        new = [index for index in selection.others if _hashable(index) not in self._other_choices]
        if new:
            self._other_choices.update(_hashable(index) for index in new)
            self._anomaly(
                "other-choices", step, None,
                f"choices with index {', '.join(map(js_string, new))} are present and "
                f"ignored (following choice {self.options.choice}). Upstream reads choices[0] "
                "whatever its index, which mixes the choices of an n > 1 stream.",
            )  # fmt: skip
        return selection.choice, selection.note

    def _reasoning(self, step: int, delta: dict[str, Any]) -> None:
        text = reasoning_text(delta)
        if text is not None:
            block = self._ensure("thinking", step)
            block.append(step, text)
            self._columns.event(THINKING_DELTA, block.content_index, text)
        if opens_thinking(delta):
            self._ensure("thinking", step)

    def _text_delta(self, step: int, delta: dict[str, Any]) -> None:
        text = content_text(delta)
        if text is not None:
            block = self._ensure("text", step)
            block.append(step, text)
            self._columns.event(TEXT_DELTA, block.content_index, text)

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
        step = columns.begin(END, None)
        if step == 0:
            columns.event(START, None)
        if self._provider_error is not None:
            columns.stop_event(ERROR, "error", self._provider_error)
            columns.notes[step] = (
                "the provider's error ended the stream: no block ends, as upstream"
            )
        else:
            self._calls.fold_pending(step)
            for block in self._content:
                self._calls.close(step, block)
                kind = "toolcall" if block.kind == "toolCall" else block.kind
                columns.event(EVENT_CODES[f"{kind}_end"], block.content_index)
            self._stop_event(step)
        if self._unassembled and self._stopped_by == "[DONE]":
            self._anomaly(
                "after-done", self._unassembled[0], None,
                f"{len(self._unassembled)} record(s) after [DONE]: listed, not assembled, "
                "since a client stops reading at [DONE]",
            )  # fmt: skip
        for code, at, block in self._calls.final_verdicts(step):
            self._anomalies.append(Anomaly(code, at, block.number, final_words, block))
        rules = columns.fragment_rule
        self._trace = Trace(
            policy=self.options.policy,
            path=self.options.path,
            server_tools=self.options.server_tools,
            choice=self.options.choice,
            columns=columns,
            blocks=tuple(self._calls.blocks),
            content=tuple(self._content),
            anomalies=tuple(sorted(self._anomalies, key=lambda a: a.step)),
            rule_counts=Counter(
                {name: rules.count(code) for code, name in enumerate(RULE_NAMES) if code in rules}
            ),
            stop_reason=self._stop_reason(),
            orjson_values=self._orjson_values,
        )
        self._calls.detach()
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
    """Assemble a whole stream in one call; `consume`: see `Assembler.plain` (the records of
    a plain stream are then no longer readable, only counted). `contract`: also read the
    stream's quirks and intended reading (`webapp.core.contract`), from the records."""
    assembler = Assembler(options)
    with paused_gc():
        if contract and not isinstance(records, Sequence):
            records = tuple(records)  # read twice: once for the contract, once to assemble
        found = (
            read_contract(records, assembler.options.choice)
            if contract and isinstance(records, Sequence)
            else None
        )
        if isinstance(records, Payloads):
            assembler.plain(records, consume=consume)
        else:
            record = assembler.record
            for item in records:
                record(item)
        assembler.close()
    return assembler.trace if found is None else replace(assembler.trace, contract=found)


NOT_PLAIN, PLAIN, LEARNABLE = range(3)
"""What `_plain_chunk` made of a chunk: nothing; its step; its step, one fragment resolved
inline, so that its shape can be learnt (`webapp.core.shapes`)."""
_REASONING_KEYS = frozenset((*REASONING_FIELDS, "reasoning_details"))
_KINDS = {"chunk": CHUNK, "done": STEP_DONE, "invalid": INVALID}
START, TEXT_DELTA, THINKING_DELTA, DONE, ERROR = (
    EVENT_CODES[name] for name in ("start", "text_delta", "thinking_delta", "done", "error")
)


def _hashable(value: Any) -> object:
    return map_key(value) if isinstance(value, str | int | float | bool) else repr(value)
