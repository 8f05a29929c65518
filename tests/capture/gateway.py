"""A loopback fake gateway: chat completions in front, an Anthropic-speaking provider behind.

It translates the way the Envoy AI Gateway's Bedrock translator did before envoyproxy/ai-gateway
PR #1468: each tool-call entry goes out without `index`, the call's first with its id and
name, every later one with `"id": null` and no name (a bare continuation). `drop` names
argument pieces it loses (a translator bug that changes what the stream means). The
translation is pure (`translate`), so that the triage tests read the same bytes the proxy
tests record; `Gateway` serves it over HTTP, sending each request on to `target` (set once
the streamviz in front of the provider is up) and each event as it comes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
from starlette.types import Receive, Scope, Send

from tests.capture.fake import read_body

WEATHER = [('{"city": ', '"Paris"'), (', "units": ', '"celsius"'), ("}",)]
"""get_weather's arguments as the provider streams them, piece by piece."""
TIME = [('{"zone": "CET"}',)]


def anthropic_stream(calls: Iterable[tuple[str, str, list[tuple[str, ...]]]]) -> list[bytes]:
    """An Anthropic Messages stream making these calls (id, name, argument pieces in groups),
    one event a piece."""
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": {
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [], "stop_reason": None}}),
    ]  # fmt: skip
    for number, (call_id, name, groups) in enumerate(calls):
        block = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
        events.append(("content_block_start", {"type": "content_block_start", "index": number,
                                               "content_block": block}))  # fmt: skip
        for group in groups:
            for piece in group:
                delta = {"type": "input_json_delta", "partial_json": piece}
                event = {"type": "content_block_delta", "index": number, "delta": delta}
                events.append(("content_block_delta", event))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": number}))
    events.append(("message_delta", {"type": "message_delta",
                                     "delta": {"stop_reason": "tool_use"}}))  # fmt: skip
    events.append(("message_stop", {"type": "message_stop"}))
    return [f"event: {kind}\ndata: {json.dumps(data)}\n\n".encode() for kind, data in events]


PROVIDER_SCRIPT = anthropic_stream(
    [("toolu_01", "get_weather", WEATHER), ("toolu_02", "get_time", TIME)]
)
"""What the fake provider sends: two calls, the first in five pieces."""


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    chunk = {"id": "chatcmpl-gw", "object": "chat.completion.chunk", "model": "claude-sonnet-4-5",
             "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}  # fmt: skip
    return f"data: {json.dumps(chunk)}\n\n".encode()


@dataclass
class Translator:
    """Anthropic events in, chat-completions chunks out, one event at a time."""

    drop: frozenset[str] = frozenset()
    """Argument pieces lost on the way (none by default)."""
    _open: dict[int, str] = field(default_factory=dict)

    def event(self, data: dict[str, Any]) -> list[bytes]:
        """The chunks one event becomes."""
        kind = data.get("type")
        if kind == "message_start":
            return [_chunk({"role": "assistant", "content": ""})]
        if kind == "content_block_start" and data["content_block"]["type"] == "tool_use":
            block = data["content_block"]
            self._open[data["index"]] = block["id"]
            entry = {"id": block["id"], "type": "function",
                     "function": {"name": block["name"], "arguments": ""}}  # fmt: skip
            return [_chunk({"tool_calls": [entry]})]
        if kind == "content_block_delta" and data["delta"].get("type") == "input_json_delta":
            piece = data["delta"]["partial_json"]
            if piece in self.drop:
                return []
            entry = {"id": None, "type": "function", "function": {"arguments": piece}}
            return [_chunk({"tool_calls": [entry]})]
        if kind == "message_delta":
            reason = data["delta"].get("stop_reason")
            return [_chunk({}, "tool_calls" if reason == "tool_use" else "stop")]
        if kind == "message_stop":
            return [b"data: [DONE]\n\n"]
        return []


def translate(events: Iterable[bytes], drop: frozenset[str] = frozenset()) -> list[bytes]:
    """A whole Anthropic stream (its events' bytes) as the gateway sends it on."""
    translator = Translator(drop)
    return [chunk for data in _datas(b"".join(events)) for chunk in translator.event(data)]


def _datas(text: bytes) -> Iterator[dict[str, Any]]:
    for line in text.decode().splitlines():
        if line.startswith("data: "):
            yield json.loads(line[6:])


def anthropic_request(body: dict[str, Any]) -> dict[str, Any]:
    """A chat-completions request as the gateway sends it to an Anthropic-speaking provider."""
    tools = [{"name": tool["function"]["name"], "description": "",
              "input_schema": tool["function"].get("parameters", {"type": "object"})}
             for tool in body.get("tools", [])]  # fmt: skip
    return {"model": body.get("model", "claude-sonnet-4-5"), "max_tokens": 1024,
            "messages": body.get("messages", []), "tools": tools, "stream": True}  # fmt: skip


@dataclass
class Gateway:
    """The fake gateway as an ASGI app; `target` is the provider's base URL (streamviz's
    `/proxy/provider/v1`, set once that server is up)."""

    target: str = ""
    drop: frozenset[str] = frozenset()
    requests: list[dict[str, Any]] = field(default_factory=list)
    recorded: list[str] = field(default_factory=list)
    """The stream id streamviz gave each of its requests to the provider (its header)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        body = await read_body(receive)
        request = json.loads(body or b"{}")
        self.requests.append(request)
        translator = Translator(self.drop)
        async with httpx.AsyncClient(timeout=30, trust_env=False) as client:
            sent = anthropic_request(request)
            async with client.stream("POST", f"{self.target}/messages", json=sent) as answer:
                self.recorded.append(answer.headers.get("streamviz-stream-id", ""))
                if answer.status_code != 200 or "event-stream" not in answer.headers.get(
                    "content-type", ""
                ):
                    await answer.aread()
                    await _error(send, answer.status_code, answer.text)
                    return
                await send({"type": "http.response.start", "status": 200,
                            "headers": [(b"content-type", b"text/event-stream")]})  # fmt: skip
                done = False
                async for line in answer.aiter_lines():
                    if not line.startswith("data: "):
                        continue
                    try:
                        data = json.loads(line[6:])
                    except ValueError:
                        continue  # what it cannot read it does not send on
                    for chunk in translator.event(data):
                        done = done or chunk == b"data: [DONE]\n\n"
                        await send({"type": "http.response.body", "body": chunk,
                                    "more_body": True})  # fmt: skip
        # a provider's stream it could not read: it answers that it has nothing to say
        end = b"" if done else _chunk({"content": ""}, "stop") + b"data: [DONE]\n\n"
        await send({"type": "http.response.body", "body": end, "more_body": False})


async def _error(send: Send, status: int, text: str) -> None:
    body = json.dumps({"error": {"message": f"the provider answered {status}: {text[:200]}"}})
    await send({"type": "http.response.start", "status": 502,
                "headers": [(b"content-type", b"application/json")]})  # fmt: skip
    await send({"type": "http.response.body", "body": body.encode(), "more_body": False})
