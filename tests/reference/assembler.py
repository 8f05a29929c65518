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

from collections.abc import Iterable
from typing import Any

from tests.reference.toolcalls import ToolCalls
from tests.reference.trace import Anomaly, Block, BlockKind, Event, Fragment, Step, Trace
from webapp.core.chunks import (
    content_text,
    opens_thinking,
    provider_error,
    reasoning_text,
    select_choice,
    stop,
    type_name,
)
from webapp.core.jsvalue import js_string, map_key, truthy
from webapp.core.options import Options
from webapp.core.records import Record
from webapp.tuning import paused_gc

__all__ = ["Assembler", "assemble"]


class Assembler:
    """Feed records one at a time; each `feed` returns the step it made, `finish` the last."""

    def __init__(self, options: Options | None = None) -> None:
        self.options = options or Options()
        self._steps: list[Step] = []
        self._content: list[Block] = []
        self._calls = ToolCalls(self.options, self._push_content, self._anomaly)
        self._text: Block | None = None
        self._thinking: Block | None = None
        self._anomalies: list[Anomaly] = []
        self._started = False
        self._stopped_by: str | None = None
        self._provider_error: str | None = None
        self._finish_reason: Any = None
        self._other_choices: set[Any] = set()
        self._unassembled: list[int] = []
        self._trace: Trace | None = None

    # Feeding.

    def feed(self, record: Record) -> Step:
        """Assemble one record and return its step."""
        if self._trace is not None:
            raise RuntimeError("feed() after finish()")
        step = len(self._steps)
        events: list[Event] = []
        if not self._started:
            self._started = True
            events.append(Event("start"))
        made = self._step(step, record, events)
        self._steps.append(made)
        return made

    def _step(self, step: int, record: Record, events: list[Event]) -> Step:
        if self._stopped_by is not None:
            self._unassembled.append(step)
            return Step(
                step, record.line, record.kind, events=tuple(events), error=record.error,
                note=f"after {self._stopped_by}: a client stops reading there, so this record "
                "is not assembled",
                assembled=False,
            )  # fmt: skip
        if record.kind == "invalid":
            self._anomaly(
                "invalid-chunk", step, None,
                f"line {record.line}: {record.error}. Upstream's client stops the stream here "
                "with an error; streamviz reads on so that you can see past it.",
            )  # fmt: skip
            return Step(step, record.line, "invalid", events=tuple(events), error=record.error)
        if record.kind == "done":
            self._stopped_by = "[DONE]"
            return Step(step, record.line, "done", events=tuple(events), note="end of stream")
        return self._chunk(step, record, events)

    def _chunk(self, step: int, record: Record, events: list[Event]) -> Step:
        chunk = record.value
        line = record.line
        message = provider_error(record)
        if message is not None:
            return self._error_record(step, record, message, events)
        if record.event is not None and record.event.startswith("thread."):
            skipped = f"an SSE event named {record.event!r}: upstream's SDK passes it on wrapped, "
            skipped += "so it is not read as a chunk"
            return Step(step, line, "chunk", events=tuple(events), note=skipped)
        if not isinstance(chunk, dict):
            skipped = f"not a chunk object ({type_name(chunk)}): skipped, as upstream does"
            return Step(step, line, "chunk", events=tuple(events), note=skipped)
        choice, note = self._select(step, chunk.get("choices"))
        if choice is None:
            return Step(step, line, "chunk", events=tuple(events), note=note)
        finish = choice.get("finish_reason")
        if truthy(finish):
            self._finish_reason = finish
        delta = choice.get("delta")
        fragments: tuple[Fragment, ...] = ()
        if isinstance(delta, dict):
            self._reasoning(step, delta, events)
            self._text_delta(step, delta, events)
            fragments = self._calls.fragments(step, delta, events)
        return Step(
            step, line, "chunk", fragments, tuple(events), note=note,
            finish_reason=js_string(finish) if truthy(finish) else None,
        )  # fmt: skip

    def _error_record(self, step: int, record: Record, message: str, events: list[Event]) -> Step:
        self._provider_error = message
        self._stopped_by = "the provider's error"
        self._anomaly(
            "provider-error", step, None,
            f"the provider sent an error: {message}. The stream ends here, as in upstream.",
        )  # fmt: skip
        return Step(step, record.line, "chunk", events=tuple(events), note="provider error")

    def _select(self, step: int, choices: Any) -> tuple[dict[str, Any] | None, str | None]:
        selection = select_choice(choices, self.options.choice)
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

    def _reasoning(self, step: int, delta: dict[str, Any], events: list[Event]) -> None:
        text = reasoning_text(delta)
        if text is not None:
            block = self._ensure("thinking", step, events)
            block.append(step, text)
            events.append(Event("thinking_delta", block.content_index, delta=text))
        if opens_thinking(delta):
            self._ensure("thinking", step, events)

    def _text_delta(self, step: int, delta: dict[str, Any], events: list[Event]) -> None:
        text = content_text(delta)
        if text is not None:
            block = self._ensure("text", step, events)
            block.append(step, text)
            events.append(Event("text_delta", block.content_index, delta=text))

    def _ensure(self, kind: BlockKind, step: int, events: list[Event]) -> Block:
        block = self._text if kind == "text" else self._thinking
        if block is None:
            block = Block(kind, None, step)
            self._push_content(block, step)
            events.append(Event(f"{kind}_start", block.content_index))
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
        """End the stream: fold what is pending, end every block, fire `done` or `error`."""
        if self._trace is not None:
            raise RuntimeError("finish() called twice")
        step = len(self._steps)
        events: list[Event] = [] if self._started else [Event("start")]
        if self._provider_error is not None:
            events.append(Event("error", reason="error", message=self._provider_error))
            note = "the provider's error ended the stream: no block ends, as upstream"
        else:
            self._calls.fold_pending(step, events)
            for block in self._content:
                self._calls.close(step, block, events)
                events.append(self._end_event(block))
            events.append(self._stop_event(step))
            note = None
        if self._unassembled and self._stopped_by == "[DONE]":
            self._anomaly(
                "after-done", self._unassembled[0], None,
                f"{len(self._unassembled)} record(s) after [DONE]: listed, not assembled, "
                "since a client stops reading at [DONE]",
            )  # fmt: skip
        self._calls.final_anomalies(step)
        last = Step(step, None, "end", events=tuple(events), note=note)
        self._steps.append(last)
        self._trace = Trace(
            policy=self.options.policy,
            path=self.options.path,
            server_tools=self.options.server_tools,
            choice=self.options.choice,
            steps=tuple(self._steps),
            blocks=tuple(self._calls.blocks),
            content=tuple(self._content),
            anomalies=tuple(sorted(self._anomalies, key=lambda a: a.step)),
            rule_counts=self._calls.rule_counts,
            stop_reason=self._stop_reason(),
        )
        return last

    def _end_event(self, block: Block) -> Event:
        kind = "toolcall" if block.kind == "toolCall" else block.kind
        return Event(f"{kind}_end", block.content_index, content=block.text)

    def _stop_event(self, step: int) -> Event:
        if self._finish_reason is None:
            self._anomaly(
                "missing-finish-reason", step, None,
                "no chunk carried a finish_reason: upstream ends such a stream with an error",
            )  # fmt: skip
        reason, error = stop(self._finish_reason)
        if error is not None:
            return Event("error", reason="error", message=error)
        return Event("done", reason=reason)

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


def assemble(records: Iterable[Record], options: Options | None = None) -> Trace:
    """Assemble a whole stream in one call."""
    assembler = Assembler(options)
    with paused_gc():
        for record in records:
            assembler.feed(record)
        assembler.finish()
    return assembler.trace


def _hashable(value: Any) -> object:
    return map_key(value) if isinstance(value, str | int | float | bool) else repr(value)
