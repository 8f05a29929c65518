"""Secrets that used to survive redaction: each one is removed, and every other byte stays."""

from __future__ import annotations

import pytest

from webapp.core.readers import read
from webapp.core.redact import REDACTED, redact

T = "sk-proj-SECRET0123456789"
R = REDACTED
SSE = 'data: {"choices": []}\n\ndata: [DONE]\n\n'

CASES = [
    # (input, expected output, what the notes say)
    (
        f"% curl https://api.example.com -H 'Authorization: Bearer {T}'\n",
        f"% curl https://api.example.com -H 'Authorization: {R}'\n",
        ["Authorization header in the curl command (line 1)"],
    ),
    (
        f'user@box:~$ curl https://x -H "Authorization: Bearer {T}"\n',
        f'user@box:~$ curl https://x -H "Authorization: {R}"\n',
        ["Authorization header in the curl command (line 1)"],
    ),
    (
        f'PS C:\\> curl.exe https://x -H "api-key: {T}"\n',
        f'PS C:\\> curl.exe https://x -H "api-key: {R}"\n',
        ["api-key header in the curl command (line 1)"],
    ),
    (
        f"sudo curl https://x -H 'x-api-key: {T}'\n",
        f"sudo curl https://x -H 'x-api-key: {R}'\n",
        ["x-api-key header in the curl command (line 1)"],
    ),
    (
        f"(venv) me@host:~/src$ curl https://x --header 'anthropic-api-key: {T}'\n",
        f"(venv) me@host:~/src$ curl https://x --header 'anthropic-api-key: {R}'\n",
        ["anthropic-api-key header in the curl command (line 1)"],
    ),
    (
        f"> curl https://x -H 'Authorization: Bearer {T}'\n",
        f"> curl https://x -H 'Authorization: {R}'\n",
        ["Authorization header in the curl command (line 1)"],
    ),
    (
        f"$ curl https://x \\\n> -H 'Authorization: Bearer {T}' \\\n> -d '{{}}'\n" + SSE,
        f"$ curl https://x \\\n> -H 'Authorization: {R}' \\\n> -d '{{}}'\n" + SSE,
        ["Authorization header in the curl command (line 2)"],
    ),
    (
        f'curl https://x -H "Authorization: Bearer \\\n   {T}" -d "{{}}"\n',
        f'curl https://x -H "Authorization: {R} \\\n   {R}" -d "{{}}"\n',
        [
            "Authorization header in the curl command (line 1)",
            "the rest of a secret in the curl command (line 2)",
        ],
    ),
    (
        f"Authorization: Bearer {T}\nContent-Type: application/json\n\n" + SSE,
        f"Authorization: {R}\nContent-Type: application/json\n\n" + SSE,
        ["Authorization header (line 1)"],
    ),
    (
        f"curl https://user:{T}@api.example.com/v1\n",
        f"curl https://user:{R}@api.example.com/v1\n",
        ["password in a URL (line 1)"],
    ),
    (
        f"curl -x http://user:{T}@proxy:8080 https://x\n",
        f"curl -x http://user:{R}@proxy:8080 https://x\n",
        ["password in a URL (line 1)"],
    ),
    (
        f"curl -sSu user:{T} https://x -U proxy:{T}\n",
        f"curl -sSu user:{R} https://x -U proxy:{R}\n",
        [
            "password in the curl command (line 1)",
            "proxy password in the curl command (line 1)",
        ],
    ),
    (
        f"HTTP/1.1 200 OK\nAuthorization: Bearer\n {T}\nX: y\n\n" + SSE,
        f"HTTP/1.1 200 OK\nAuthorization: {R}\n {R}\nX: y\n\n" + SSE,
        ["Authorization header (line 2)", "Authorization header, folded line (line 3)"],
    ),
    (
        f"openai-organization: org-{T}\nOpenAI-Project: proj_{T}\n"
        f"Ocp-Apim-Subscription-Key: {T}\n\n" + SSE,
        f"openai-organization: {R}\nOpenAI-Project: {R}\nOcp-Apim-Subscription-Key: {R}\n\n" + SSE,
        [
            "openai-organization header (line 1)",
            "OpenAI-Project header (line 2)",
            "Ocp-Apim-Subscription-Key header (line 3)",
        ],
    ),
    (
        f"< HTTP/2 200\n< openai-organization: org-{T}\n<\n" + SSE,
        f"< HTTP/2 200\n< openai-organization: {R}\n<\n" + SSE,
        ["openai-organization header (line 2)"],
    ),
]


@pytest.mark.parametrize(("text", "expected", "removed"), CASES)
def test_the_secret_is_removed_and_nothing_else(
    text: str, expected: str, removed: list[str]
) -> None:
    result = redact(text)
    assert result.text == expected
    assert list(result.removed) == removed
    assert redact(result.text).removed == ()


def test_pasted_headers_are_not_quoted_back_in_the_notes() -> None:
    text = f"Authorization: Bearer {T}\nx-api-key: {T}\n\n" + SSE
    result = read(redact(text).text)
    assert result.notes and all(T not in note for note in result.notes)


@pytest.mark.parametrize(
    "text",
    [
        'data: {"a": "see https://user:$PASS@host"}\n\nAuthorization: Bearer in-the-body\n',
        "curl https://x -H 'Authorization: Bearer $OPENAI_API_KEY' -u me:$PW\n",
        "HTTP/1.1 200 OK\nContent-Type: text/event-stream\n\nAuthorization: Bearer body\n",
        "< HTTP/2 200\n<\nx-api-key: in-the-body\n",
    ],
)
def test_bodies_and_variables_are_left_alone(text: str) -> None:
    assert redact(text).text is text
