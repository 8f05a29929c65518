"""Secret redaction: HAR files in place, HTTP dumps and curl commands line by line."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from webapp.core.readers import read
from webapp.core.redact import REDACTED, Redaction, redact
from webapp.core.redact.request import mask_request

BEARER = "sk-proj-0123456789abcdef"
COOKIE = "sess-cookie-9876543210"
API_KEY = "azure-key-55555555"
QUERY_KEY = "AIzaQueryKey-777777"
GOOG = "goog-key-31415926"
BODY = (
    'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1",'
    '"function":{"name":"http","arguments":"{\\"header\\": \\"Authorization: x\\"}"}}]}}]}\n\n'
    "data: [DONE]\n\n"
)


def har_value() -> dict[str, Any]:
    return {
        "log": {
            "version": "1.2",
            "creator": {"name": "WebInspector", "version": "537.36"},
            "entries": [
                {
                    "_initiator": {"type": "script"},
                    "request": {
                        "method": "POST",
                        "url": f"https://api.example.com/v1/chat/completions?key={QUERY_KEY}&v=2",
                        "httpVersion": "HTTP/1.1",
                        "headers": [
                            {"name": "Authorization", "value": f"Bearer {BEARER}"},
                            {"name": "api-key", "value": API_KEY},
                            {"value": GOOG, "name": "x-goog-api-key"},
                            {"name": "Cookie", "value": f"sid={COOKIE}; theme=dark"},
                            {"name": "Content-Type", "value": "application/json"},
                        ],
                        "queryString": [
                            {"name": "key", "value": QUERY_KEY},
                            {"name": "v", "value": "2"},
                        ],
                        "cookies": [
                            {"name": "sid", "value": COOKIE, "path": "/", "httpOnly": True},
                            {"name": "theme", "value": "dark"},
                        ],
                        "postData": {
                            "mimeType": "application/json",
                            "text": json.dumps({"model": "gpt-4o", "stream": True}),
                        },
                    },
                    "response": {
                        "status": 200,
                        "headers": [
                            {"name": "content-type", "value": "text/event-stream"},
                            {"name": "x-ratelimit-remaining-tokens", "value": "29000"},
                            {"name": "Set-Cookie", "value": f"sid={COOKIE}; Path=/; HttpOnly"},
                        ],
                        "cookies": [{"name": "sid", "value": COOKIE}],
                        "content": {
                            "size": len(BODY),
                            "mimeType": "text/event-stream",
                            "text": BODY,
                        },
                    },
                }
            ],
        }
    }


def expected_value() -> dict[str, Any]:
    """The same HAR with exactly the secrets replaced."""
    value = har_value()
    request = value["log"]["entries"][0]["request"]
    response = value["log"]["entries"][0]["response"]
    request["url"] = f"https://api.example.com/v1/chat/completions?key={REDACTED}&v=2"
    for header in request["headers"][:4]:
        header["value"] = REDACTED
    request["queryString"][0]["value"] = REDACTED
    for cookie in request["cookies"]:
        cookie["value"] = REDACTED
    response["headers"][2]["value"] = REDACTED
    response["cookies"][0]["value"] = REDACTED
    return value


ALL_SECRETS = (BEARER, COOKIE, API_KEY, QUERY_KEY, GOOG)


@pytest.mark.parametrize("indent", [None, 2, 4])
def test_har_secrets_are_gone_and_everything_else_is_byte_identical(indent: int | None) -> None:
    text = json.dumps(har_value(), indent=indent)
    result = redact(text)
    for secret in ALL_SECRETS:
        assert secret not in result.text
    assert json.loads(result.text) == expected_value()
    assert result.text == json.dumps(expected_value(), indent=indent)


def test_har_removed_says_what_and_where() -> None:
    removed = redact(json.dumps(har_value())).removed
    assert "Authorization header (HAR entry 1 request)" in removed
    assert "api-key header (HAR entry 1 request)" in removed
    assert "x-goog-api-key header (HAR entry 1 request)" in removed
    assert "Cookie header (HAR entry 1 request)" in removed
    assert "Set-Cookie header (HAR entry 1 response)" in removed
    assert "cookie 'sid' (HAR entry 1 request)" in removed
    assert "query parameter 'key' (HAR entry 1 request)" in removed
    assert "query parameter 'key' in a URL (HAR entry 1 request)" in removed
    assert not any("x-ratelimit" in said or "Content-Type" in said for said in removed)


def test_redacted_har_reads_to_the_same_chunks() -> None:
    text = json.dumps(har_value(), indent=2)
    before, after = read(text), read(redact(text).text)
    assert [(r.kind, r.line, r.value) for r in after.records] == [
        (r.kind, r.line, r.value) for r in before.records
    ]
    assert (
        after.records[0].value["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"]
        == '{"header": "Authorization: x"}'
    )


def test_copies_of_a_secret_elsewhere_in_the_har_are_replaced_too() -> None:
    value = har_value()
    value["log"]["entries"][0]["_initiator"]["note"] = f"retry with Bearer {BEARER} later"
    result = redact(json.dumps(value))
    assert BEARER not in result.text
    assert json.loads(result.text)["log"]["entries"][0]["_initiator"]["note"] == (
        f"retry with {REDACTED} later"
    )
    assert any("more copies" in said for said in result.removed)


def test_a_har_that_cannot_be_redacted_in_place_is_reserialised() -> None:
    value = har_value()
    secret = "nSECRET-after-escape"
    value["log"]["entries"][0]["request"]["headers"].append({"name": "x-token", "value": secret})
    # In the JSON text, this newline's escape `\n` runs into the secret's text: replacing the
    # secret's copies in place would leave a broken escape, so the check fails.
    value["log"]["entries"][0]["_initiator"]["stack"] = "line one\n" + secret[1:]
    result = redact(json.dumps(value))
    parsed = json.loads(result.text)
    assert parsed["log"]["entries"][0]["request"]["headers"][-1]["value"] == REDACTED
    assert parsed["log"]["entries"][0]["_initiator"]["stack"] == "line one\n" + secret[1:]
    expected = expected_value()
    expected["log"]["entries"][0]["request"]["headers"].append(
        {"name": "x-token", "value": REDACTED}
    )
    expected["log"]["entries"][0]["_initiator"]["stack"] = "line one\n" + secret[1:]
    assert parsed == expected
    assert any("re-serialised" in said for said in result.removed)


def test_a_truncated_har_is_still_redacted_as_far_as_it_goes() -> None:
    text = json.dumps(har_value(), indent=2)
    cut = text[: text.index('"postData"')]
    result = redact(cut)
    for secret in (BEARER, API_KEY, GOOG, QUERY_KEY):
        assert secret not in result.text
    assert result.text.startswith('{\n  "log"')


def test_redaction_is_idempotent_on_a_har() -> None:
    once = redact(json.dumps(har_value(), indent=2))
    twice = redact(once.text)
    assert twice.removed == ()
    assert twice.text == once.text


CURL_V = f"""*   Trying 1.2.3.4:443...
* [HTTP/2] [1] [:method: POST]
* [HTTP/2] [1] [authorization: Bearer {BEARER}]
> POST /v1/chat/completions?api_key={QUERY_KEY} HTTP/2
> Host: api.example.com
> Authorization: Bearer {BEARER}
> Cookie: sid={COOKIE}
> X-Api-Key: {API_KEY}
> content-type: application/json
>
< HTTP/2 200
< content-type: text/event-stream
< set-cookie: sid={COOKIE}; Path=/
< x-ratelimit-remaining-tokens: 29000
<
{BODY}Authorization: x
"""

CURL_V_REDACTED = f"""*   Trying 1.2.3.4:443...
* [HTTP/2] [1] [:method: POST]
* [HTTP/2] [1] [authorization: {REDACTED}]
> POST /v1/chat/completions?api_key={REDACTED} HTTP/2
> Host: api.example.com
> Authorization: {REDACTED}
> Cookie: {REDACTED}
> X-Api-Key: {REDACTED}
> content-type: application/json
>
< HTTP/2 200
< content-type: text/event-stream
< set-cookie: {REDACTED}
< x-ratelimit-remaining-tokens: 29000
<
{BODY}Authorization: x
"""


def test_curl_v_dump_headers_are_redacted_and_the_body_untouched() -> None:
    result = redact(CURL_V)
    assert result.text == CURL_V_REDACTED
    assert result.removed == (
        "authorization header (line 3)",
        "query parameter 'api_key' (line 4)",
        "Authorization header (line 6)",
        "Cookie header (line 7)",
        "X-Api-Key header (line 8)",
        "set-cookie header (line 13)",
    )


def test_curl_i_dump_with_crlf() -> None:
    text = (
        "HTTP/1.1 200 OK\r\nSet-Cookie: sid=abc\r\nContent-Type: text/event-stream\r\n\r\n"
        "Set-Cookie: looks like a header but is the body\r\n" + BODY
    )
    result = redact(text)
    assert result.text == text.replace("Set-Cookie: sid=abc", f"Set-Cookie: {REDACTED}", 1)
    assert result.removed == ("Set-Cookie header (line 2)",)


def test_a_pasted_curl_command() -> None:
    text = (
        f"curl -sN 'https://api.example.com/v1/chat/completions?key={QUERY_KEY}' \\\n"
        f'  -H "Authorization: Bearer {BEARER}" \\\n'
        f"  --header='x-api-key: {API_KEY}' -H 'Content-Type: application/json' \\\n"
        f"  -b 'sid={COOKIE}' -u alice:hunter2hunter2 --oauth2-bearer tok-123 \\\n"
        '  -d \'{"model": "gpt-4o",\n'
        '       "messages": [{"role": "user", "content": "Authorization: Bearer no"}]}\'\n'
    )
    expected = (
        f"curl -sN 'https://api.example.com/v1/chat/completions?key={REDACTED}' \\\n"
        f'  -H "Authorization: {REDACTED}" \\\n'
        f"  --header='x-api-key: {REDACTED}' -H 'Content-Type: application/json' \\\n"
        f"  -b '{REDACTED}' -u alice:{REDACTED} --oauth2-bearer {REDACTED} \\\n"
        '  -d \'{"model": "gpt-4o",\n'
        '       "messages": [{"role": "user", "content": "Authorization: Bearer no"}]}\'\n'
    )
    result = redact(text)
    assert result.text == expected
    assert result.removed == (
        "query parameter 'key' (line 1)",
        "Authorization header in the curl command (line 2)",
        "x-api-key header in the curl command (line 3)",
        "cookie in the curl command (line 4)",
        "password in the curl command (line 4)",
        "bearer token in the curl command (line 4)",
    )


def test_shell_variables_are_not_secrets() -> None:
    text = (
        'curl https://api.openai.com/v1/chat/completions -H "Authorization: Bearer $OPENAI_API_KEY"'
        ' -H "api-key: ${AZURE_KEY}"\n'
    )
    assert redact(text) == Redaction(text, ())


@pytest.mark.parametrize(
    "text",
    [
        BODY,
        'data: {"choices": []}\n\nAuthorization: Bearer sk-in-a-body-line\n',
        json.dumps([{"choices": [{"delta": {"content": "Cookie: x"}}]}], indent=2),
        "HTTP/1.1 200 OK\nContent-Type: text/event-stream\n\n" + BODY,
        json.dumps({"log": {"entries": []}}),
        "",
    ],
)
def test_text_without_secrets_is_returned_unchanged(text: str) -> None:
    result = redact(text)
    assert result.text is text
    assert result.removed == ()


@settings(deadline=None)
@given(st.text())
def test_redact_never_raises_and_is_idempotent(text: str) -> None:
    once = redact(text)
    assert redact(once.text).text == once.text


@settings(deadline=None)
@given(st.integers(0, 10_000), st.text(max_size=5))
def test_redact_copes_with_a_broken_har(at: int, junk: str) -> None:
    text = json.dumps(har_value(), indent=1)
    at = at % len(text)
    broken = text[:at] + junk + text[at:]
    result = redact(broken)
    assert redact(result.text).text == result.text


def test_a_raw_request_dump_has_its_headers_redacted() -> None:
    text = (
        "POST /v1/chat/completions HTTP/1.1\n"
        "Host: api.example.com\n"
        f"Authorization: Bearer {BEARER}\n"
        f"Proxy-Authorization: Basic {API_KEY}\n"
        f"X-Session-Token: {COOKIE}\n"
        "\n"
        '{"model": "gpt-4o"}\n'
    )
    result = redact(text)
    for secret in (BEARER, API_KEY, COOKIE):
        assert secret not in result.text
    assert result.text.endswith('\n\n{"model": "gpt-4o"}\n')
    assert len(result.removed) == 3


@settings(deadline=None)
@given(st.binary())
def test_a_request_body_with_nothing_to_mask_is_kept_as_it_was(body: bytes) -> None:
    masked, said = mask_request(body)
    assert masked is body if not said else masked != body


def test_a_kept_request_body_loses_its_keys_and_no_other_byte() -> None:
    body = b'\xff\xfe{"api_key": "k-1234", "x": "sk-' + b"A" * 20 + b'"}\x80'
    masked, said = mask_request(body)
    assert said == ("member 'api_key' of the posted JSON", "API key (line 1)")
    assert masked.startswith(b'\xff\xfe{"api_key": "[redacted]", "x": "sk-')
    assert masked.endswith(b'"}\x80') and b"A" * 20 not in masked
    assert len(masked) == len(body) - len("k-1234") + len("[redacted]")


def test_a_comment_line_before_a_header_block_is_redacted_in_place() -> None:
    """The comment lines' edits are made after the blocks' but spliced in order: a secret in an
    SSE comment above a `> Authorization:` line was left in, and the text garbled."""
    data = 'data: {"choices":[]}\n\n'
    text = (
        f"{data}: api_key=abcdefghijklmnopqrstuvwx\n\n{data}> GET /v1 HTTP/1.1\n"
        f"> Authorization: Bearer abcdefghijklmnopqrstuvwx\n{data}"
    )
    done = redact(text)
    assert done.text == (
        f"{data}: api_key=[redacted]\n\n{data}> GET /v1 HTTP/1.1\n"
        f"> Authorization: [redacted]\n{data}"
    )
