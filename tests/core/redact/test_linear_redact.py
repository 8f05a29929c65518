"""No input stalls redaction or the HTTP-dump reader: cost grows with the input, not its square.

Each case times a function on an adversarial input of size n and 8n (best of several runs,
each run repeated until the small one takes a few milliseconds) and asserts the ratio is far
below the 64 a quadratic cost gives. Before the fix, the first two cases took 21 s on 64 KB.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from tests.timing import GROWTH, assert_linear
from webapp.core.readers import http
from webapp.core.redact import redact
from webapp.core.redact.copies import Copies
from webapp.core.redact.har import redact_har
from webapp.core.redact.rules import (
    redact_comment,
    redact_comments,
    redact_json_members,
    redact_pairs,
    redact_query,
    redact_userinfo,
    secret_header,
    secrets_in,
    variable_only,
)
from webapp.core.redact.text import redact_text

N = 16_000


def _dump(text: str) -> object:
    dump = http.split_dump(text)
    return None if dump is None else (http.clean_body(dump, ":"), http.notes(dump, 1))


def _nested_har(n: int) -> str:
    depth = n // 5
    return '{"log": {"entries": [' + '{"a":' * depth + "1" + "}" * depth + "]}}"


def _nested_arrays_har(n: int) -> str:
    depth = n // 2
    return '{"log": {"entries": [' + "[" * depth + "]" * depth + "]}}"


def _har_entries(n: int, extra: str = "") -> str:
    entries = [
        {"request": {"headers": [{"name": "Authorization", "value": f"Bearer tok-{i:09d}"}]}}
        for i in range(n // 90)
    ]
    return json.dumps({"log": {"entries": entries, "_note": extra}})


def _har_body_comments(n: int) -> str:
    body = ": api_key=a\n" * (n // 13) + "data: 1\n"
    entry = {"response": {"content": {"mimeType": "text/event-stream", "text": body}}}
    return json.dumps({"log": {"entries": [entry]}})


def _har_reserialised(n: int) -> str:
    # A copy of a secret right after an escape cannot be redacted in place: the HAR is then
    # redacted as a parsed tree and re-serialised (the slow path must be linear too).
    text = _har_entries(n, "x\n" + "tok-000000000"[1:])
    return text.replace('"Bearer tok-000000000"', '"nok-000000000"', 1)


CASES: dict[str, tuple[Callable[[str], object], Callable[[int], str]]] = {
    # The two reported stalls: 64 KB took 21 s.
    "verbose header padded with spaces": (redact, lambda n: "> X: a" + " " * n + "b\n"),
    "curl -v * line repeating [a: ": (redact, lambda n: "* " + "[a: " * (n // 4) + "\n"),
    "status then a padded header line": (
        redact_text,
        lambda n: "HTTP/1.1 200 OK\nAuthorization: a" + " " * n + "b\n",
    ),
    "request line padded": (redact_text, lambda n: "GET /" + " " * n + "x HTTP/1.1\n"),
    "request-like lines": (redact_text, lambda n: "GET x\n" * (n // 6)),
    "many verbose lines": (redact_text, lambda n: "> a: b\n" * (n // 7)),
    "one curl line, many secrets": (redact_text, lambda n: "curl" + " -b a=b" * (n // 7)),
    "curl with unclosed quotes": (redact_text, lambda n: "curl" + ' -H "' * (n // 5)),
    "curl with a quote open for many lines": (redact_text, lambda n: "curl -d '\n" + "a\n" * n),
    "curl header padded with spaces": (
        redact_text,
        lambda n: "curl -H 'x-api-key: a" + " " * n + "b'\n",
    ),
    "many query parameters": (redact_text, lambda n: "GET /?" + "key=a&" * (n // 6) + " HTTP/1.1"),
    "a query name without =": (redact_query, lambda n: "?" + "a" * n),
    "a long header name": (secret_header, lambda n: "x-" + "tok" * (n // 3)),
    "a scheme and blanks": (secrets_in, lambda n: "Bearer " + " " * n + "x y"),
    "a variable and blanks": (variable_only, lambda n: "Bearer " + " " * n + "$x y"),
    "a long scheme-like run": (redact_userinfo, lambda n: "a" * n + "://"),
    "many scheme-like starts": (redact_userinfo, lambda n: "a://b:" * (n // 6)),
    "a URL password run": (redact_userinfo, lambda n: "a://u:" + "p:" * (n // 2)),
    "a prompt-like line": (redact_text, lambda n: "user@" * (n // 5) + "\n"),
    "a PowerShell-like prompt": (redact_text, lambda n: "PS " + "x" * n + "\n"),
    "a venv-like prompt": (redact_text, lambda n: "(" + "x" * n + "\n"),
    "pasted header lines": (redact_text, lambda n: "X-Api-Key: a\n" * (n // 13) + "data: 1\n"),
    "a folded secret header": (
        redact_text,
        lambda n: "HTTP/1.1 200 OK\nAuthorization: a\n" + " b\n" * (n // 3),
    ),
    "a quoted secret carried over many lines": (
        redact_text,
        lambda n: 'curl -H "Authorization: Bearer \\\n' + "a\n" * (n // 2),
    ),
    "many quotes in a command": (redact_text, lambda n: "curl \\\n" + "'\"" * (n // 2)),
    "time, then spaces": (redact_text, lambda n: "time" + " " * n + "x\n"),
    "many command prefixes": (redact_text, lambda n: "time " * (n // 5) + "curl -H 'a: b'\n"),
    "head lines with pairs": (redact_text, lambda n: "# ?key=a&b=c\n" * (n // 13) + "data: 1\n"),
    "a head line of many pairs": (redact_text, lambda n: "# ?" + "key=a&" * (n // 6) + "\n"),
    "comment lines with pairs": (redact_text, lambda n: "data: 1\n" + ": key=a\n" * (n // 8)),
    "a comment line of many pairs": (redact_comment, lambda n: ": " + "api_key=a " * (n // 10)),
    "a comment: a name, then blanks": (redact_comment, lambda n: ": a" + " " * n + "x"),
    "a comment: a header, then blanks": (redact_comment, lambda n: ": a" + " " * n + ": x"),
    "a comment of dotted words": (redact_comment, lambda n: ": " + "a." * (n // 2)),
    "a comment of name=name=...": (redact_comment, lambda n: ": " + "a=" * (n // 2)),
    "body comments": (redact_comments, lambda n: ": token=a\n" * (n // 10)),
    "JSON members": (redact_json_members, lambda n: '{"api_key":"a",' * (n // 15) + "}"),
    "JSON: a name, then blanks": (redact_json_members, lambda n: '"a"' + " " * n + "x"),
    "JSON: quotes": (redact_json_members, lambda n: '"' * n),
    "JSON: escapes in a value": (redact_json_members, lambda n: '"a": "' + "\\x" * (n // 2)),
    "form pairs": (redact_pairs, lambda n: "key=a&" * (n // 6)),
    "curl -d with many pairs": (redact_text, lambda n: "curl -d " + "key=a&" * (n // 6) + "\n"),
    "curl -d JSON with many members": (
        redact_text,
        lambda n: "curl -d '{" + '"api_key":"a",' * (n // 14) + "}'\n",
    ),
    "curl -d JSON open for many lines": (
        redact_text,
        lambda n: "curl -d '{\n" + '"api_key": "a",\n' * (n // 16) + "}'\n",
    ),
    "many curl -d flags": (redact_text, lambda n: "curl" + " -d k=a" * (n // 7) + "\n"),
    "many curl -F flags": (redact_text, lambda n: "curl" + " -F key=a" * (n // 9) + "\n"),
    "HAR body comment lines": (redact_har, _har_body_comments),
    "deeply nested HAR objects": (redact, _nested_har),
    "deeply nested HAR arrays": (redact_har, _nested_arrays_har),
    "HAR with many distinct secrets": (redact_har, _har_entries),
    "HAR re-serialised with many secrets": (redact_har, _har_reserialised),
    "HAR with an unterminated string": (redact_har, lambda n: '{"log": "' + "\\a" * (n // 2)),
    "copies of many strings": (
        lambda text: Copies(f"secret-{i:06d}" for i in range(len(text) // 100)).replace(text, "x"),
        lambda n: "secret-0" * (n // 8),
    ),
    "dump: status line padded": (_dump, lambda n: "HTTP/1.1 200 " + " " * n + "x\n\ndata: 1\n"),
    "dump: header padded": (_dump, lambda n: "HTTP/1.1 200 OK\nX: a" + " " * n + "b\n\ndata: 1\n"),
    "dump: progress-like line": (_dump, lambda n: "100 x 100 " + "1 " * (n // 2) + "\n"),
    "dump: verbose body line with CRs": (
        _dump,
        lambda n: "HTTP/1.1 200 OK\n\n> " + "a\r" * (n // 2) + "b\n",
    ),
    "dump: progress lines in the body": (
        _dump,
        lambda n: "HTTP/1.1 200 OK\n\ndata: 1\n" + "1 x 1 a\n" * (n // 8) + "Dload",
    ),
    "dump: a command quote open for many lines": (_dump, lambda n: "curl '\n" + "a\n" * (n // 2)),
    "dump: many verbose lines": (_dump, lambda n: "< a: b\n" * (n // 7)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_cost_grows_linearly(name: str) -> None:
    function, make = CASES[name]
    small, large = make(N), make(N * GROWTH)
    assert_linear(name, lambda: function(small), lambda: function(large))


def test_many_strings_are_replaced_like_a_few() -> None:
    few = ["Bearer tok-123456789", "tok-123456789", "abcdefghij", "cdefgh"]
    many = few + [f"unused-{i:04d}" for i in range(40)]
    text = "x Bearer tok-123456789 y tok-123456789 abcdefghij cdefgh z"
    assert Copies(many).replace(text, "#") == Copies(few).replace(text, "#") == ("x # y # # # z", 4)
    assert Copies(many).found_in(text) and not Copies(many).found_in("nothing")
