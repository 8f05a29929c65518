"""Assemble a chat-completions stream into blocks, recording why every fragment went where.

Theory of operation
-------------------
A stream is a sequence of records read by `webapp.readers`: chunks, the `[DONE]` sentinel,
and text that did not parse. Each record is one step. From a chunk we follow the choice whose
`index` is the selected one and read its delta in upstream's order: reasoning, then content,
then `tool_calls`, each entry of which is a *fragment*.

State kept while feeding:
- `content`: the content array (text, thinking and tool-call blocks) in creation order; an
  event's `contentIndex` is a block's position in it.
- `blocks`: tool-call blocks (client path) or candidates (server-tools path), opening order.
- the registry, `by_index` and `by_id`: where each index and id points; the latest
  registration wins, as in upstream pi-ai.
- `open`: blocks in opening order that still take fragments, for continuations.

Each fragment goes through the rules table (`webapp.rules.RULES`) in order: exact-index,
exact-id, continuation, drop, new; policy `exact-key` has no continuation and no drop. On the
server-tools path a folded candidate takes no fragments, and a candidate folds as soon as it
has a name and its arguments parse as one complete JSON value.

After the last record every block ends in content order, then `done` or `error`. Block
histories are append-only, so `Trace.state_at(n)` bisects them instead of storing snapshots.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from webapp.gcpause import paused_gc
from webapp.jsoncheck import Completion, dumps, parses
from webapp.jsvalue import Keys, is_number, js_string, json_piece, map_key, read_keys, truthy
from webapp.records import Record
from webapp.rules import Candidate, Match, Policy, resolve, rules_for
from webapp.trace import Anomaly, Block, BlockKind, Event, Fold, Fragment, Path, Step, Trace

_REASONING_FIELDS = ("reasoning_content", "reasoning", "reasoning_text")
_REASONING_KEYS = frozenset((*_REASONING_FIELDS, "reasoning_details"))
_STOP_REASONS = {
    "stop": "stop",
    "end": "stop",
    "length": "length",
    "tool_calls": "toolUse",
    "function_call": "toolUse",
}


@dataclass(frozen=True, slots=True)
class Options:
    """How to assemble: the policy, the path, the server tools, and the choice to follow."""

    policy: Policy = "adr-0019"
    path: Path = "client"
    server_tools: tuple[str, ...] = ()
    """Exact tool names, or prefixes ending in `*` such as `openrouter:*`."""
    choice: int = 0

    def is_server_tool(self, name: Any) -> bool:
        """Whether a folded candidate with this name is a server-tool call."""
        if not isinstance(name, str) or not name:
            return False  # a nameless candidate is nobody's server tool, whatever the pattern
        return any(
            name.startswith(pattern[:-1]) if pattern.endswith("*") else name == pattern
            for pattern in self.server_tools
        )


class Assembler:
    """Feed records one at a time; each `feed` returns the step it made, `finish` the last."""

    def __init__(self, options: Options | None = None) -> None:
        self.options = options or Options()
        self._rules = rules_for(self.options.policy)
        self._server = self.options.path == "server-tools"
        self._steps: list[Step] = []
        self._content: list[Block] = []
        self._blocks: list[Block] = []
        self._by_index: dict[object, Block] = {}
        self._by_id: dict[object, Block] = {}
        self._open: list[Block] = []
        self._completions: dict[int, Completion] = {}
        self._freeform: dict[int, bool] = {}
        """Blocks taking `custom.input` (freeform tools), by number: whether their JSON opened."""
        self._text: Block | None = None
        self._thinking: Block | None = None
        self._anomalies: list[Anomaly] = []
        self._rule_counts: Counter[str] = Counter()
        self._started = False
        self._stopped_by: str | None = None
        self._provider_error: str | None = None
        self._finish_reason: Any = None
        self._other_choices: set[Any] = set()
        self._unassembled: list[int] = []
        self._trace: Trace | None = None

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

    # Feeding.

    def feed(self, record: Record) -> Step:
        """Assemble one record and return its step."""
        if self._trace is not None:
            raise RuntimeError("feed() after finish()")
        number = len(self._steps)
        events: list[Event] = []
        if not self._started:
            self._started = True
            events.append(Event("start"))
        step = self._step(number, record, events)
        self._steps.append(step)
        return step

    def _step(self, number: int, record: Record, events: list[Event]) -> Step:
        if self._stopped_by is not None:
            self._unassembled.append(number)
            return Step(
                number, record.line, record.kind, events=tuple(events), error=record.error,
                note=f"after {self._stopped_by}: a client stops reading there, so this record "
                "is not assembled",
                assembled=False,
            )  # fmt: skip
        if record.kind == "invalid":
            self._anomaly(
                "invalid-chunk", number, None,
                f"line {record.line}: {record.error}. Upstream's client stops the stream here "
                "with an error; streamviz reads on so that you can see past it.",
            )  # fmt: skip
            return Step(number, record.line, "invalid", events=tuple(events), error=record.error)
        if record.kind == "done":
            self._stopped_by = "[DONE]"
            return Step(number, record.line, "done", events=tuple(events), note="end of stream")
        return self._chunk(number, record, events)

    def _chunk(self, number: int, record: Record, events: list[Event]) -> Step:
        chunk = record.value
        line = record.line
        if record.event == "error" or (isinstance(chunk, dict) and truthy(chunk.get("error"))):
            return self._error_record(number, record, events)
        if record.event is not None and record.event.startswith("thread."):
            skipped = f"an SSE event named {record.event!r}: upstream's SDK passes it on wrapped, "
            skipped += "so it is not read as a chunk"
            return Step(number, line, "chunk", events=tuple(events), note=skipped)
        if not isinstance(chunk, dict):
            skipped = f"not a chunk object ({_type_name(chunk)}): skipped, as upstream does"
            return Step(number, line, "chunk", events=tuple(events), note=skipped)
        choice, note = self._select(number, chunk.get("choices"))
        if choice is None:
            return Step(number, line, "chunk", events=tuple(events), note=note)
        finish = choice.get("finish_reason")
        if truthy(finish):
            self._finish_reason = finish
        delta = choice.get("delta")
        fragments: tuple[Fragment, ...] = ()
        if isinstance(delta, dict):
            self._reasoning(number, delta, events)
            self._text_delta(number, delta, events)
            fragments = self._tool_calls(number, delta, events)
        return Step(
            number, line, "chunk", fragments, tuple(events), note=note,
            finish_reason=js_string(finish) if truthy(finish) else None,
        )  # fmt: skip

    def _error_record(self, number: int, record: Record, events: list[Event]) -> Step:
        chunk = record.value
        error = chunk.get("error") if isinstance(chunk, dict) else None
        payload = error if error is not None else chunk
        if isinstance(payload, dict) and isinstance(payload.get("message"), str):
            message = payload["message"]
        elif isinstance(payload, str):
            message = payload
        else:
            message = dumps(payload).decode("utf-8")
        self._provider_error = message
        self._stopped_by = "the provider's error"
        self._anomaly(
            "provider-error", number, None,
            f"the provider sent an error: {message}. The stream ends here, as in upstream.",
        )  # fmt: skip
        return Step(number, record.line, "chunk", events=tuple(events), note="provider error")

    def _select(self, number: int, choices: Any) -> tuple[dict[str, Any] | None, str | None]:
        if type(choices) is list and len(choices) == 1 and type(choices[0]) is dict:
            index = choices[0].get("index", 0)  # the usual case: one choice, the one followed
            if type(index) is int and index == self.options.choice:
                return choices[0], None
        if not isinstance(choices, list):
            return None, "no choices array: skipped, as upstream does"
        if not choices:
            return None, "no choices (a usage-only chunk?): nothing to assemble"
        chosen: dict[str, Any] | None = None
        others: list[Any] = []
        for position, choice in enumerate(choices):
            if not isinstance(choice, dict):
                continue
            index = choice.get("index", position)
            if is_number(index) and index == self.options.choice and chosen is None:
                chosen = choice
            else:
                others.append(index)
        new_others = [index for index in others if _hashable(index) not in self._other_choices]
        if new_others:
            self._other_choices.update(_hashable(index) for index in new_others)
            self._anomaly(
                "other-choices", number, None,
                f"choices with index {', '.join(map(js_string, new_others))} are present and "
                f"ignored (following choice {self.options.choice}). Upstream reads choices[0] "
                "whatever its index, which mixes the choices of an n > 1 stream.",
            )  # fmt: skip
        if chosen is None:
            return None, f"no choice with index {self.options.choice} in this chunk"
        return chosen, None

    def _reasoning(self, number: int, delta: dict[str, Any], events: list[Event]) -> None:
        if _REASONING_KEYS.isdisjoint(delta):
            return
        for name in _REASONING_FIELDS:
            value = delta.get(name)
            if isinstance(value, str) and value:
                block = self._ensure("thinking", number, events)
                block.append(number, value)
                events.append(Event("thinking_delta", block.content_index, delta=value))
                break
        details = delta.get("reasoning_details")
        if isinstance(details, list) and any(map(_is_reasoning_detail, details)):
            self._ensure("thinking", number, events)

    def _text_delta(self, number: int, delta: dict[str, Any], events: list[Event]) -> None:
        content = delta.get("content")
        if isinstance(content, str | list) and len(content) > 0:
            text = js_string(content)
            block = self._ensure("text", number, events)
            block.append(number, text)
            events.append(Event("text_delta", block.content_index, delta=text))

    def _ensure(self, kind: BlockKind, number: int, events: list[Event]) -> Block:
        block = self._text if kind == "text" else self._thinking
        if block is None:
            block = Block(kind, None, number)
            self._push_content(block, number)
            events.append(Event(f"{kind}_start", block.content_index))
            if kind == "text":
                self._text = block
            else:
                self._thinking = block
        return block

    def _push_content(self, block: Block, number: int) -> None:
        block.content_index = len(self._content)
        block.content_step = number
        self._content.append(block)

    # Tool-call fragments.

    def _tool_calls(
        self, number: int, delta: dict[str, Any], events: list[Event]
    ) -> tuple[Fragment, ...]:
        calls = delta.get("tool_calls")
        if not truthy(calls):
            return ()
        if not isinstance(calls, list):
            self._anomaly(
                "malformed-delta", number, None,
                f"delta.tool_calls is {_type_name(calls)}, not an array: ignored "
                "(upstream would fail or misread it)",
            )  # fmt: skip
            return ()
        return tuple(
            self._fragment(number, position, raw, events) for position, raw in enumerate(calls)
        )

    def _fragment(self, number: int, position: int, raw: Any, events: list[Event]) -> Fragment:
        keys = read_keys(raw if isinstance(raw, dict) else {})
        oddities = keys.oddities
        if not isinstance(raw, dict):
            oddities = (
                f"the fragment is {_type_name(raw)}, not an object: read as one with no keys"
                + (" (upstream's client fails on it with a TypeError)" if raw is None else ""),
            )
        match = resolve(keys, self, self._rules)
        self._rule_counts[match.rule] += 1
        late = self._server and self._names_folded(keys)
        if oddities:
            self._anomaly("malformed-fragment", number, None, "; ".join(oddities))
        if match.rule == "drop":
            if keys.arguments:
                self._anomaly(
                    "dropped-fragment", number, None,
                    f"fragment {position} carried arguments {_clip(keys.arguments)} and was "
                    "dropped: no block was open to continue",
                )  # fmt: skip
            block = None
        elif match.rule == "new":
            block = self._open_block(number, keys, events)
        else:
            block = _block(match)
            self._register(number, block, keys, match)
        appended = "" if block is None else self._land(number, block, keys, events)
        if late:
            self._anomaly(
                "late-fragment", number, None if block is None else block.number,
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

    def _open_block(self, number: int, keys: Keys, events: list[Event]) -> Block:
        block = Block("toolCall", len(self._blocks), number)
        self._blocks.append(block)
        self._open.append(block)
        if keys.id is not None:
            block.ids.append((number, keys.id))
            self._alias(number, block, keys.id)
        if keys.raw_name is not None and keys.raw_name != "":
            block.names.append((number, keys.raw_name))  # upstream opens with `name ?? ""`
        if keys.index is not None:
            self._by_index[map_key(keys.index)] = block
            block.indexes.append((number, keys.index))
        if keys.custom_only:
            self._freeform[block.number or 0] = False
        if self._server:
            self._completions[block.number or 0] = Completion()
        else:
            self._push_content(block, number)
            block.start_steps.append(number)
            events.append(Event("toolcall_start", block.content_index))
        return block

    def _register(self, number: int, block: Block, keys: Keys, match: Match) -> None:
        if keys.custom_only and (block.number or 0) not in self._freeform:
            self._freeform[block.number or 0] = False  # upstream switches it to custom input
        if match.rule != "continuation" and keys.index is not None and not block.indexes:
            self._by_index[map_key(keys.index)] = block
            block.indexes.append((number, keys.index))
        if keys.id is not None:
            if match.rule == "exact-index" and truthy(block.id) and block.id != keys.id:
                self._anomaly(
                    "id-conflict", number, block.number,
                    f"index {js_string(keys.index)} names block #{block.number} (id "
                    f"{js_string(block.id)}) but the fragment carries id {js_string(keys.id)}; "
                    "that id now points at this block too",
                )  # fmt: skip
            self._alias(number, block, keys.id)
            if not truthy(block.id):
                block.ids.append((number, keys.id))
        if keys.name is not None:
            if not truthy(block.name):
                block.names.append((number, keys.name))
            elif keys.name != block.name:
                self._anomaly(
                    "name-conflict", number, block.number,
                    f"block #{block.number} is named {js_string(block.name)}; a fragment "
                    f"names it {js_string(keys.name)}: the first name is kept",
                )  # fmt: skip

    def _alias(self, number: int, block: Block, call_id: Any) -> None:
        self._by_id[map_key(call_id)] = block
        block.aliases.append((number, call_id))

    def _land(self, number: int, block: Block, keys: Keys, events: list[Event]) -> str:
        """Append the fragment's text to the block; returns the text appended."""
        piece = keys.arguments
        if (block.number or 0) in self._freeform:
            piece = self._freeform_piece(block, keys.custom_input, closing=False)
        self._append(number, block, piece, events)
        server_ready = self._server and self._completions[block.number or 0].complete
        if server_ready and truthy(block.name):
            self._fold(number, block, events)
        return piece

    def _append(self, number: int, block: Block, piece: str, events: list[Event]) -> None:
        if piece:
            block.append(number, piece)
        if self._server:
            self._completions[block.number or 0].feed(piece)
        else:
            events.append(Event("toolcall_delta", block.content_index, delta=piece))

    def _freeform_piece(self, block: Block, text: str, *, closing: bool) -> str:
        """Upstream's grammar-tool input as JSON text: `{"input":"` once, escaped text, `"}`."""
        number = block.number or 0
        if not text and not closing:
            return ""
        opening = "" if self._freeform[number] else '{"input":"'
        self._freeform[number] = True
        return opening + json_piece(text) + ('"}' if closing else "")

    def _fold(self, number: int, block: Block, events: list[Event]) -> None:
        server = self.options.is_server_tool(block.name)
        block.fold = Fold(number, "server" if server else "client")
        self._completions.pop(block.number or 0, None)
        if server:
            return
        self._push_content(block, number)
        block.start_steps.append(number)
        events.append(Event("toolcall_start", block.content_index))
        events.append(Event("toolcall_delta", block.content_index, delta=block.text))

    # Finishing.

    def finish(self) -> Step:
        """End the stream: fold what is pending, end every block, fire `done` or `error`."""
        if self._trace is not None:
            raise RuntimeError("finish() called twice")
        number = len(self._steps)
        events: list[Event] = [] if self._started else [Event("start")]
        if self._provider_error is not None:
            events.append(Event("error", reason="error", message=self._provider_error))
            note = "the provider's error ended the stream: no block ends, as upstream"
        else:
            for block in self._blocks:
                if block.fold is None and self._server:
                    self._close_freeform(number, block, events)
                    self._fold(number, block, events)
            for block in self._content:
                if not self._server:
                    self._close_freeform(number, block, events)
                events.append(self._end_event(block))
            events.append(self._stop_event(number))
            note = None
        if self._unassembled and self._stopped_by == "[DONE]":
            self._anomaly(
                "after-done", self._unassembled[0], None,
                f"{len(self._unassembled)} record(s) after [DONE]: listed, not assembled, "
                "since a client stops reading at [DONE]",
            )  # fmt: skip
        self._final_anomalies(number)
        step = Step(number, None, "end", events=tuple(events), note=note)
        self._steps.append(step)
        self._trace = Trace(
            policy=self.options.policy,
            path=self.options.path,
            server_tools=self.options.server_tools,
            choice=self.options.choice,
            steps=tuple(self._steps),
            blocks=tuple(self._blocks),
            content=tuple(self._content),
            anomalies=tuple(sorted(self._anomalies, key=lambda a: a.step)),
            rule_counts=self._rule_counts,
            stop_reason=_stop_reason(self._finish_reason, self._provider_error),
        )
        return step

    def _close_freeform(self, number: int, block: Block, events: list[Event]) -> None:
        if block.kind == "toolCall" and (block.number or 0) in self._freeform:
            closing = self._freeform_piece(block, "", closing=True)
            self._append(number, block, closing, events)

    def _end_event(self, block: Block) -> Event:
        kind = "toolcall" if block.kind == "toolCall" else block.kind
        return Event(f"{kind}_end", block.content_index, content=block.text)

    def _stop_event(self, number: int) -> Event:
        reason = self._finish_reason
        if reason is None:
            self._anomaly(
                "missing-finish-reason", number, None,
                "no chunk carried a finish_reason: upstream ends such a stream with an error",
            )  # fmt: skip
            return Event("error", reason="error", message="Stream ended without finish_reason")
        stop = _STOP_REASONS.get(reason) if isinstance(reason, str) else None
        if stop is None:
            message = f"Provider finish_reason: {js_string(reason)}"
            return Event("error", reason="error", message=message)
        return Event("done", reason=stop)

    def _final_anomalies(self, number: int) -> None:
        for block in self._blocks:
            server_call = block.fold is not None and block.fold.as_ == "server"
            if not server_call and not truthy(block.name):
                self._anomaly(
                    "phantom-call", block.opened_step, block.number,
                    f"block #{block.number} ends with no name: a phantom call"
                    + (f" holding {_clip(block.text)}" if block.text else ""),
                )  # fmt: skip
            text = block.text
            if text and not parses(text):
                self._anomaly(
                    "invalid-arguments", number, block.number,
                    f"block #{block.number}'s final arguments are not valid JSON: {_clip(text)}",
                )  # fmt: skip

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


def _block(match: Match) -> Block:
    assert isinstance(match.block, Block)
    return match.block


def _stop_reason(finish_reason: Any, provider_error: str | None) -> str | None:
    if provider_error is not None:
        return "error"
    if finish_reason is None:
        return None
    if isinstance(finish_reason, str):
        return _STOP_REASONS.get(finish_reason, "error")
    return "error"


def _is_reasoning_detail(detail: Any) -> bool:
    """Upstream's `isOpenAIReasoningDetail`: such a detail opens the thinking block."""
    if not isinstance(detail, dict):
        return False
    if "id" in detail and not (detail["id"] is None or isinstance(detail["id"], str)):
        return False
    if "format" in detail and not isinstance(detail["format"], str):
        return False
    if "index" in detail and not is_number(detail["index"]):
        return False
    kind = detail.get("type")
    if kind == "reasoning.summary":
        return isinstance(detail.get("summary"), str)
    if kind == "reasoning.encrypted":
        return isinstance(detail.get("data"), str)
    if kind == "reasoning.text":
        signature = detail.get("signature")
        return isinstance(detail.get("text"), str) and (
            signature is None or isinstance(signature, str)
        )
    return False


def _hashable(value: Any) -> object:
    return map_key(value) if isinstance(value, str | int | float | bool) else repr(value)


def _type_name(value: Any) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    if isinstance(value, int | float) and not isinstance(value, bool):
        return "a number"
    return names.get(type(value), type(value).__name__)


def _clip(text: str, limit: int = 60) -> str:
    shown = text if len(text) <= limit else text[: limit - 3] + "..."
    return repr(shown)
