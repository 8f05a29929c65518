"""The quirk table: every way a stream's wire is known to depart from the contract, as data.

One row per quirk, like the rules: its code, what the wire shows, the contract clause it breaks,
how it is detected, what the major clients typically do with it, how much harm that does, and
where it has been seen (public threads by repository and number, and recordings). A row's
detector is an `entry` test (one `delta.tool_calls` entry, as `webapp.core.contract.wire` read
it), a `whole` test (the whole wire once read), or both. The pages, the CLI, the report and the
tests all read this same table.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from webapp.core.contract.wire import UNSET, Entry, EntryTest, Marks, Part, Wire
from webapp.core.jsoncheck import classify, cut_short, parses
from webapp.core.jsvalue import js_string
from webapp.core.words import count, excerpt

Scope = Literal["call", "stream"]
Harm = Literal["none", "loud", "silent"]
"""What the major clients do with a quirk: nothing wrong (`none`); some raise or flag it
(`loud`); some hand the application other calls or arguments and say nothing (`silent`)."""
HARMS: tuple[Harm, ...] = ("none", "loud", "silent")

CLAUSES = {
    "index": "every tool_calls entry carries an integer index, one call per index, dense from 0",
    "header": "id and function.name come once, on a call's first entry; later entries carry "
    "only function.arguments pieces",
    "arguments": "the arguments pieces are strings that concatenate to one JSON object",
    "finish": "exactly one chunk carries finish_reason, after the last content, and it is "
    "tool_calls when calls were made",
    "shape": "every chunk carries a choices array",
}
"""The contract a stream is held to (spec verdict.md section 1), clause by clause."""


@dataclass(frozen=True, slots=True)
class Seen:
    """A public place the quirk was seen: who sent it, and the thread or recording showing it."""

    by: str
    thread: str | None = None
    """`owner/repo #N` or `owner/repo PR #N`; None for a sighting without a thread."""
    url: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"by": self.by, "thread": self.thread, "url": self.url}


def issue(by: str, repo: str, number: int) -> Seen:
    """Seen in an issue (GitHub redirects /issues/N to a pull request's page too)."""
    return Seen(by, f"{repo} #{number}", f"https://github.com/{repo}/issues/{number}")


def pull(by: str, repo: str, number: int) -> Seen:
    """Seen in (or fixed by) a pull request."""
    return Seen(by, f"{repo} PR #{number}", f"https://github.com/{repo}/pull/{number}")


def recorded(by: str, repo: str, commit: str, path: str) -> Seen:
    """Seen in a recording a public repository keeps (tests/corpus/real has a copy)."""
    return Seen(by, f"{repo} {path.rsplit('/', 1)[-1]}",
                f"https://github.com/{repo}/blob/{commit}/{path}")  # fmt: skip


@dataclass(frozen=True, slots=True)
class Hit:
    """What a detector found: where, on which blocks, how often, in words."""

    steps: tuple[int, ...]
    blocks: tuple[int, ...]
    count: int
    message: str
    harm: Harm | None = None
    """This instance's harm when it is known to be less than the row's (late whitespace)."""


WholeTest = Callable[[Wire], Iterator[Hit]]


@dataclass(frozen=True, slots=True)
class Quirk:
    """One row of the table."""

    code: str
    meaning: str
    """What the wire shows, in one line."""
    clause: str
    """The key of the contract clause it breaks (`CLAUSES`)."""
    scope: Scope
    """Reported once per call (block) or once per stream."""
    harm: Harm
    typically: str
    """What the major clients do with it (checked against the lenses by the tests)."""
    seen: tuple[Seen, ...]
    says: str = ""
    """What the provider does, after its name: "omits `index` on tool_calls entries"."""
    shows: str = ""
    """For an entry test: what the entries it marks do, after "N entries" ("carry no index")."""
    entry: EntryTest | None = None
    whole: WholeTest | None = None
    at_end: bool = False
    """Judged on how the stream ends (no finish_reason, a call never named, arguments never
    finished): withheld when the stream's end was not recorded (`Contract.without_end`)."""


@dataclass(frozen=True, slots=True)
class Found:
    """A quirk found in a stream: the table's row, where it shows, and what it says."""

    code: str
    steps: tuple[int, ...]
    blocks: tuple[int, ...]
    count: int
    message: str
    harm: Harm

    @property
    def quirk(self) -> Quirk:
        return QUIRK[self.code]

    def to_json(self) -> dict[str, Any]:
        """`{"code", "steps", "blocks", "count", "message", "harm", "seen"}`."""
        return {
            "code": self.code,
            "steps": list(self.steps),
            "blocks": list(self.blocks),
            "count": self.count,
            "message": self.message,
            "harm": self.harm,
            "seen": [seen.to_json() for seen in self.quirk.seen],
        }


# Entry tests: one entry, as read and as placed; a few words when the quirk shows on it.


def _missing_index(entry: Entry) -> str | None:
    raw = entry.raw
    if not isinstance(raw, dict):
        return None
    if "index" not in raw:
        return ""
    index = raw["index"]
    if index is None:
        return "index null"
    if type(index) is not int:
        return f"index {_show(index)} is not an integer"
    return None


def _bare(entry: Entry) -> str | None:
    return "" if entry.rule == "continuation" and entry.keys.index is None else None


def _headerless(entry: Entry) -> str | None:
    keys = entry.keys
    if not keys.arguments:
        return None
    if entry.rule == "continuation" and keys.index is not None:
        return f"index {_show(keys.index)} names no call, and no id or name opens one"
    if entry.rule == "drop" and keys.arguments:
        return f"arguments {excerpt(keys.arguments, 30)} before any call opened"
    return None


def _empty_id(entry: Entry) -> str | None:
    return "" if isinstance(entry.raw, dict) and entry.raw.get("id") == "" else None


def _empty_name(entry: Entry) -> str | None:
    return "" if _function(entry).get("name") == "" else None


def _repeated_id(entry: Entry) -> str | None:
    if entry.fresh or entry.keys.id is None or entry.keys.id != entry.prior_id:
        return None
    return ""


def _repeated_name(entry: Entry) -> str | None:
    if entry.fresh or entry.keys.name is None or entry.keys.name != entry.prior_name:
        return None
    return ""


def _shared_index(entry: Entry) -> str | None:
    if entry.rule != "exact-index" or not entry.new_id:
        return None
    return f"id {_show(entry.keys.id)}"


def _after_finish(entry: Entry) -> str | None:
    return "" if entry.finished else None


def _not_from_zero(entry: Entry) -> str | None:
    block, index = entry.block, entry.keys.index
    if entry.rule != "new" or block is None or block.number != 0 or index is None:
        return None
    return None if index == 0 else f"the first call is on index {_show(index)}"


def _wrong_type(entry: Entry) -> str | None:
    raw = entry.raw
    if not isinstance(raw, dict):
        return f"the entry is {_type(raw)}, not an object"
    function = raw.get("function")
    if function is not None and not isinstance(function, dict):
        return f"function is {_type(function)}"
    for key, value in (("id", raw.get("id")), ("name", _function(entry).get("name"))):
        if value is not None and not isinstance(value, str):
            return f"{key} is {_type(value)}"
    arguments = _function(entry).get("arguments")
    if arguments is not None and not isinstance(arguments, str):
        return f"arguments is {_type(arguments)}, read as {excerpt(js_string(arguments), 30)}"
    return None


def _function(entry: Entry) -> dict[str, Any]:
    raw = entry.raw
    function = raw.get("function") if isinstance(raw, dict) else None
    return function if isinstance(function, dict) else {}


# Whole tests: the wire once read.


def _cumulative(wire: Wire) -> Iterator[Hit]:
    for part in wire.parts:
        runs = restating_runs(part)
        if runs is None:
            continue
        steps = tuple(part.steps[k] for start, end in runs for k in range(start + 1, end + 1))
        shown = ", ".join(f"steps {part.steps[s]}-{part.steps[e]}" for s, e in runs[:3])
        yield Hit(
            steps, (part.block,), len(steps),
            f"{_label(part)}: {count(len(steps), 'piece')} restate the arguments so far and add "
            f"to them ({shown}): concatenated they are not JSON; the last restatement is the "
            "arguments",
        )  # fmt: skip


def _resent(wire: Wire) -> Iterator[Hit]:
    for part in wire.parts:
        if part.resent:
            steps = tuple(part.resent)
            yield Hit(
                steps, (part.block,), len(steps),
                f"{_label(part)}: a piece repeats the whole arguments so far ({_steps(steps)}); "
                "appended, they would be the arguments twice",
            )  # fmt: skip


def _after_complete(wire: Wire) -> Iterator[Hit]:
    for part in wire.parts:
        if not part.after and not part.trailing:
            continue
        steps = tuple(sorted([*part.trailing, *(step for step, _ in part.after)]))
        if not part.after:
            yield Hit(
                steps, (part.block,), len(steps),
                f"{_label(part)}: whitespace came after its arguments were one complete JSON "
                f"value ({_steps(steps)}): harmless, ignored",
                "none",
            )  # fmt: skip
            continue
        step, piece = part.after[0]
        yield Hit(
            steps, (part.block,), len(steps),
            f"{_label(part)}: its arguments were one complete JSON value when step {step} sent "
            f"more, {excerpt(piece, 40)}",
        )  # fmt: skip


def _late(wire: Wire) -> Iterator[Hit]:
    marks = wire.marks.get("call-after-finish", {})
    steps = sorted({*wire.late_text, *(step for found in marks.values() for step in found.steps)})
    if not steps:
        return
    first = wire.finishes[0][0]
    blocks = tuple(sorted(block for block in marks if block is not None))
    entries = sum(found.count for found in marks.values())
    what = [count(entries, "tool-call entry", "tool-call entries")] if entries else []
    if wire.late_text:
        what.append(count(len(wire.late_text), "text delta"))
    yield Hit(
        tuple(steps[: wire.steps_kept]), blocks, entries + len(wire.late_text),
        f"{' and '.join(what)} came after finish_reason (step {first}): {_steps(steps)}",
    )  # fmt: skip


def _repeated_finish(wire: Wire) -> Iterator[Hit]:
    if len(wire.finishes) > 1:
        steps = tuple(step for step, _ in wire.finishes)
        reasons = ", ".join(sorted({reason for _, reason in wire.finishes}))
        yield Hit(
            steps[: wire.steps_kept], (), len(steps),
            f"{count(len(steps), 'chunk')} carry finish_reason ({reasons}): {_steps(steps)}",
        )  # fmt: skip


def _no_finish(wire: Wire) -> Iterator[Hit]:
    if not wire.finishes:
        how = f", before {wire.ended}" if wire.ended == "a provider error" else ""
        yield Hit((wire.steps,), (), 1, f"no chunk carries finish_reason{how}")


def _stop_with_calls(wire: Wire) -> Iterator[Hit]:
    stops = tuple(step for step, reason in wire.finishes if reason == "stop")
    if stops and wire.parts:
        yield Hit(
            stops, (), len(stops),
            f"finish_reason is stop ({_steps(stops)}) though "
            f"{count(len(wire.parts), 'call was', 'calls were')} made",
        )  # fmt: skip


def _no_choices(wire: Wire) -> Iterator[Hit]:
    if wire.no_choices:
        steps = tuple(wire.no_choices)
        yield Hit(
            steps[: wire.steps_kept], (), len(steps),
            f"{count(len(steps), 'chunk')} without a choices array: {_steps(steps)}",
        )  # fmt: skip


def _wrong_types(wire: Wire) -> Iterator[Hit]:
    """Entries of the wrong type, per block; those on no block and the `delta.tool_calls`
    that are not arrays are one hit (both are "no call")."""
    nowhere: list[Hit] = []
    for hit in _per_block(
        QUIRK["non-string-arguments"], wire.marks.get("non-string-arguments"), wire
    ):
        if hit.blocks:
            yield hit
        else:
            nowhere.append(hit)
    if wire.not_a_list:
        steps = tuple(wire.not_a_list)
        nowhere.append(Hit(
            steps[: wire.steps_kept], (), len(steps),
            f"delta.tool_calls is not an array ({_steps(steps)}): clients read no call from it",
        ))  # fmt: skip
    if len(nowhere) == 1:
        yield nowhere[0]
    elif nowhere:
        steps = tuple(sorted({step for hit in nowhere for step in hit.steps}))
        yield Hit(
            steps[: wire.steps_kept], (), sum(hit.count for hit in nowhere),
            "; ".join(hit.message for hit in nowhere),
        )  # fmt: skip


def _empty_ids(wire: Wire) -> Iterator[Hit]:
    for hit in _per_block(QUIRK["empty-id"], wire.marks.get("empty-id"), wire):
        if hit.blocks and wire.blocks[hit.blocks[0]].id is None:
            yield Hit(hit.steps, hit.blocks, hit.count,
                      f"{hit.message}; the call never gets an id (LiteLLM drops such a call)",
                      "silent")  # fmt: skip
        else:
            yield hit


def _missing_name(wire: Wire) -> Iterator[Hit]:
    for part in wire.parts:
        if part.name is None:
            yield Hit(
                (part.opened,),
                (part.block,),
                1,
                f"{_label(part)}: a call opened at step {part.opened} never got a name",
            )


def _not_json(wire: Wire) -> Iterator[Hit]:
    if wire.guesses:
        return  # which call a piece belongs to is a guess: its arguments are not the wire's
    glued = wire.marks.get("headerless-entry", {})
    stopped = stopped_in(wire)
    for part in wire.parts:
        if part.freeform or part.after or part.block in glued:
            continue  # more came after the value closed, or pieces of no call: said already
        if stopped is not None and part is stopped[1]:
            continue  # cut where the finish_reason says the generation stopped: no quirk
        text = repaired_text(part)
        if not text.strip(" \t\n\r"):
            continue
        parsed = classify(text)
        if parsed.state == "complete" and isinstance(parsed.value, dict):
            continue
        what = {
            "partial": "are cut short",
            "invalid": "are not valid JSON",
            "complete": f"are {_type(parsed.value)}, not an object",
        }.get(parsed.state, "are not JSON")
        last = part.steps[-1] if part.steps else part.opened
        yield Hit(
            (last,), (part.block,), 1,
            f"{_label(part)}: its arguments {what}: {excerpt(text, 60)}",
        )  # fmt: skip


# What the detectors share.


def restating_runs(part: Part) -> list[tuple[int, int]] | None:
    """The part's runs of pieces that each restate the one before (piece k starts with piece
    k-1 and is longer), as (first, last) positions, when the part restates its arguments:
    some run restates at least twice in a row, and the pieces concatenated are not JSON."""
    if part.runs is UNSET:
        part.runs = _restating_runs(part)
    runs: list[tuple[int, int]] | None = part.runs
    return runs


def _restating_runs(part: Part) -> list[tuple[int, int]] | None:
    pieces = part.pieces
    if part.freeform or len(pieces) < 3 or part.complete:
        return None
    runs: list[tuple[int, int]] = []
    start = 0
    for k in range(1, len(pieces) + 1):
        if (
            k < len(pieces)
            and len(pieces[k]) > len(pieces[k - 1])
            and (pieces[k].startswith(pieces[k - 1]))
        ):
            continue
        if k - 1 > start:
            runs.append((start, k - 1))
        start = k
    if not any(end - start >= 2 for start, end in runs):
        return None
    return runs


STOPS = {
    "length": ("the generation stopped at its token limit", ": raise the request's max_tokens"),
    "content_filter": ("the provider's content filter stopped the generation", ""),
}
"""The finish_reasons that say the generation stopped before it was done: what they say, and
what to do about it."""


def stopped_in(wire: Wire) -> tuple[str, Part] | None:
    """Why the generation stopped inside its last call's arguments, and that call, when the
    stream's finish_reason says it stopped early (`STOPS`: the token limit, the content
    filter) and the call opened last holds the start of a JSON value, cut where it stopped:
    the finish_reason says what cut it, so that is no quirk of the provider's. None otherwise
    (a finish_reason of another kind, arguments that are no JSON's start, nothing cut)."""
    if wire.stopped is UNSET:
        wire.stopped = _stopped_in(wire)
    stopped: tuple[str, Part] | None = wire.stopped
    return stopped


def _stopped_in(wire: Wire) -> tuple[str, Part] | None:
    if not wire.finishes or not wire.parts:
        return None
    step, reason = wire.finishes[-1]
    words = STOPS.get(reason)
    part = wire.parts[-1]
    if words is None or part.freeform or part.after or part.opened > step:
        return None
    text = repaired_text(part)
    if not text.strip(" \t\n\r") or classify(text).state != "partial":
        return None
    said, remedy = words
    why = (f'{said} (finish_reason "{reason}") in {_label(part)}\'s arguments, cut at '
           f"{excerpt(text, 40)}{remedy}")  # fmt: skip
    return why, part


def repaired_text(part: Part) -> str:
    """The part's arguments with the restating quirks repaired: each run of restatements
    kept as its last (longest) piece; resends and late whitespace were never kept."""
    runs = restating_runs(part)
    if runs is None:
        return part.text()
    out: list[str] = []
    position = 0
    for start, end in runs:
        out.extend(part.pieces[position:start])
        out.append(part.pieces[end])
        position = end + 1
    out.extend(part.pieces[position:])
    return "".join(out)


def repair_holds(text: str) -> bool:
    """Whether a repaired text is one JSON value, or the start of one (a stream cut short)."""
    return parses(text) or cut_short(text)


def _per_block(quirk: Quirk, marks: dict[int | None, Marks] | None, wire: Wire) -> Iterator[Hit]:
    """A hit per block (and one for entries on no block) from an entry test's marks."""
    if not marks:
        return
    if quirk.scope == "stream":
        steps = sorted({step for found in marks.values() for step in found.steps})
        blocks = tuple(sorted(block for block in marks if block is not None))
        total = sum(found.count for found in marks.values())
        details = [detail for found in marks.values() for detail in found.details][:3]
        yield Hit(tuple(steps), blocks, total, _marked(quirk, total, details, steps))
        return
    for block, found in marks.items():
        where = "no call" if block is None else _label(wire.blocks[block].parts[0])
        yield Hit(
            tuple(found.steps), () if block is None else (block,), found.count,
            f"{where}: {_marked(quirk, found.count, found.details, found.steps)}",
        )  # fmt: skip


def _marked(quirk: Quirk, total: int, details: Sequence[str], steps: Sequence[int]) -> str:
    said = f"; {'; '.join(details)}" if details else ""
    return f"entries {quirk.shows} ({count(total, 'entry', 'entries')}{said}: {_steps(steps)})"


def _label(part: Part) -> str:
    name = js_string(part.name) if part.name is not None else "(no name)"
    return f"block #{part.block} {name}"


def _steps(steps: Sequence[int]) -> str:
    shown = ", ".join(map(str, steps[:8]))
    more = f" and {count(len(steps) - 8, 'more', 'more')}" if len(steps) > 8 else ""
    return f"step{'s' if len(steps) > 1 else ''} {shown}{more}"


def _show(value: Any) -> str:
    text = repr(value) if not isinstance(value, str) else f'"{value}"'
    return text if len(text) <= 40 else text[:37] + "..."


def _type(value: Any) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    if isinstance(value, int | float) and not isinstance(value, bool):
        return "a number"
    return names.get(type(value), type(value).__name__)


_ENVOY = pull("Envoy AI Gateway's Bedrock translator", "envoyproxy/ai-gateway", 1468)
_FANTASY = "charmbracelet/fantasy"
_FANTASY_AT = "f6d4d1e30222"

QUIRKS: tuple[Quirk, ...] = (
    Quirk(
        "missing-index",
        "a tool_calls entry without an integer index (absent, null, or another type)",
        "index",
        "call",
        "loud",
        'openai-python raises ("Expected list delta entry to have an `index` key", or a '
        "TypeError); pi-ai, LangChain, Vercel AI and LiteLLM read calls that each come whole "
        "with their id; the silent damage comes with bare-continuation",
        (
            issue("Gemini OpenAI-compat", "openai/openai-python", 2806),
            recorded(
                "Mistral (api.mistral.ai), parallel calls in one chunk",
                "jackmpcollins/magentic",
                "58b72cf58134",
                "tests/chat_model/cassettes/test_mistral_chat_model/"
                "test_mistral_chat_model_complete_parallel_function_call.yaml",
            ),
            issue("Ollama OpenAI-compat before 0.4.7", "ollama/ollama", 7881),
            _ENVOY,
        ),
        says="omits `index` on tool_calls entries",
        shows="carry no integer index",
        entry=_missing_index,
    ),
    Quirk(
        "bare-continuation",
        'an entry with no index, no id (absent, null or "") and no name after a call opened: '
        "the case of decision 0019",
        "index",
        "call",
        "silent",
        "decision 0019 appends it to the most recently opened call, as Vercel AI and LiteLLM "
        "do; pi-ai 1.6.0 opens a phantom call per piece and hands the real call {}; LangChain "
        "hands {} plus a phantom and lists the rest as invalid; openai-python raises",
        (
            Seen(
                "Envoy AI Gateway's Bedrock translator, from PR #151 to PR #1468",
                "envoyproxy/ai-gateway PR #1468",
                "https://github.com/envoyproxy/ai-gateway/pull/1468",
            ),
            issue("Databricks-served Kimi", "aaif-goose/goose", 11511),
        ),
        says="sends argument pieces with no index, no id and no name",
        shows="carry no index, no id and no name",
        entry=_bare,
    ),
    Quirk(
        "headerless-entry",
        "an entry that names no call: no id and no name, and an index no call opened (or no "
        "call open at all)",
        "header",
        "call",
        "silent",
        "pi-ai, openai-python and LangChain open a nameless call; LiteLLM keeps only the first "
        "call; decision 0019 glues the text onto the open call; Vercel AI fails on the glued "
        "arguments",
        (_ENVOY,),
        says="sends arguments for a call it never opened",
        shows="name no call",
        entry=_headerless,
    ),
    Quirk(
        "shared-index",
        "two different non-empty ids on one index",
        "index",
        "call",
        "silent",
        "only Vercel AI keeps both calls; openai-python glues the names (get_weatherget_time), "
        "LiteLLM glues the arguments, pi-ai and LangChain lose a call or its arguments, all "
        "without a word",
        (
            issue("Ollama", "ollama/ollama", 15457),
            issue("LiteLLM ollama_chat", "BerriAI/litellm", 33678),
            pull("NVIDIA Dynamo", "ai-dynamo/dynamo", 4723),
        ),
        says="puts two calls on one index",
        shows="bring another id on an index already taken",
        entry=_shared_index,
    ),
    Quirk(
        "empty-id",
        'id: "" on an entry',
        "header",
        "call",
        "none",
        'read as no id by every major client; but a call whose every id is "" is dropped by '
        "LiteLLM's stream_chunk_builder without a word",
        (
            recorded(
                "Alibaba DashScope qwen3-max",
                "vercel/ai",
                "ed857f50f112",
                "packages/alibaba/src/__fixtures__/alibaba-tool-call.chunks.txt",
            ),
            Seen("Baidu ERNIE"),
            issue("Gemini OpenAI-compat", "openai/openai-python", 2806),
        ),
        says='sends id ""',
        shows='carry id ""',
        entry=_empty_id,
        whole=_empty_ids,
    ),
    Quirk(
        "empty-name",
        'function.name: "" on an entry after the call was named',
        "header",
        "call",
        "none",
        "pi-ai, openai-python, LangChain, Vercel AI and LiteLLM keep the name; a client that "
        "assigns the name whenever the key is present blanks it (@ai-sdk/mistral, vercel/ai "
        "#19178)",
        (issue("Mistral API serving zai-glm-5-2", "vercel/ai", 19178),),
        says='sends function.name ""',
        shows='carry name ""',
        entry=_empty_name,
    ),
    Quirk(
        "repeated-id",
        "a call's id sent again on its later entries",
        "header",
        "call",
        "silent",
        "openai-python concatenates it (call_1call_1), so the tool result matches no call; "
        "pi-ai, LangChain, Vercel AI and LiteLLM keep it once",
        (
            recorded(
                "OpenRouter to Novita Kimi-K2",
                "simonw/llm",
                "f3f4f29c6e5e",
                "tests/cassettes/test_tools_streaming/test_tools_streaming_variant_a.yaml",
            ),
            Seen("OpenRouter to BaseTen Kimi-K2"),
            issue("SGLang", "InternLM/lmdeploy", 3412),
        ),
        says="repeats a call's id on its later pieces",
        shows="repeat the call's id",
        entry=_repeated_id,
    ),
    Quirk(
        "repeated-name",
        "a call's name sent again on later entries of the same call",
        "header",
        "call",
        "silent",
        "openai-python and LangChain concatenate it (get_weatherget_weather), so no tool has "
        "that name; pi-ai, Vercel AI and LiteLLM keep the first name",
        (
            issue("MiniMax via NVIDIA NIM", "NousResearch/hermes-agent", 8259),
            pull("llama.cpp before the fix", "ggml-org/llama.cpp", 13800),
            recorded(
                "OpenRouter to Novita Kimi-K2",
                "simonw/llm",
                "f3f4f29c6e5e",
                "tests/cassettes/test_tools_streaming/test_tools_streaming_variant_a.yaml",
            ),
        ),
        says="repeats a call's name on its later pieces",
        shows="repeat the call's name",
        entry=_repeated_name,
    ),
    Quirk(
        "cumulative-arguments",
        "each arguments piece restates the arguments so far and adds to them (piece k starts "
        "with piece k-1 and is longer), at least twice in a row",
        "arguments",
        "call",
        "silent",
        "every client concatenates the restatements: pi-ai, LangChain and Vercel AI flag the "
        "broken JSON, openai-python and LiteLLM hand the glued text as if it were the arguments",
        (
            issue("DeepSeek and Baidu Qianfan", "NousResearch/hermes-agent", 35592),
            pull("mimo-v2.5: 975 corrupted tool calls in a week", "decolua/9router", 2869),
        ),
        says="restates the whole arguments in every piece",
        whole=_cumulative,
    ),
    Quirk(
        "arguments-resent",
        "a piece (often the last, often with id and name) repeats the whole arguments so far "
        "(equal text, or equal as JSON)",
        "arguments",
        "call",
        "silent",
        "clients append it: pi-ai flags the glued JSON, LiteLLM hands it, openai-python and "
        "LangChain also glue the resent name, Vercel AI hands the call twice",
        (
            issue("Cerebras gpt-oss-120b", "elizaOS/eliza", 16997),
            issue("codex-lb", "Soju06/codex-lb", 284),
        ),
        says="resends the whole arguments in a later piece",
        whole=_resent,
    ),
    Quirk(
        "after-complete",
        "a non-empty piece after the call's arguments were already one complete JSON value",
        "arguments",
        "call",
        "silent",
        "whitespace is harmless; anything else makes the arguments invalid JSON: pi-ai and "
        "Vercel AI flag it, openai-python and LiteLLM hand the glued text, LangChain keeps the "
        "first value",
        (pull("Kimi K2.6 via OpenRouter", "OpenRouterTeam/ai-sdk-provider", 489),),
        says="sends more arguments after they were complete",
        whole=_after_complete,
    ),
    Quirk(
        "call-after-finish",
        "a tool-call entry (or text) after the chunk that carried finish_reason",
        "finish",
        "stream",
        "none",
        "pi-ai, openai-python, LangChain, Vercel AI and LiteLLM all read on to [DONE] and keep "
        "the late call; a client that stops at finish_reason would lose it",
        (Seen("OpenRouter to Gemini 3 Pro"), Seen("OpenRouter to DeepInfra Kimi-K2")),
        says="sends calls after finish_reason",
        shows="come after finish_reason",
        entry=_after_finish,
        whole=_late,
    ),
    Quirk(
        "repeated-finish",
        "more than one chunk carries finish_reason",
        "finish",
        "stream",
        "none",
        "every client keeps one reason and reads on; every OpenRouter stream since April 2026 "
        "sends a finish chunk and then a second one with usage, so this alone is no bug to file",
        (
            Seen("OpenRouter to Z.AI GLM-4.5"),
            pull("ChatMock", "RayBytes/ChatMock", 114),
            recorded(
                "OpenRouter (every stream recorded since April 2026)",
                _FANTASY,
                _FANTASY_AT,
                "providertests/testdata/TestOpenRouterThinking/anthropic/thinking-streaming.yaml",
            ),
        ),
        says="sends finish_reason more than once",
        whole=_repeated_finish,
    ),
    Quirk(
        "no-finish",
        "no chunk carries finish_reason",
        "finish",
        "stream",
        "loud",
        'pi-ai and Vercel AI end the stream with an error ("Stream ended without '
        'finish_reason") and LiteLLM raises; openai-python and LangChain hand the calls over',
        (
            recorded(
                "Snowflake Cortex",
                "pydantic/pydantic-ai",
                "4fda38988f29",
                "tests/models/cassettes/test_snowflake/test_snowflake_thinking_streaming.yaml",
            ),
            pull("SGLang", "sgl-project/sglang", 7708),
        ),
        says="never sends finish_reason",
        whole=_no_finish,
        at_end=True,
    ),
    Quirk(
        "stop-with-calls",
        "finish_reason is stop though calls were made",
        "finish",
        "stream",
        "none",
        "every client hands the calls over all the same; OpenAI gpt-4o itself ends with stop "
        "when the request's tool_choice names a function, so this is no provider bug there "
        "(only an agent loop that runs tools on tool_calls alone would stop)",
        (
            recorded(
                "OpenAI gpt-4o with a named tool_choice",
                "jackmpcollins/magentic",
                "58b72cf58134",
                "tests/cassettes/test_prompt_function/test_decorator_return_function_call.yaml",
            ),
            Seen("SGLang"),
            issue("LiteLLM ollama_chat", "BerriAI/litellm", 35782),
        ),
        says="ends with finish_reason stop though it made calls",
        whole=_stop_with_calls,
    ),
    Quirk(
        "index-not-from-zero",
        "the first call's index is not 0 (informational)",
        "index",
        "stream",
        "loud",
        "openai-python raises (IndexError: it lists calls by position); pi-ai, LangChain, "
        "Vercel AI and LiteLLM key by index and are unharmed",
        (
            Seen("OpenRouter to OpenAI GPT-5"),
            recorded(
                "Anthropic's OpenAI-compatible fallback",
                "vercel/ai",
                "ed857f50f112",
                "packages/openai-compatible/src/chat/__fixtures__/anthropic-fallback-tool-call.sse",
            ),
        ),
        says="numbers the first call's index above 0",
        shows="open the first call on another index than 0",
        entry=_not_from_zero,
    ),
    Quirk(
        "no-choices-chunk",
        "a chunk with no choices array (usage only, say)",
        "shape",
        "stream",
        "loud",
        "openai-python raises (TypeError: 'NoneType' object is not iterable) and Vercel AI "
        "fails type validation; pi-ai, LangChain and LiteLLM skip the chunk",
        (Seen("Envoy AI Gateway output"),),
        says="sends chunks without a choices array",
        whole=_no_choices,
    ),
    Quirk(
        "non-string-arguments",
        "arguments (or tool_calls, an entry, id, name) is not the documented type",
        "arguments",
        "call",
        "loud",
        "an object for arguments: openai-python and LiteLLM read it as JSON; pi-ai appends "
        "String() of it ([object Object]) and flags it; LangChain and Vercel AI fail validation",
        (pull("TGI", "huggingface/text-generation-inference", 2949),),
        says="sends values of the wrong type (arguments not a string)",
        shows="carry a value of the wrong type",
        entry=_wrong_type,
        whole=_wrong_types,
    ),
    Quirk(
        "missing-name",
        "a call that never gets a function.name",
        "header",
        "call",
        "silent",
        "pi-ai, openai-python and LangChain hand a nameless call; LiteLLM drops it without a "
        "word; Vercel AI fails (\"Expected 'function.name' to be a string\")",
        (_ENVOY,),
        says="opens a call that never gets a name",
        whole=_missing_name,
        at_end=True,
    ),
    Quirk(
        "arguments-not-json",
        "a call's argument pieces (quirks above repaired) do not make one JSON object: cut "
        "short, invalid, or another type",
        "arguments",
        "call",
        "silent",
        "pi-ai and Vercel AI flag it; openai-python and LiteLLM hand the text as it came (the "
        'application\'s parse fails); LangChain parses what it can ({"city":"Par"}) without a '
        "word",
        (issue("Ollama", "ollama/ollama", 15457),),
        says="sends arguments that are not one JSON object",
        whole=_not_json,
        at_end=True,
    ),
)

QUIRK = {quirk.code: quirk for quirk in QUIRKS}
CODES = tuple(QUIRK)
ENTRY_TESTS: tuple[tuple[str, EntryTest], ...] = tuple(
    (quirk.code, quirk.entry) for quirk in QUIRKS if quirk.entry is not None
)
BARE_MARKS = ("missing-index", "bare-continuation")
"""What `ENTRY_TESTS` mark on a plain bare continuation (no index or a null one, no id, no name,
string arguments, before finish_reason), in their order: a stream of a million of them is
marked without running every test on each (tests/contract keeps this true)."""


def detect(wire: Wire) -> tuple[Found, ...]:
    """Every quirk the wire shows, each once per call (or per stream), in order of first step."""
    found: list[tuple[int, int, Found]] = []
    for order, quirk in enumerate(QUIRKS):
        hits = (
            quirk.whole(wire)
            if quirk.whole is not None
            else _per_block(quirk, wire.marks.get(quirk.code), wire)
        )
        for hit in hits:
            first = hit.steps[0] if hit.steps else wire.steps
            harm = quirk.harm if hit.harm is None else hit.harm
            found.append((first, order, Found(quirk.code, hit.steps, hit.blocks, hit.count,
                                              hit.message, harm)))  # fmt: skip
    return tuple(item for _, _, item in sorted(found, key=lambda item: (item[0], item[1])))
