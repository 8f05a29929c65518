"""The child side of the Python lenses: `python -m webapp.lenses.pylens CLIENT`.

Reads `{"streams": [sse_text, ...]}` on stdin, runs the published client library, unmodified,
on each stream through a mocked httpx transport that answers the chat-completions request with
the stream's bytes, and writes one line `{"results": [{"status", "calls", "error"}, ...]}` to
stdout. Whatever the library prints goes to stderr. The runner (`webapp.lenses.runner`) starts
this in a subprocess with a timeout and a memory cap; nothing here runs in the server. It is
run as a script under `python -I`, so it imports nothing of streamviz, only the libraries.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import sys
from collections.abc import Callable
from typing import Any

PROMPT = "What is the weather in Paris?"
MODEL = "streamviz-model"
BASE_URL = "http://lens.invalid/v1"


def _transport(sse: str) -> Any:
    """An httpx transport that answers every request with the stream as an event stream."""
    httpx = importlib.import_module("httpx")
    body = sse.encode("utf-8")

    def handler(request: Any) -> Any:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    return httpx.MockTransport(handler)


def _http_client(sse: str) -> Any:
    httpx = importlib.import_module("httpx")
    return httpx.Client(transport=_transport(sse))


def _describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


def _text(value: Any) -> str | None:
    """The arguments as the library holds them: text as is, a parsed value as JSON."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


def _call(id_: Any, name: Any, arguments: Any, invalid: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"id": _text(id_), "name": _text(name), "arguments": _text(arguments)}
    if invalid is not None:
        out["invalid"] = invalid
    return out


def _messages() -> list[dict[str, str]]:
    return [{"role": "user", "content": PROMPT}]


def openai_python(sse: str) -> dict[str, Any]:
    """openai-python's stream helper; its accumulator builds the final completion."""
    openai = importlib.import_module("openai")
    client = openai.OpenAI(
        api_key="lens", base_url=BASE_URL, http_client=_http_client(sse), max_retries=0
    )
    with client.chat.completions.stream(model=MODEL, messages=_messages()) as stream:
        for _event in stream:
            pass
        completion = stream.get_final_completion()
    calls = []
    for choice in completion.choices[:1]:
        for call in choice.message.tool_calls or []:
            function = getattr(call, "function", None)
            calls.append(
                _call(
                    call.id,
                    getattr(function, "name", None),
                    getattr(function, "arguments", None),
                )
            )
    return {"status": "ok", "calls": calls, "error": None}


def langchain(sse: str) -> dict[str, Any]:
    """langchain-openai's ChatOpenAI streaming; the chunks summed as an application would."""
    chat_models = importlib.import_module("langchain_openai")
    model = chat_models.ChatOpenAI(
        model=MODEL,
        api_key="lens",
        base_url=BASE_URL,
        http_client=_http_client(sse),
        max_retries=0,
        streaming=True,
    )
    total: Any = None
    for chunk in model.stream(PROMPT):
        total = chunk if total is None else total + chunk
    calls = []
    problems = []
    if total is not None:
        for call in total.tool_calls:
            calls.append(_call(call.get("id"), call.get("name"), call.get("args")))
        for call in total.invalid_tool_calls:
            error = call.get("error") or "listed in invalid_tool_calls"
            problems.append(f"{call.get('name') or 'a call'}: {error}")
            calls.append(_call(call.get("id"), call.get("name"), call.get("args"), error))
    return {"status": "ok", "calls": calls, "error": "; ".join(problems) or None}


def litellm(sse: str) -> dict[str, Any]:
    """LiteLLM's streaming completion through the OpenAI client, then stream_chunk_builder."""
    module = importlib.import_module("litellm")
    openai = importlib.import_module("openai")
    client = openai.OpenAI(
        api_key="lens", base_url=BASE_URL, http_client=_http_client(sse), max_retries=0
    )
    chunks = list(
        module.completion(
            model=f"openai/{MODEL}",
            messages=_messages(),
            stream=True,
            client=client,
            api_key="lens",
            api_base=BASE_URL,
            max_retries=0,
        )
    )
    built = module.stream_chunk_builder(chunks, messages=_messages())
    calls = []
    if built is not None and built.choices:
        message = built.choices[0].message
        for call in getattr(message, "tool_calls", None) or []:
            function = getattr(call, "function", None)
            calls.append(
                _call(
                    getattr(call, "id", None),
                    getattr(function, "name", None),
                    getattr(function, "arguments", None),
                )
            )
    return {"status": "ok", "calls": calls, "error": None}


LENSES: dict[str, Callable[[str], dict[str, Any]]] = {
    "openai-python": openai_python,
    "langchain": langchain,
    "litellm": litellm,
}


def run(client: str, streams: list[str]) -> list[dict[str, Any]]:
    """Each stream's result under one lens; an exception is the library's answer, but for
    MemoryError: the process then dies of it, and the runner says the lens hit its cap."""
    lens = LENSES[client]
    results = []
    for sse in streams:
        try:
            results.append(lens(sse))
        except MemoryError:
            raise
        except Exception as error:
            results.append({"status": "error", "calls": [], "error": _describe(error)})
    return results


def main() -> int:
    """Read the request, run the lens with stdout sent to stderr, write the reply."""
    client = sys.argv[1] if len(sys.argv) > 1 else ""
    if client not in LENSES:
        print(f"no such lens: {client!r}", file=sys.stderr)
        return 2
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # no fetch of a price list at import
    request = json.load(sys.stdin)
    reply = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # a library that prints prints to stderr
    with contextlib.redirect_stdout(sys.stderr):
        results = run(client, list(request["streams"]))
    reply.write(json.dumps({"results": results}) + "\n")
    reply.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
