"""Text views of a trace for the terminal: one formatted line per step, coloured by rule.

Rows are formatted here as plain strings, never as a Rich `Table`, so that a stream of
100,000 steps prints in time linear in its length. Rich only decides whether to colour (its
`Console` knows a terminal from a pipe, and honours `NO_COLOR` and `FORCE_COLOR`) and turns
a style name into escape codes, once per style.
"""

from __future__ import annotations

import builtins
import os
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from webapp.cli.palette import rule_style
from webapp.core.contract.answer import answer_or_none
from webapp.core.jsoncheck import dumps
from webapp.core.jsvalue import js_string, truthy
from webapp.core.records import ReadResult
from webapp.core.rules import RULE_NAMES
from webapp.core.trace import Anomaly, Event, Fragment, Step, Trace
from webapp.core.words import count, quote

if TYPE_CHECKING:
    from rich.console import Console

DELTA_CLIP = 16
ARGUMENTS_CLIP = 60
_FRAGMENTS_WIDTH = 22
_STEP_HEAD = f"{'step':>5} {'line':>5} {'kind':<7} {'fragments':<{_FRAGMENTS_WIDTH}} events"

# Control characters (C0, DEL, C1) are shown escaped: a recorded stream must not be able to
# drive the terminal it is printed on.
_CONTROLS = {code: f"\\x{code:02x}" for code in (*range(0x20), *range(0x7F, 0xA0))}
_CONTROLS.update({ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t"})


class Painter:
    """Wraps text in a style's escape codes when the console colours, else returns it as is."""

    def __init__(self, console: Console | None = None) -> None:
        self._console = console
        self.enabled = console is not None and console.color_system is not None
        self._codes: dict[str, tuple[str, str]] = {}

    def __call__(self, text: str, style: str) -> str:
        """`text` in `style` (a Rich style string such as "bold green")."""
        if not self.enabled or not style or not text:
            return text
        codes = self._codes.get(style)
        if codes is None:
            codes = self._codes[style] = self._make(style)
        return f"{codes[0]}{text}{codes[1]}"

    def _make(self, style: str) -> tuple[str, str]:
        from rich.console import COLOR_SYSTEMS
        from rich.style import Style

        assert self._console is not None
        parsed = Style.parse(style)
        if self._console.no_color:
            parsed = parsed.without_color
        system = COLOR_SYSTEMS.get(self._console.color_system or "")
        rendered = parsed.render("\x00", color_system=system)
        before, _, after = rendered.partition("\x00")
        return before, after


def painter_for(file: TextIO) -> Painter:
    """A painter for `file` that colours when Rich's `Console` would.

    Rich is loaded only when it might colour: `file` is a terminal, or `FORCE_COLOR` or
    `TTY_COMPATIBLE` is set, or this is IPython (a Jupyter notebook colours). Otherwise its
    answer is known, no colour, and a piped command does without it."""
    isatty = getattr(file, "isatty", None)
    try:
        terminal = bool(isatty()) if isatty is not None else False
    except ValueError:  # closed
        terminal = False
    forced = any(name in os.environ for name in ("FORCE_COLOR", "TTY_COMPATIBLE"))
    if not (terminal or forced or hasattr(builtins, "get_ipython")):
        return Painter(None)
    from rich.console import Console

    return Painter(Console(file=file))


def escape(text: str) -> str:
    """Text with control characters escaped, safe to print on a terminal."""
    return text.translate(_CONTROLS)


def shorten(text: str, limit: int = ARGUMENTS_CLIP) -> str:
    """Escaped text, cut to `limit` characters with `...` when longer."""
    shown = escape(text[:limit])
    return shown + "..." if len(text) > limit else shown


def show(value: Any) -> str:
    """A key as read from a fragment (id, name): its text, or "-" when absent or empty."""
    if value is None or value == "":
        return "-"
    return shorten(value if isinstance(value, str) else js_string(value), 40)


def event_text(event: Event) -> str:
    """An event in short form: `toolcall_delta#1 "{\\"ci"`, `done(toolUse)`."""
    head = event.type if event.contentIndex is None else f"{event.type}#{event.contentIndex}"
    if event.delta is not None:
        return f"{head} {quote(event.delta, DELTA_CLIP)}"
    if event.type == "error":
        return f"error({shorten(event.message or event.reason or '', 60)})"
    if event.reason is not None:
        return f"{head}({event.reason})"
    return head


def fragment_text(fragment: Fragment, paint: Painter) -> str:
    """`rule->bN` in the rule's colour, `drop` alone, `(late)` after a late fragment."""
    target = "" if fragment.block is None else f"->b{fragment.block}"
    late = " (late)" if fragment.late else ""
    return paint(f"{fragment.rule}{target}", rule_style(fragment.rule)) + late


def fragments_cell(fragments: Sequence[Fragment], paint: Painter) -> str:
    """The fragments column, padded to its width (padding counts visible characters only)."""
    if not fragments:
        return " " * _FRAGMENTS_WIDTH
    texts = [fragment_text(fragment, paint) for fragment in fragments]
    visible = sum(map(fragment_width, fragments)) + len(fragments) - 1
    return " ".join(texts) + " " * max(0, _FRAGMENTS_WIDTH - visible)


def fragment_width(fragment: Fragment) -> int:
    """How many characters `fragment_text` shows, escape codes aside."""
    width = len(fragment.rule) + (0 if fragment.block is None else 3 + len(str(fragment.block)))
    return width + (7 if fragment.late else 0)


def step_line(step: Step, paint: Painter, codes: Sequence[str] = ()) -> str:
    """One step as one line: step, line, kind, fragments, events, then notes and anomalies."""
    line = "-" if step.line is None else str(step.line)
    kind = paint(f"{step.kind:<7}", "red" if step.kind == "invalid" else "")
    extras = [event_text(event) for event in step.events]
    if step.finish_reason is not None:
        extras.append(paint(f"finish={escape(step.finish_reason)}", "bold"))
    if step.error is not None:
        extras.append(paint(f"! {escape(step.error)}", "red"))
    if step.note is not None:
        extras.append(paint(f"({escape(step.note)})", "dim"))
    extras.extend(paint(f"!{code}", "bold red") for code in codes)
    text = f"{step.step:>5} {line:>5} {kind} {fragments_cell(step.fragments, paint)} "
    text += " ".join(extras)
    return paint(text.rstrip(), "dim") if not step.assembled else text.rstrip()


def input_lines(source: ReadResult | None, paint: Painter) -> Iterator[str]:
    """What was read: the format, how many records, the model and tools, the notes."""
    if source is None:
        return
    parts = [f"{source.format}", f"{len(source.records)} records"]
    if source.model:
        parts.append(f"model {escape(source.model)}")
    if source.tools:
        parts.append(f"{len(source.tools)} declared tools")
    yield f"{paint('input', 'bold')}  " + " | ".join(parts)
    for note in source.notes:
        yield f"       {paint('note:', 'yellow')} {escape(note)}"
    for entry in source.others:
        detail = f": {escape(entry.detail)}" if entry.detail else ""
        label = paint("also in the input, not followed:", "dim")
        yield f"       {label} {escape(entry.label)}{detail}"


def options_line(trace: Trace, paint: Painter) -> str:
    """The policy, path, server tools and choice the trace was assembled with."""
    parts = [f"policy {paint(trace.policy, 'bold')}", f"path {trace.path}"]
    if trace.server_tools:
        parts.append(f"server tools {escape(','.join(trace.server_tools))}")
    parts.append(f"choice {trace.choice}")
    return f"{paint('trace', 'bold')}  " + " | ".join(parts)


def legend_line(paint: Painter) -> str:
    """The rule colours, and how blocks and content indexes are written."""
    rules = " ".join(paint(name, rule_style(name)) for name in RULE_NAMES)
    return f"rules  {rules}   (bN: block number, #N: contentIndex)"


def trace_lines(trace: Trace, source: ReadResult | None, paint: Painter) -> Iterator[str]:
    """The whole text view: header, one line per step, blocks, anomalies, summary."""
    yield from input_lines(source, paint)
    yield options_line(trace, paint)
    yield legend_line(paint)
    yield ""
    yield paint(_STEP_HEAD, "bold")
    by_step = trace.anomalies_by_step()
    for step in trace.steps:
        yield step_line(step, paint, [a.code for a in by_step.get(step.step, ())])
    yield ""
    yield from block_lines(trace, paint)
    yield ""
    yield from anomaly_lines(trace, paint)
    yield ""
    yield from contract_lines(trace, source, paint)
    yield ""
    yield summary_line(trace, paint)


def block_lines(trace: Trace, paint: Painter, title: str = "blocks") -> Iterator[str]:
    """The final blocks: number, contentIndex, id, name, starts, folded, arguments clipped."""
    noun = "candidate" if trace.path == "server-tools" else "tool-call block"
    yield paint(f"{title}: {count(len(trace.blocks), noun)}", "bold")
    for block in trace.content:
        if block.kind != "toolCall":
            yield f"  {block.kind} #{block.content_index}: {quote(block.text, ARGUMENTS_CLIP)}"
    if not trace.blocks:
        return
    ids = [show(block.id) for block in trace.blocks]
    names = [show(block.name) for block in trace.blocks]
    id_width = max(len("id"), *map(len, ids))
    name_width = max(len("name"), *map(len, names))
    yield paint(
        f"  {'block':>5} {'#':>4} {'id':<{id_width}} {'name':<{name_width}} {'starts':>6} "
        f"{'folded':<10} arguments",
        "bold",
    )
    for block, id_text, name in zip(trace.blocks, ids, names, strict=True):
        index = "-" if block.content_index is None else str(block.content_index)
        name_cell = f"{name:<{name_width}}"
        folded = "-" if block.fold is None else f"{block.fold.as_}@{block.fold.step}"
        yield (
            f"  {block.number!s:>5} {index:>4} {id_text:<{id_width}} "
            f"{paint(name_cell, 'bold red') if name == '-' else name_cell} "
            f"{len(block.start_steps):>6} {folded:<10} "
            + (shorten(block.text) if block.text else paint('""', "dim"))
        )
    yield from delivered_lines(trace, paint)


def delivered_lines(trace: Trace, paint: Painter) -> Iterator[str]:
    """What upstream's client would hand each tool: `get_weather would be called with {}`."""
    for block in trace.blocks:
        if block.fold is not None and block.fold.as_ == "server":
            continue
        delivered = block.delivered
        name = show(block.name) if truthy(block.name) else "(no name)"
        value = shorten(dumps(delivered.arguments).decode("utf-8", "replace"))
        line = f"  b{block.number} {name} would be called with {value}"
        if delivered.error is not None:
            yield paint(line, "yellow") + paint(f"  ({shorten(delivered.error, 50)})", "dim")
        else:
            yield line


def anomaly_lines(trace: Trace, paint: Painter) -> Iterator[str]:
    """The anomalies: code, step, input line, block, message; or "none" (in what was recorded,
    when the stream's end was not: those the end decides were not looked for)."""
    if not trace.anomalies:
        unended = trace.contract is not None and trace.contract.end is not None
        if unended:
            yield paint("anomalies: none in what was recorded (its end was not)", "bold")
        else:
            yield paint("anomalies: none", "bold green")
        return
    errors = sum(1 for anomaly in trace.anomalies if anomaly.severity == "error")
    warnings = len(trace.anomalies) - errors
    yield paint(
        f"anomalies: {count(errors, 'error')}, {count(warnings, 'warning')}",
        "bold red" if errors else "bold yellow",
    )
    yield from (f"  {anomaly_row(trace, anomaly, paint)}" for anomaly in trace.anomalies)


def anomaly_row(trace: Trace, anomaly: Anomaly, paint: Painter) -> str:
    """One anomaly as one line."""
    line = step_input_line(trace, anomaly.step)
    block = "-" if anomaly.block is None else f"b{anomaly.block}"
    severity = anomaly.severity
    code = paint(f"{severity:<7} {anomaly.code:<22}", "red" if severity == "error" else "yellow")
    where = f"step {anomaly.step:<5} line {'-' if line is None else line:<5} block {block:<4}"
    return f"{code} {where} {escape(anomaly.message)}"


def contract_lines(trace: Trace, source: ReadResult | None, paint: Painter) -> Iterator[str]:
    """The quirks and the calls a stream means; a non-stream answer's own calls instead (it is
    no stream: no contract of a stream's holds it, and no step of the assembly reads them)."""
    found = None if source is None else answer_or_none(source, trace.choice)
    if found is None:
        yield from quirk_lines(trace, paint)
        return
    calls = "; ".join(f"{show(call.name)} {shorten(call.arguments, 80)}" for call in found.calls)
    finish = f", finish_reason {found.finish_reason}" if found.finish_reason else ""
    yield paint("answer:", "bold") + escape(
        f" a non-stream chat.completion, no stream: {count(len(found.calls), 'call')}"
        f"{': ' + calls if calls else ''}{finish}"
    )


def quirk_lines(trace: Trace, paint: Painter) -> Iterator[str]:
    """Where the provider's stream departs from the contract, and the calls it means."""
    contract = trace.contract
    if contract is None:
        return
    if not contract.quirks and contract.end is not None:  # nothing said of what is missing
        yield paint("quirks: none in what was recorded (its end was not)", "bold")
    elif not contract.quirks:
        yield paint("quirks: none (the stream keeps the contract)", "bold green")
    else:
        yield paint(f"quirks: {len(contract.quirks)}", "bold yellow")
    for found in contract.quirks:
        harm = {"none": "harmless", "loud": "clients complain", "silent": "silent damage"}
        code = paint(f"{found.code:<22}", "yellow" if found.harm != "none" else "dim")
        yield f"{paint('quirk', 'bold')}  {code} {harm[found.harm]:<16} {escape(found.message)}"
    if contract.intended is not None:
        repairs = f" (repaired: {'; '.join(contract.intended.repairs)})"
        line = escape(f"intended: {contract.intended.describe()}")
        yield paint(line, "bold") + escape(repairs if contract.intended.repairs else "")
    else:
        yield paint(f"intended: {contract.no_reading}: ", "bold red") + escape(contract.why or "")


def step_input_line(trace: Trace, step: int) -> int | None:
    """The input line a step's record started on (None for the end step)."""
    return trace.line_of(step)


def summary_line(trace: Trace, paint: Painter) -> str:
    """Steps, fragments per rule, blocks, stop reason and anomalies, in one line."""
    rules = ", ".join(
        f"{paint(name, rule_style(name))} {trace.rule_counts[name]}"
        for name in RULE_NAMES
        if trace.rule_counts.get(name)
    )
    fragments = count(trace.fragment_count, "fragment") + (f" ({rules})" if rules else "")
    anomalies = len(trace.anomalies)
    return (
        f"{paint('summary', 'bold')}  {count(len(trace.steps), 'step')}, {fragments}, "
        f"{count(len(trace.blocks), 'block')}, stop {trace.stop_reason or 'none'}, "
        + paint(count(anomalies, "anomaly", "anomalies"), "bold red" if anomalies else "green")
    )


def check_lines(trace: Trace, source: ReadResult | None, paint: Painter) -> Iterator[str]:
    """What `streamviz check` prints: the anomalies, then the summary."""
    yield from input_lines(source, paint)
    yield options_line(trace, paint)
    yield from anomaly_lines(trace, paint)
    yield from contract_lines(trace, source, paint)
    yield summary_line(trace, paint)
