"""Input readers: a pasted or uploaded stream in, records with their start lines out.

`read(text)` detects the format; these are tried in this order, the first that applies reads:

1. HAR: a JSON object that opens with `"log"`, or parses to one with a `log.entries` list;
   a vcrpy cassette: a top-level `interactions:` (YAML) or a JSON object opening with it.
2. HTTP dump: a status line (`HTTP/1.1 200 OK`, or `< HTTP/2 200` from `curl -v`) before the
   body, perhaps after a pasted curl command and curl's own lines; the body is then read as
   SSE if a line starts with `data:`, else as JSON Lines or JSON (steps 5 and 6).
3. SSE: some line starts with `data:`.
4. openai-python repr: some line starts with `ChatCompletionChunk(`, `Choice(`,
   `ChoiceDelta(` or `ChoiceDeltaToolCall(` (or `[` and one of them).
5. JSON Lines: several non-blank lines, each one JSON value (or `[DONE]`) on its own.
6. JSON: an array or values one after another (`jq`); at least one must parse.

A leading BOM is dropped first. With a named format, that reader alone runs (SSE, JSON and
JSON Lines still skip an HTTP dump's head). Another API's stream is named (`foreign`):
Anthropic Messages and OpenAI Responses events are mapped to chat-completions chunks; Gemini's
native stream, Bedrock's ConverseStream events, Ollama's native stream and the Vercel AI SDK's
UI message stream are read in their own terms (`natives`); LangChain's reprs are refused with
a message. A non-stream `chat.completion` answer is read as one record with a note that says
so (`webapp.core.contract.answer` reads its calls, for a diff). A reading that then holds no
chat-completions chunk (a traceback's numbers, a log line, an HTML page) is refused too, saying
what was expected and what was seen (`refusal`). Nothing here does I/O or imports web code.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from webapp.core.readers import foreign
from webapp.core.readers.parse import decode_bytes
from webapp.core.readers.refusal import is_answer, require_stream
from webapp.core.readers.sse import BLOCK, SEGMENT, plain_blocks, split_blocks
from webapp.core.records import ReaderError, ReadResult
from webapp.tuning import paused_gc

FORMATS = ("sse", "json", "jsonl", "har", "repr", "cassette")

__all__ = [
    "ANSWER_NOTE",
    "BLOCK",
    "FORMATS",
    "SEGMENT",
    "ReaderError",
    "decode",
    "read",
    "read_bytes",
    "read_plain",
    "read_plain_blocks",
]


def decode(data: bytes) -> str:
    """Bytes to text: UTF-8 (UTF-16 if it has a BOM), BOM dropped, bad bytes as U+FFFD; AWS's
    binary event stream (Bedrock's ConverseStream on the wire) as its events' JSON Lines."""
    return decode_bytes(data)


def read_plain(data: bytes, fmt: str = "auto", har_entry: int | None = None) -> ReadResult | None:
    """`read(decode(data), fmt, har_entry)` when the bytes are a plain SSE stream, what most long
    streams are (`sse.plain_blocks`), without making the whole text; None for any other
    input (the caller decodes it and reads the text). Of the formats `read` tries before SSE,
    none takes a text that starts with `data: ` or with comment lines, so skipping their tests
    changes nothing (the payload tests check it on byte soup and on the corpus)."""
    return read_plain_blocks(split_blocks(data), fmt, har_entry)


def read_plain_blocks(
    blocks: Iterable[bytes], fmt: str = "auto", har_entry: int | None = None
) -> ReadResult | None:
    """`read_plain` of the blocks' bytes joined, taken a block at a time: a file read so is
    never held whole (`streamviz check` reads one so)."""
    if fmt not in ("auto", "sse") or har_entry is not None:
        return None
    plain = plain_blocks(blocks)
    if plain is None:
        return None
    result, replacements = plain
    with paused_gc():
        result = require_stream(foreign.adapt(result))
    return _with_model(_with_replacement_note(result, replacements))


def read_bytes(
    data: bytes, fmt: str = "auto", har_entry: int | None = None, limit: int | None = None
) -> ReadResult:
    """`read(decode(data), fmt, har_entry, limit)`: a plain SSE stream through `read_plain`,
    any other input decoded and read (a caller that can let the bytes go before reading the
    text, as the CLI does, calls the two itself)."""
    return read_plain(data, fmt, har_entry) or read(decode(data), fmt, har_entry, limit)


def read(
    text: str, fmt: str = "auto", har_entry: int | None = None, limit: int | None = None
) -> ReadResult:
    """Read a stream in the named format, or the detected one with "auto".

    `har_entry` picks a HAR's entry by its 1-based place in `log.entries`, or a cassette's
    interaction by its place in `interactions` (default: the first event stream);
    `ReadResult.entries` lists the ones there are. `limit` bounds what the input makes once
    read (a cassette's inflated bodies and YAML aliases: `cassette.input_limit`).
    """
    if fmt != "auto" and fmt not in FORMATS:
        raise ReaderError(f"unknown format {fmt!r}: choose auto, {', '.join(FORMATS)}")
    text = text.removeprefix("\ufeff")
    if not text or text.isspace():  # `not text.strip()`, without copying a long text
        raise ReaderError("the input is empty")
    # The format readers load here, not at start-up: `check` of a plain stream, what CI runs on
    # every recording, reads it with `read_plain` alone.
    from webapp.core.readers.detect import read_text

    with paused_gc():
        result = require_stream(foreign.adapt(read_text(text, fmt, har_entry, limit)), text)
    return _with_answer_note(_with_model(_with_replacement_note(result, text.count("\ufffd"))))


def _with_model(result: ReadResult) -> ReadResult:
    """Without a request to name the model (a HAR has one), take the first chunk's `model`."""
    if result.model is not None:
        return result
    for record in result.records[:50]:
        if isinstance(record.value, dict) and isinstance(record.value.get("model"), str):
            return replace(result, model=record.value["model"])
    return result


ANSWER_NOTE = (
    "this is a non-stream chat.completion answer, not a stream: its calls are in its "
    "message.tool_calls, which no step of a stream's assembly reads; to hold it to a stream, "
    "diff the two (streamviz diff STREAM ANSWER, or /diff)"
)


def _with_answer_note(result: ReadResult) -> ReadResult:
    """A non-stream answer (`refusal.is_answer`) is said to be one, not assembled as a stream."""
    if not is_answer(result.records):
        return result
    return replace(result, notes=(*result.notes, ANSWER_NOTE))


def _with_replacement_note(result: ReadResult, count: int) -> ReadResult:
    if not count:
        return result
    note = (
        f"the input holds {count} U+FFFD replacement character(s): where it was decoded "
        "from bytes, those stand for bytes that were not valid UTF-8"
    )
    return replace(result, notes=(*result.notes, note))
