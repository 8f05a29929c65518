"""Every credential shape, planted in every input format that carries headers or commands.

Each input goes through `webapp.web.backend.intake.ingest.prepare`, what the web app calls
before storing; no secret may be left in the stored bytes, in the reader's notes or in the trace
JSON.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from itertools import count
from typing import Any

import pytest

from webapp.core.assembler import assemble
from webapp.core.options import Options
from webapp.core.tracejson import trace_document
from webapp.web.backend.intake.ingest import Prepared, prepare

_numbers = count()


def secret() -> str:
    """A new secret, unlike any other text in the corpus."""
    return f"SeCrEt{next(_numbers):03d}-q8Zp4Lm2Xv7"


def chunk(content: str) -> str:
    delta = {
        "tool_calls": [
            {"index": 0, "id": "call_1", "function": {"name": "f", "arguments": content}}
        ]
    }
    return json.dumps({"model": "gpt-4o", "choices": [{"index": 0, "delta": delta}]})


SSE = f"data: {chunk('{}')}\n\ndata: [DONE]\n\n"

HEADER_SHAPES = [
    ("Authorization", "Bearer {}"),
    ("authorization", "Basic {}"),
    ("Proxy-Authorization", "Basic {}"),
    ("Cookie", "sid={}; theme=dark"),
    ("Set-Cookie", "sid={}; Path=/; HttpOnly"),
    ("x-api-key", "{}"),
    ("api-key", "{}"),
    ("anthropic-api-key", "{}"),
    ("openai-organization", "org-{}"),
    ("OpenAI-Organization", "org-{}"),
    ("openai-project", "proj_{}"),
    ("x-goog-api-key", "{}"),
    ("Ocp-Apim-Subscription-Key", "{}"),
    ("X-Session-Token", "{}"),
]
URL_SHAPES = [
    "https://user:{}@api.example.com/v1/chat/completions",
    "https://api.example.com/v1/chat/completions?key={}",
    "https://api.example.com/v1/chat/completions?v=1&api_key={}",
    "https://api.example.com/v1/chat/completions?access_token={}&v=1",
]
FLAG_SHAPES = [
    "-u user:{}",
    "--user 'user:{}'",
    "-sSu user:{}",
    "-U proxy:{}",
    "--proxy-user=proxy:{}",
    "-x http://user:{}@proxy.example:8080",
    "--proxy 'http://user:{}@proxy.example:8080'",
    "--oauth2-bearer {}",
    "-b 'sid={}'",
    "--cookie sid={}",
]
PROMPTS = [
    "",
    "$ ",
    "% ",
    "# ",
    "user@box:~$ ",
    "(venv) me@box:~/src$ ",
    "PS C:\\> ",
    "sudo ",
    "time ",
    "$ time ",
    "sudo time ",
]
BODY_SHAPES = [
    '-d \'{{"model": "gpt-4o", "api_key": "{}"}}\'',
    '--data \'{{"stream":true,"token":"{}"}}\'',
    '--json \'{{"key": "{}"}}\'',
    "--data-urlencode api_key={}",
    "--data-urlencode 'client_secret={}'",
    "-d key={}",
    "-d 'model=gpt-4o&access_token={}'",
    "--data-raw=password={}",
    "-F api_key={}",
]
"""A request body given to curl: JSON members and form pairs named like credentials."""
COMMENT_SHAPES = [
    "# POST https://api.example.com/v1/chat/completions?key={}",
    "// https://api.example.com/v1/chat/completions?v=1&api_key={}",
    "Recorded from https://user:{}@api.example.com/v1 on Monday",
    ": https://api.example.com/v1/chat/completions?key={}",
    ": Authorization: Bearer {}",
    ": api_key={}",
]
"""A line above the stream (a note, a shell comment, an SSE comment) holding a secret."""


def headers() -> list[tuple[str, str, str]]:
    """(name, value, its secret) for each header shape, with new secrets."""
    planted = []
    for name, value in HEADER_SHAPES:
        token = secret()
        planted.append((name, value.format(token), token))
    return planted


def curl_i_dump() -> tuple[str, list[str]]:
    planted = headers()
    lines = ["HTTP/1.1 200 OK"] + [f"{name}: {value}" for name, value, _ in planted]
    folded = secret()
    lines += ["Authorization: Bearer", f"  {folded}", "Content-Type: text/event-stream"]
    return "\r\n".join(lines) + "\r\n\r\n" + SSE, [t for *_, t in planted] + [folded]


def curl_v_dump() -> tuple[str, list[str]]:
    planted = headers()
    secrets = [t for *_, t in planted]
    url_secret, bracket = secret(), secret()
    secrets += [url_secret, bracket]
    lines = [
        "*   Trying 1.2.3.4:443...",
        f"* [HTTP/2] [1] [authorization: Bearer {bracket}]",
        f"> POST /v1/chat/completions?api_key={url_secret} HTTP/2",
        "> Host: api.example.com",
        *(f"> {name}: {value}" for name, value, _ in planted[:7]),
        ">",
        "< HTTP/2 200",
        *(f"< {name}: {value}" for name, value, _ in planted[7:]),
        "<",
    ]
    return "\n".join(lines) + "\n" + SSE, secrets


def curl_commands() -> Iterator[tuple[str, str, list[str]]]:
    """A pasted curl command in front of SSE, after each prompt, with every shape."""
    for prompt in PROMPTS:
        planted = headers()
        secrets = [t for *_, t in planted]
        urls = [shape.format(token := secret()) for shape in URL_SHAPES[:1]]
        secrets.append(token)
        flags = []
        for shape in FLAG_SHAPES:
            flags.append(shape.format(token := secret()))
            secrets.append(token)
        parts = [f"{prompt}curl -sN {urls[0]}"]
        parts += [f"-H '{name}: {value}'" for name, value, _ in planted]
        parts += flags
        continuation = "> " if prompt.endswith("$ ") else "  "
        command = (" \\\n" + continuation).join(parts) + "\n"
        yield f"prompt {prompt!r}", command + SSE, secrets
    for query in URL_SHAPES[1:]:
        token = secret()
        yield f"url {query}", f"curl '{query.format(token)}'\n" + SSE, [token]
    token = secret()
    carried = f"curl https://x -H \"Authorization: Bearer \\\n    {token}\" \\\n  -d '{{}}'\n"
    yield "a secret carried to the next line", carried + SSE, [token]
    for shape in BODY_SHAPES:
        token = secret()
        command = f"curl -sN https://api.example.com/v1 \\\n  {shape.format(token)}\n"
        yield f"body {shape.format('KEY')}", command + SSE, [token]
    token = secret()
    body = f'curl https://x \\\n  -d \'{{\n    "model": "m",\n    "api_key": "{token}"\n  }}\'\n'
    yield "a JSON body over several lines", body + SSE, [token]


def comment_lines() -> Iterator[tuple[str, str, list[str]]]:
    """Each comment shape on a line above the stream, above SSE and above JSON Lines."""
    for shape in COMMENT_SHAPES:
        token = secret()
        yield f"comment {shape.format('KEY')}", shape.format(token) + "\n" + SSE, [token]
    token = secret()
    lines = f"# https://api.example.com/v1?key={token}\n{chunk('{}')}\n"
    yield "comment above JSON Lines", lines, [token]
    token = secret()
    later = SSE.replace("data: [DONE]", f": keep-alive, x-api-key: {token}\n\ndata: [DONE]")
    yield "an SSE comment inside the stream", later, [token]


def pasted_headers() -> tuple[str, list[str]]:
    planted = headers()
    lines = [f"{name}: {value}" for name, value, _ in planted]
    return "\n".join(lines) + "\n\n" + SSE, [t for *_, t in planted]


def har() -> tuple[str, list[str]]:
    planted = headers()
    secrets = [t for *_, t in planted]
    cookie, query, param, form, userinfo = (secret() for _ in range(5))
    secrets += [cookie, query, param, form, userinfo]
    request: dict[str, Any] = {
        "method": "POST",
        "url": f"https://me:{userinfo}@api.example.com/v1/chat/completions?key={query}",
        "httpVersion": "HTTP/1.1",
        "headers": [{"name": name, "value": value} for name, value, _ in planted],
        "queryString": [{"name": "key", "value": query}, {"name": "v", "value": "1"}],
        "cookies": [{"name": "sid", "value": cookie}],
        "postData": {
            "mimeType": "application/x-www-form-urlencoded",
            "text": f"grant_type=x&client_secret={form}",
            "params": [{"name": "client_secret", "value": form}, {"name": "pw", "value": "x"}],
        },
    }
    request["postData"]["params"].append({"name": "password", "value": param})
    entry = {
        "request": request,
        "response": {
            "status": 200,
            "headers": [{"name": "Set-Cookie", "value": f"sid={cookie}"}],
            "cookies": [{"name": "sid", "value": cookie}],
            "content": {"mimeType": "text/event-stream", "text": SSE},
        },
    }
    value = {"log": {"version": "1.2", "creator": {"name": "t"}, "entries": [entry]}}
    return json.dumps(value, indent=2), secrets


def har_comment_lines() -> Iterator[tuple[str, str, list[str]]]:
    """A HAR whose event-stream body carries a secret in an SSE comment line."""
    for shape in COMMENT_SHAPES[3:]:
        token = secret()
        body = shape.format(token) + "\n\n" + SSE
        entry = {
            "request": {"method": "POST", "url": "https://api.example.com/v1", "headers": []},
            "response": {
                "status": 200,
                "headers": [],
                "content": {"mimeType": "text/event-stream", "text": body},
            },
        }
        value = {"log": {"version": "1.2", "creator": {"name": "t"}, "entries": [entry]}}
        yield f"HAR body, {shape.format('KEY')}", json.dumps(value), [token]


def corpus() -> Iterator[Any]:
    yield pytest.param(*curl_i_dump(), id="curl -i dump")
    yield pytest.param(*curl_v_dump(), id="curl -v dump")
    for name, text, secrets in curl_commands():
        yield pytest.param(text, secrets, id=f"curl command, {name}")
    for name, text, secrets in comment_lines():
        yield pytest.param(text, secrets, id=name)
    yield pytest.param(*pasted_headers(), id="headers pasted without a status line")
    yield pytest.param(*har(), id="HAR")
    for name, text, secrets in har_comment_lines():
        yield pytest.param(text, secrets, id=name)


def stored(prepared: Prepared) -> list[tuple[str, str]]:
    """Everything the web app keeps or shows from an input, by where it is."""
    result = prepared.result
    trace = trace_document(assemble(result.records, Options()), result)
    return [
        ("stored bytes", prepared.raw.decode("utf-8")),
        ("notes", "\n".join(result.notes)),
        ("trace JSON", json.dumps(trace, ensure_ascii=False)),
    ]


@pytest.mark.parametrize(("text", "secrets"), list(corpus()))
def test_no_secret_is_stored_noted_or_traced(text: str, secrets: list[str]) -> None:
    for secret_value in secrets:
        assert secret_value in text  # the corpus plants what it checks
    prepared = prepare(text.encode(), "auto", limit=10_000_000)
    assert prepared.redactions
    assert prepared.result.records
    for where, content in stored(prepared):
        left = [s for s in secrets if s in content]
        assert not left, f"{where} still holds {left}"
