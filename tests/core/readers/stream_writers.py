"""Writers for the reader round-trip properties: chunks in, text in one input format out.

Each writer returns the text and the records a reader must find in it, as
(kind, value, line, event) tuples, with the line each record starts on.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import Any

Expected = list[tuple[str, Any, int, str | None]]


@dataclass(frozen=True)
class SseStyle:
    """The choices an SSE writer makes: spaces after `data:`, line ends, comments, extras."""

    newline: str = "\n"
    data_space: tuple[bool, ...] = (True,)
    comment_before: tuple[bool, ...] = (False,)
    comment_inside: tuple[bool, ...] = (False,)
    extra_fields: tuple[bool, ...] = (False,)
    event_names: tuple[str | None, ...] = (None,)
    multiline: tuple[bool, ...] = (False,)
    ascii: bool = True
    bom: bool = False
    final_blank: bool = True


def _pick(options: tuple[Any, ...], i: int) -> Any:
    return options[i % len(options)]


def sse(chunks: list[Any], done: bool, style: SseStyle = SseStyle()) -> tuple[str, Expected]:
    """Chunks as server-sent events, one event each, then `data: [DONE]` if asked."""
    lines: list[str] = []
    expected: Expected = []
    payloads = [json.dumps(c, ensure_ascii=style.ascii) for c in chunks]
    for i, chunk in enumerate(chunks):
        if _pick(style.comment_before, i):
            lines.append(": keep-alive")
        start = len(lines) + 1
        event = _pick(style.event_names, i)
        if event is not None:
            lines.append(f"event: {event}")
        if _pick(style.extra_fields, i):
            lines += [f"id: {i}", "retry: 1000"]
        prefix = "data: " if _pick(style.data_space, i) else "data:"
        if _pick(style.multiline, i):
            pretty = json.dumps(chunk, indent=1, ensure_ascii=style.ascii).split("\n")
            for j, part in enumerate(pretty):
                lines.append(prefix + part)
                if j == 0 and _pick(style.comment_inside, i):
                    lines.append(":comment inside an event")
        else:
            lines.append(prefix + payloads[i])
            if _pick(style.comment_inside, i):
                lines.append(":comment inside an event")
        lines.append("")
        expected.append(("chunk", chunk, start, event))
    if done:
        expected.append(("done", None, len(lines) + 1, None))
        lines += ["data: [DONE]", ""]
    if not style.final_blank and lines and lines[-1] == "":
        lines.pop()
    text = style.newline.join(lines) + (style.newline if lines else "")
    return ("\ufeff" if style.bom else "") + text, expected


def json_array(chunks: list[Any], indent: int | None) -> tuple[str, Expected]:
    """Chunks as one JSON array: compact on one line, or one indented element after another."""
    if indent is None:
        return json.dumps(chunks), [("chunk", c, 1, None) for c in chunks]
    lines, expected = ["["], []
    for i, chunk in enumerate(chunks):
        body = json.dumps(chunk, indent=indent).split("\n")
        expected.append(("chunk", chunk, len(lines) + 1, None))
        body = [" " * indent + part for part in body]
        if i < len(chunks) - 1:
            body[-1] += ","
        lines += body
    lines.append("]")
    return "\n".join(lines) + "\n", expected


def jsonl(
    chunks: list[Any], done: bool, newline: str, blanks: tuple[bool, ...]
) -> tuple[str, Expected]:
    """Chunks as JSON Lines, with blank lines here and there and `[DONE]` last if asked."""
    lines: list[str] = []
    expected: Expected = []
    for i, chunk in enumerate(chunks):
        if _pick(blanks, i):
            lines.append("")
        expected.append(("chunk", chunk, len(lines) + 1, None))
        lines.append(json.dumps(chunk))
    if done:
        expected.append(("done", None, len(lines) + 1, None))
        lines.append("[DONE]")
    return newline.join(lines) + newline, expected


def jq(chunks: list[Any]) -> tuple[str, Expected]:
    """Chunks as `jq .` prints them: pretty objects one after another."""
    lines: list[str] = []
    expected: Expected = []
    for chunk in chunks:
        expected.append(("chunk", chunk, len(lines) + 1, None))
        lines += json.dumps(chunk, indent=2).split("\n")
    return "\n".join(lines) + "\n", expected


@dataclass(frozen=True)
class HarStyle:
    """Where the stream sits among other entries, and how its body is stored."""

    base64: bool = False
    before: int = 0
    after: int = 0
    tools: tuple[dict[str, Any], ...] = field(default_factory=tuple)


def _entry(url: str, mime: str, body: str, encode: bool, post: dict[str, Any] | None) -> Any:
    content: dict[str, Any] = {"size": len(body), "mimeType": mime}
    if encode:
        content["text"] = base64.b64encode(body.encode()).decode()
        content["encoding"] = "base64"
    else:
        content["text"] = body
    request: dict[str, Any] = {
        "method": "POST" if post is not None else "GET",
        "url": url,
        "headers": [{"name": "Authorization", "value": "Bearer sk-writer-secret-0001"}],
        "cookies": [{"name": "sid", "value": "writer-cookie-0001"}],
    }
    if post is not None:
        request["postData"] = {"mimeType": "application/json", "text": json.dumps(post)}
    return {"request": request, "response": {"status": 200, "content": content}}


def har(body: str, style: HarStyle) -> str:
    """An SSE body as the response of a chat-completions entry in a HAR file."""
    post = {"model": "gpt-test", "stream": True, "tools": list(style.tools)}
    stream = _entry(
        "https://api.example.com/v1/chat/completions", "text/event-stream", body, style.base64, post
    )
    page = _entry("https://example.com/", "text/html", "<html></html>", False, None)
    entries = [page] * style.before + [stream] + [page] * style.after
    return json.dumps({"log": {"version": "1.2", "creator": {"name": "t"}, "entries": entries}})


def _py(value: Any, name: str) -> str:
    if isinstance(value, dict):
        inner = ", ".join(f"{k}={_py(v, 'Obj')}" for k, v in value.items())
        return f"{name}({inner})"
    if isinstance(value, list):
        return "[" + ", ".join(_py(v, "Obj") for v in value) + "]"
    return repr(value)


def pyrepr(chunks: list[dict[str, Any]], multiline: tuple[bool, ...]) -> tuple[str, Expected]:
    """Chunks as openai-python prints them (keys must be identifiers), some spread by line."""
    lines: list[str] = []
    expected: Expected = []
    for i, chunk in enumerate(chunks):
        expected.append(("chunk", chunk, len(lines) + 1, None))
        if _pick(multiline, i) and chunk:
            head = "ChatCompletionChunk("
            parts = [f"{k}={_py(v, 'Obj')}" for k, v in chunk.items()]
            lines.append(head + parts[0] + ("," if len(parts) > 1 else ")"))
            for j, part in enumerate(parts[1:], 1):
                lines.append(" " * len(head) + part + ("," if j < len(parts) - 1 else ")"))
        else:
            lines.append(_py(chunk, "ChatCompletionChunk"))
    return "\n".join(lines) + "\n", expected
