"""Fuzz targets for the readers, the redaction passes and the assembler: strategies and checks.

Each target is a Hypothesis strategy and a check that raises on a broken invariant. The short
CI run (tests/test_fuzz.py) and the long run (bench/fuzz.py) drive the same targets.

Invariants:
- readers: `read(text, fmt)` for every format returns a result or raises `ReaderError` with a
  short message in words, never anything else; reading twice gives the same result; whatever
  is read assembles (see below);
- redaction: `redact` never raises, changes nothing when it removes nothing, and a second pass
  changes nothing more; JSON stays JSON. `scan` finds sorted, disjoint spans whose masks keep
  every character's class (so `apply` keeps the length and JSON stays JSON), the same with the
  same key; `scrub` never raises;
- assembler: `assemble` never raises under either policy and path, every trace ends with an
  `end` step, its JSON serializes, the streamed JSON is the same document, and assembling twice
  gives the same bytes;
- playground: its form parser, edits and link decoder raise nothing but `BadPlay` on any form,
  edit or link (odd places like `c¹`, deep or huge values, lone surrogates, zlib bombs); a state
  they accept survives its link, and its stream reads and runs under both policies.
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import json
import string
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson
import yaml
from hypothesis import strategies as st

from tests.core.test_properties import any_options, any_records, junk
from tests.streamkit import chunk, frag, har, json_array, jsonl, pyrepr, sse
from webapp.core.assembler import assemble
from webapp.core.jsoncheck import dumps
from webapp.core.options import Options
from webapp.core.readers import FORMATS, decode, read
from webapp.core.readers.cassette import decoded_cassette
from webapp.core.records import ReaderError, Record
from webapp.core.redact import redact
from webapp.core.redact.content import apply, scan, scrub
from webapp.web.http.text import as_sse
from webapp.web.views import playground
from webapp.web.views.playground import BadPlay

MESSAGE_LIMIT = 2000
"""A reader's error message is a sentence or two with a snippet, never a dump of the input."""

# -- text biased toward the input formats ---------------------------------------------------------

SECRETS = st.sampled_from(
    [
        "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2",
        "sk-ant-api03-" + "abcdEFGH1234ijklMNOP5678",
        "AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6",
        "ghp_" + "a" * 10 + "B" * 10 + "1" * 16,
        "xoxb-1234567890-abcdefABCDEF",
        "AKIA" + "ABCDEFGHIJ123456",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "0123456789abcdef0123456789ABCDEF",
        "QWxhZGRpbjpvcGVuIHNlc2FtZQ0123456789abcdEFGH",
        "someone@example.com",
        "a@b.io",
    ]
)
SECRET_LINES = st.builds(
    lambda template, secret: template.format(secret),
    st.sampled_from(
        [
            "Authorization: Bearer {}",
            "authorization:{}",
            "Cookie: session={}; other=1",
            "x-api-key: {}",
            "> Authorization: Bearer {}",
            "curl https://api.example.com/v1/chat/completions -H 'Authorization: Bearer {}' \\",
            '  -H "api-key: {}" \\',
            "curl 'https://h.example/v1?key={}&x=1'",
            "https://user:{}@host.example/path",
            '"{}"',
            "{}",
            'data: {{"choices":[{{"delta":{{"content":"{}"}}}}]}}',
        ]
    ),
    SECRETS | st.text(string.ascii_letters + string.digits + "-_", max_size=40),
)
JSON_TEXTS = st.builds(lambda value: json.dumps(value), junk) | st.builds(
    lambda value, indent: json.dumps(value, indent=indent), junk, st.sampled_from([None, 1, 2])
)


@st.composite
def cut_short(draw: st.DrawFn, text: st.SearchStrategy[str]) -> str:
    """A text, perhaps cut off at some point (a truncated line, an unclosed value)."""
    whole = draw(text)
    if not whole or draw(st.booleans()):
        return whole
    return whole[: draw(st.integers(0, len(whole)))]


CHUNKS = st.builds(
    lambda index, call_id, name, args, content, finish: chunk(
        frag(index, call_id, name, args), content=content, finish=finish, model="m"
    ),
    st.sampled_from([0, 1, None, "0", -1]),
    st.sampled_from(["call_1", "call_2", "", None]),
    st.sampled_from(["get_weather", "web_search", "", None]),
    st.sampled_from(['{"a":', "1}", "}", "", '{"q": "\\u00e9"}', "\ud83d"]),
    st.sampled_from([None, "", "hi"]),
    st.sampled_from([None, "tool_calls", "stop"]),
)
WELL_FORMED = st.builds(
    lambda writer, chunks: writer(*chunks),
    st.sampled_from([sse, json_array, jsonl, har, pyrepr]),
    st.lists(CHUNKS, min_size=1, max_size=4),
)


@st.composite
def mutated_har(draw: st.DrawFn) -> str:
    """A well-formed HAR with one or two members replaced by junk, removed, or duplicated."""
    tree = json.loads(har(*draw(st.lists(CHUNKS, min_size=1, max_size=3))))
    for _ in range(draw(st.integers(1, 2))):
        node: Any = tree
        while isinstance(node, dict | list) and node and draw(st.integers(0, 4)) > 0:
            keys = list(node) if isinstance(node, dict) else list(range(len(node)))
            key = draw(st.sampled_from(keys))
            child = node[key]
            if not isinstance(child, dict | list) or not child or draw(st.integers(0, 2)) == 0:
                action = draw(st.sampled_from(["junk", "delete", "twice"]))
                if action == "junk":
                    node[key] = draw(junk | cut_short(WELL_FORMED))
                elif action == "delete" and isinstance(node, dict):
                    del node[key]
                elif isinstance(node, list):
                    node.append(child)
                break
            node = child
    return json.dumps(tree, indent=draw(st.sampled_from([None, 2])))


@st.composite
def cassette_ish(draw: st.DrawFn) -> str:
    """A vcrpy cassette whose bodies are text, bytes, or kept encoded (gzip, deflate with or
    without its wrapper, br, cut short, junk), some interactions aliases of others (YAML
    anchors), with junk beside them (timings, headers)."""
    interactions: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(1, 3))):
        body = draw(cut_short(WELL_FORMED) | st.text(max_size=20))
        data = body.encode("utf-8", "replace")
        kind = draw(st.sampled_from(["text", "bytes", "gzip", "deflate", "raw", "br", "cut",
                                     "junk"]))  # fmt: skip
        string: Any = {
            "text": data.decode(),
            "bytes": data,
            "gzip": gzip.compress(data),
            "deflate": zlib.compress(data),
            "raw": _raw_deflate(data),
            "br": data,
            "cut": gzip.compress(data)[: draw(st.integers(0, 30))],
            "junk": draw(st.binary(max_size=30)),
        }[kind]
        headers: dict[str, Any] = {
            "Content-Type": [draw(st.sampled_from(["text/event-stream", "application/json", ""]))]
        }
        coding = {"gzip": "gzip", "cut": "gzip", "junk": "gzip", "deflate": "deflate",
                  "raw": "deflate", "br": "br"}.get(kind)  # fmt: skip
        if coding is not None or draw(st.booleans()):
            headers["Content-Encoding"] = [coding or draw(st.sampled_from(["gzip", "identity"]))]
        interaction: dict[str, Any] = {
            "request": {"method": "POST", "uri": "https://x.example/v1/chat/completions"},
            "response": {"body": {"string": string}, "headers": headers, "status": {"code": 200}},
        }
        if draw(st.booleans()):
            interaction["streamviz_timing"] = draw(junk)
        interactions.append(interaction)
    for _ in range(draw(st.integers(0, 3))):
        interactions.append(draw(st.sampled_from(interactions)))  # the same object: an alias
    return yaml.safe_dump({"interactions": interactions, "version": 1}, allow_unicode=True)


def _raw_deflate(data: bytes) -> bytes:
    packer = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return packer.compress(data) + packer.flush()


NEST = st.integers(1, 3000)
DEEP = st.one_of(
    st.builds(lambda n: "[" * n, NEST),
    st.builds(lambda n: "[" * n + "]" * n, NEST),
    st.builds(lambda n: '{"a":' * n + "1" + "}" * n, NEST),
    st.builds(lambda n: "data: " + "[" * n, NEST),
    st.builds(lambda n: "ChatCompletionChunk(" + "[" * n, NEST),
    st.builds(lambda n: "(" * n + ")" * n, NEST),
    st.builds(lambda n: '{"log": {"entries": ' + "[" * n, NEST),
)
HAR_ISH = st.builds(
    lambda entries, extra: json.dumps({"log": {"entries": entries, **extra}}),
    st.lists(
        st.one_of(
            junk,
            st.fixed_dictionaries(
                {},
                optional={
                    "request": st.fixed_dictionaries(
                        {},
                        optional={
                            "method": st.sampled_from(["POST", "GET", 1]),
                            "url": st.sampled_from(["https://x/v1/chat/completions?key=s", "", 3]),
                            "headers": st.lists(
                                st.fixed_dictionaries(
                                    {"name": st.sampled_from(["Authorization", "Cookie", "x"])},
                                    optional={"value": st.text(max_size=8) | junk},
                                ),
                                max_size=2,
                            ),
                            "postData": st.fixed_dictionaries(
                                {}, optional={"text": cut_short(JSON_TEXTS) | junk}
                            ),
                        },
                    ),
                    "response": st.fixed_dictionaries(
                        {},
                        optional={
                            "status": st.sampled_from([200, 500, "200", None]),
                            "content": st.fixed_dictionaries(
                                {},
                                optional={
                                    "mimeType": st.sampled_from(
                                        ["text/event-stream", "application/json", "", 7]
                                    ),
                                    "text": cut_short(WELL_FORMED) | junk,
                                    "encoding": st.sampled_from(["base64", "", "gzip"]),
                                },
                            ),
                        },
                    ),
                },
            ),
        ),
        max_size=3,
    ),
    st.dictionaries(st.sampled_from(["version", "creator", "pages"]), junk, max_size=2),
)


def _opt(**fields: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({}, optional=fields)


_GEMINI_CALL = junk | _opt(
    name=st.sampled_from(["get_weather", ""]) | junk,
    id=junk,
    args=junk,
    willContinue=st.booleans() | junk,
    partialArgs=junk
    | st.lists(
        _opt(
            jsonPath=st.sampled_from(["$.a", "$.a.b", "$", "$.a..b", "x"]) | junk,
            stringValue=junk,
            numberValue=junk,
            boolValue=junk,
            nullValue=junk,
        ),
        max_size=3,
    ),
)
_GEMINI = st.builds(
    lambda parts, finish: {"candidates": [{"content": {"parts": parts}, **finish}]},
    junk | st.lists(junk | _opt(functionCall=_GEMINI_CALL, text=junk, thought=junk), max_size=3),
    _opt(finishReason=st.sampled_from(["STOP", "MAX_TOKENS", "SAFETY"]) | junk),
)
_BEDROCK_BODY = _opt(
    contentBlockIndex=st.sampled_from([0, 1]) | junk,
    start=junk | _opt(toolUse=junk | _opt(toolUseId=junk, name=junk)),
    delta=junk | _opt(toolUse=junk | _opt(input=junk), text=junk, reasoningContent=junk),
    stopReason=st.sampled_from(["tool_use", "end_turn"]) | junk,
    role=junk,
    p=junk,
)
_BEDROCK = _BEDROCK_BODY | st.builds(
    lambda kind, body: {kind: body},
    st.sampled_from(
        [
            "messageStart",
            "contentBlockStart",
            "contentBlockDelta",
            "contentBlockStop",
            "messageStop",
            "metadata",
            "throttlingException",
        ]
    ),
    _BEDROCK_BODY,
)
_OLLAMA = st.builds(
    lambda message, done, rest: {"message": message, "done": done, **rest},
    _opt(
        content=junk,
        thinking=junk,
        tool_calls=junk
        | st.lists(
            _opt(id=junk, function=junk | _opt(name=junk, arguments=junk, index=junk)),
            max_size=2,
        ),
    ),
    st.booleans(),
    _opt(done_reason=junk, model=junk, error=junk),
)
_UI = st.builds(
    lambda kind, rest: {"type": kind, **rest},
    st.sampled_from(
        [
            "start",
            "tool-input-start",
            "tool-input-delta",
            "tool-input-available",
            "tool-call",
            "text-delta",
            "reasoning-delta",
            "finish",
            "error",
        ]
    ),
    _opt(
        toolCallId=st.sampled_from(["a", "b"]) | junk,
        id=junk,
        toolName=junk,
        inputTextDelta=junk,
        delta=junk,
        input=junk,
        finishReason=junk,
        messageId=junk,
        errorText=junk,
    ),
)
NATIVE_EVENTS = st.one_of(_GEMINI, _BEDROCK, _OLLAMA, _UI).map(lambda event: json.dumps(event))
"""Events of the streams read in their own terms (Gemini, Bedrock, Ollama, the Vercel AI
SDK's UI stream), their fields any JSON value."""

LINES = st.one_of(
    st.sampled_from(
        [
            "data: [DONE]",
            "data:",
            "data: ",
            "event: error",
            "event: message",
            ": keep-alive",
            "id: 7",
            "retry: x",
            "  data: {}",
            "HTTP/1.1 200 OK",
            "< HTTP/2 200",
            "HTTP/1.1 500 Internal Server Error",
            "content-type: text/event-stream",
            "Content-Type: application/json",
            "* Connected to api.example.com",
            "> POST /v1/chat/completions HTTP/2",
            "<",
            "[DONE]",
            "[",
            "]",
            "{",
            "}",
            ",",
            "ChatCompletionChunk(id='x', choices=[], created=1, model='m', object='c')",
            "[ChatCompletionChunk(",
            "ChoiceDelta(content='a', tool_calls=None)",
            "ChoiceDeltaToolCall(index=0, id=None, function=None, type=None)",
            "AIMessageChunk(content='', tool_call_chunks=[])",
            '{"type": "message_start", "message": {}}',
            '{"type": "response.output_item.added"}',
            '{"candidates": []}',
            "\ufeff",
            "\x00",
            "\ud800",
            "\udfff\ud83d",
            "\u2028",
            "NaN",
            "-Infinity",
            "1e999999",
            "1" * 400,
        ]
    ),
    st.builds(lambda t: "data: " + t, cut_short(JSON_TEXTS) | st.text(max_size=12)),
    NATIVE_EVENTS,
    st.builds(lambda t: "data: " + t, NATIVE_EVENTS),
    st.builds(lambda t: "data:" + t, cut_short(st.builds(lambda c: json.dumps(c), CHUNKS))),
    cut_short(JSON_TEXTS),
    cut_short(WELL_FORMED),
    cut_short(HAR_ISH),
    mutated_har(),
    mutated_har(),
    DEEP,
    SECRET_LINES,
    st.text(max_size=20),
)
NEWLINES = st.sampled_from(["\n", "\r\n", "\r", "\n\n", ""])


@st.composite
def texts(draw: st.DrawFn) -> str:
    """Text made of format-shaped lines, or a well-formed stream with a few lines changed, or
    another API's events (kind 7)."""
    kind = draw(st.integers(0, 7))
    if kind == 7:
        events = draw(st.lists(NATIVE_EVENTS, min_size=1, max_size=8))
        prefix = draw(st.sampled_from(["", "data: "]))
        return "".join(f"{prefix}{event}{draw(NEWLINES)}" for event in events)
    if kind == 0:
        return draw(mutated_har())
    if kind == 6:
        return draw(cassette_ish() | cut_short(cassette_ish()))
    if kind == 1:
        lines = draw(WELL_FORMED).split("\n")
        for _ in range(draw(st.integers(1, 3))):
            at = draw(st.integers(0, len(lines)))
            action = draw(st.sampled_from(["insert", "delete", "cut"]))
            if action == "insert":
                lines.insert(at, draw(LINES))
            elif at < len(lines) and action == "delete":
                del lines[at]
            elif at < len(lines):
                lines[at] = lines[at][: draw(st.integers(0, len(lines[at])))]
        return "\n".join(lines)
    lines = draw(st.lists(LINES, min_size=1, max_size=8))
    out = lines[0]
    for line in lines[1:]:
        out += draw(NEWLINES) + line
    return out


@st.composite
def raw_bytes(draw: st.DrawFn) -> bytes:
    """Bytes as they come in an upload: UTF-8 or UTF-16 text, with stray bytes, or noise."""
    kind = draw(st.integers(0, 4))
    if kind == 0:
        return draw(st.binary(max_size=200))
    text = draw(texts())
    if kind == 1:
        return b"\xff\xfe" + text.encode("utf-16-le", "surrogatepass")
    data = bytearray(text.encode("utf-8", "surrogatepass"))
    for _ in range(draw(st.integers(0, 3))):
        data.insert(draw(st.integers(0, len(data))), draw(st.integers(0, 255)))
    return bytes(data)


# -- checks ---------------------------------------------------------------------------------------


def check_trace(records: list[Record] | tuple[Record, ...], options: Options) -> None:
    """Assembling never raises, ends with `end`, serializes, streams the same, is deterministic."""
    trace = assemble(records, options)
    steps = trace.steps
    assert steps[-1].kind == "end", steps[-1].kind
    assert steps[-1].events and steps[-1].events[-1].type in ("done", "error")
    assert len(steps) == len(records) + 1
    whole = dumps(trace.to_json())
    try:
        streamed = b"".join(trace.json_parts({}))
    except TypeError:
        pass  # documented: orjson refused a value; `trace_document_parts` falls back to `dumps`
    else:
        assert orjson.loads(streamed) == orjson.loads(whole), "the streamed JSON differs"
    again = dumps(assemble(records, options).to_json())
    assert again == whole, "assembling the same records twice gave two traces"


def _read(text: str, fmt: str, entry: int | None) -> tuple[str, Any]:
    """("ok", the result) or ("refused", the message); anything but ReaderError propagates."""
    try:
        return "ok", read(text, fmt, har_entry=entry)
    except ReaderError as error:
        message = str(error)
        assert message.strip(), "a ReaderError without a message"
        assert len(message) <= MESSAGE_LIMIT, f"a {len(message)}-character message"
        assert "Traceback" not in message
        return "refused", message


@dataclass(frozen=True)
class ReaderCase:
    """One input for the readers: its text, an entry to pick, and options to assemble with."""

    text: str
    entry: int | None
    options: Options


def check_readers(case: ReaderCase) -> None:
    """Every format reads the text or refuses it in words, the same way twice; reads assemble;
    a cassette written out with its binary bodies as text reads as it did."""
    for fmt in ("auto", *FORMATS):
        for entry in (None, case.entry) if case.entry is not None else (None,):
            outcome, value = _read(case.text, fmt, entry)
            again = _read(case.text, fmt, entry)
            assert repr(again) == repr((outcome, value)), f"{fmt}: two reads differ"
            if outcome == "ok" and entry is None:
                check_trace(value.records, case.options)
    check_decoded_cassette(case.text)


def check_decoded_cassette(text: str) -> None:
    """`decoded_cassette` raises nothing but ReaderError, and what it writes reads the same
    records as the cassette (what a page masks and stores: tests/web/test_web_cassettes.py)."""
    try:
        opened = decoded_cassette(text)
    except ReaderError as error:
        assert str(error).strip()
        return
    if opened is None:
        return
    before, after = _read(text, "auto", None), _read(opened, "auto", None)
    assert before[0] == after[0], (before, after)
    if before[0] == "ok":
        assert tuple(before[1].records) == tuple(after[1].records)
        assert before[1].model == after[1].model


def check_reader_bytes(data: bytes) -> None:
    """Bytes decode to text without raising, and the text reads or is refused in words."""
    text = decode(data)
    assert isinstance(text, str)
    for fmt in ("auto", *FORMATS):
        _read(text, fmt, None)


def _json_or_none(text: str) -> tuple[bool, Any]:
    try:
        return True, json.loads(text)
    except (ValueError, RecursionError):
        return False, None


def _class(char: str) -> str:
    if char.isascii() and char.isalpha():
        return "upper" if char.isupper() else "lower"
    return "digit" if char.isascii() and char.isdigit() else char


def check_redaction(text: str) -> None:
    """Both redaction passes: never raise, idempotent, structure kept."""
    first = redact(text)
    if not first.removed:
        assert first.text == text, "nothing removed, yet the text changed"
    assert redact(first.text).text == first.text, "a second redaction changed the text again"
    parsed, _ = _json_or_none(text)
    if parsed:
        assert _json_or_none(first.text)[0], "redaction broke the JSON"
    key = b"fuzz-key-0123456"
    findings = scan(text, key)
    assert findings == scan(text, key), "two scans with one key differ"
    end = 0
    for finding in findings:
        assert end <= finding.start < finding.end <= len(text), (end, finding)
        end = finding.end
        original = text[finding.start : finding.end]
        assert len(finding.mask) == len(original)
        assert finding.mask != original
        assert list(map(_class, finding.mask)) == list(map(_class, original)), finding.mask
    masked = apply(text, findings)
    assert len(masked) == len(text)
    if parsed:
        assert _json_or_none(masked)[0], "masking broke the JSON"
    scrubbed, removed = scrub(text)
    assert isinstance(scrubbed, str) and all(isinstance(word, str) for word in removed)


def check_assembler(case: tuple[list[Record], Options]) -> None:
    """Any records, any options: see `check_trace`."""
    records, options = case
    check_trace(records, options)


# -- the playground -------------------------------------------------------------------------------

SURROGATES = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF, exclude_categories=())
ANY_TEXT = st.text(st.one_of(st.characters(exclude_categories=()), SURROGATES), max_size=12)
"""Any text, lone surrogates included (plain `st.text()` all but never draws one)."""
PLACES = st.one_of(
    st.integers(0, 9).map(str),
    st.sampled_from(["¹", "²", "\u0661", "\U0001d7d8", "00", "-1", "+1", " 1", "1_0", "9" * 5000]),
    ANY_TEXT,
)
PLAY_KEYS = st.sampled_from([*playground.KEYS, "finish", "f", ""]) | ANY_TEXT
PLAY_VALUES = st.one_of(
    ANY_TEXT,
    st.sampled_from(
        [
            "[" * 20_000,
            "[" * 900 + "]" * 900,
            '{"a":' * 40 + "1" + "}" * 40,
            "1" * 5000,
            "NaN",
            "-Infinity",
            "1e999",
            '"\\ud800"',
            "\ud800",
            "[]",
            "{}",
            "null",
            "x" * (playground.MAX_TEXT + 1),
        ]
    ),
)


@st.composite
def play_field(draw: st.DrawFn) -> str:
    """A field name shaped like the editor's (`c0.f1.name`, `c0.f1.name.on`, `c2.finish`)."""
    chunk, frag, key = draw(PLACES), draw(PLACES), draw(PLAY_KEYS)
    shape = draw(st.integers(0, 4))
    if shape == 0:
        return f"c{chunk}.finish"
    if shape == 1:
        return draw(ANY_TEXT)
    name = f"c{chunk}.f{frag}.{key}"
    return name + ".on" if shape == 2 else name


PLAY_FORMS = st.dictionaries(play_field(), PLAY_VALUES, max_size=10).map(
    lambda form: {**form, **{name + ".on": "on" for name in list(form)[:3]}}
)
PLAY_OPS = st.one_of(
    st.sampled_from(["add:0", "del:0", "up:1", "down:0", "frag:0", "unfrag:0.0", "unfrag:0.¹"]),
    st.builds(lambda verb, at: f"{verb}:{at}", st.sampled_from(["add", "unfrag", "x"]), PLACES),
    ANY_TEXT,
)
_PLAY_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(), ANY_TEXT, st.just("\ud800")
)
PLAY_JSON = st.recursive(
    _PLAY_SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(ANY_TEXT, inner, max_size=3),
    max_leaves=8,
)
PLAY_STATES = st.lists(
    st.fixed_dictionaries(
        {},
        optional={
            "f": st.lists(
                st.dictionaries(st.sampled_from(playground.KEYS), PLAY_JSON, max_size=4),
                max_size=3,
            )
            | PLAY_JSON,
            "finish": st.one_of(ANY_TEXT, PLAY_JSON),
        },
    )
    | PLAY_JSON,
    max_size=4,
)


def _token(data: bytes) -> str:
    """A link's state token for these bytes (what `playground.encode` does to its JSON)."""
    packed = zlib.compress(data, 9)
    return base64.urlsafe_b64encode(packed).decode("ascii").rstrip("=")


def _state_bytes(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")


PLAY_TOKENS = st.one_of(
    PLAY_STATES.map(_state_bytes).map(_token),
    st.builds(
        lambda opener, n: _token(opener * n),
        st.sampled_from([b"[", b'{"a":', b'[{"f":[{"index":']),
        st.sampled_from([1, 100, 900, 20_000, 900_000, playground.MAX_JSON + 1]),
    ),
    st.binary(max_size=40).map(_token),
    st.text("ABCabc019-_=+/ %", max_size=40),
    ANY_TEXT,
)


@dataclass(frozen=True)
class PlayCase:
    """One playground input: a posted form with an edit, and a link's state token."""

    form: dict[str, str]
    op: str
    token: str


def _accepted(state: tuple[playground.Chunk, ...]) -> None:
    """A state the playground took: its link gives it back; its stream reads and runs."""
    assert repr(playground.decode(playground.encode(state))) == repr(state)  # NaN is not NaN
    result = read(as_sse(playground.to_records(state)), "sse")
    for policy in ("adr-0019", "exact-key"):
        assemble(result.records, Options(policy=policy))  # type: ignore[arg-type]


def check_playground(case: PlayCase) -> None:
    """The form, the edit and the link: a state or BadPlay, nothing else."""
    try:
        state = playground.from_form(case.form)
    except BadPlay:
        state = None
    if state is not None:
        _accepted(state)
        with contextlib.suppress(BadPlay):
            _accepted(playground.edited(state, case.op))
    with contextlib.suppress(BadPlay):
        _accepted(playground.decode(case.token))


# -- the targets ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """A fuzz target: what it draws and what it checks."""

    name: str
    strategy: st.SearchStrategy[Any]
    check: Callable[[Any], None]


TARGETS = (
    Target(
        "readers",
        st.builds(ReaderCase, texts(), st.none() | st.integers(0, 3), any_options),
        check_readers,
    ),
    Target("reader-bytes", raw_bytes(), check_reader_bytes),
    Target("redaction", texts() | st.text(max_size=80), check_redaction),
    Target("assembler", st.tuples(any_records, any_options), check_assembler),
    Target("playground", st.builds(PlayCase, PLAY_FORMS, PLAY_OPS, PLAY_TOKENS), check_playground),
)
"""Every fuzz target, by name."""
