"""Non-stream `chat.completion` answers for the twin's tests (the diff, the proxy's twin)."""

from __future__ import annotations

import json
from typing import Any


def completion(*calls: tuple[str, str, str], finish: str = "tool_calls") -> dict[str, Any]:
    """`{"object": "chat.completion", ...}` holding these (id, name, arguments) calls."""
    tool_calls = [
        {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
        for call_id, name, arguments in calls
    ]
    message = {"role": "assistant", "content": None, "tool_calls": tool_calls or None}
    return {
        "id": "chatcmpl-twin",
        "object": "chat.completion",
        "created": 1767225600,
        "model": "demo-model",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def answer_text(*calls: tuple[str, str, str]) -> str:
    """The answer's JSON body, as the API sends it."""
    return json.dumps(completion(*calls))


def answer_har(stream: str, answer: str) -> str:
    """A HAR of two entries: the stream (entry 1) and the same request's JSON answer (entry 2)."""
    url = "https://api.example/v1/chat/completions"
    entries = [
        {"request": {"method": "POST", "url": url},
         "response": {"status": 200, "content": {"mimeType": "text/event-stream", "text": stream}}},
        {"request": {"method": "POST", "url": url},
         "response": {"status": 200, "content": {"mimeType": "application/json", "text": answer}}},
    ]  # fmt: skip
    return json.dumps({"log": {"entries": entries}})
