"""Hex and base64 runs a provider made (a chunk's id, a reasoning signature) are not secrets;
the same runs anywhere a user's text can be, and every key with a known shape, still are.

Before the fix the content scan took Mistral's chunk ids (32 hex digits), Anthropic's reasoning
signatures and OpenRouter's `reasoning.encrypted` data for a "hex secret" or a "base64 secret",
so real recordings stopped on the home form's "Secrets found" page with nothing secret in them.
"""

from __future__ import annotations

import json

import pytest

from tests.streamkit import har
from webapp.core.redact.content import scan
from webapp.core.redact.members import provider_data

KEY = b"provider-data-key"
HEX = "7b9ca0036a7148d9b31648d5292abe34"  # the shape of Mistral's chunk ids (a UUID, no dashes)
B64 = "EjQKMgEMOdbHA6W7+LCdrmzmriRlesl2Lp+9caTqsf55osFVUk/b525SSde4BBihgx7+c7aR"
KNOWN = {
    "sk-proj-Ab3dEfGh1jKlMn0pQrStUvWx": "API key",
    "AIzaSyD4bCdEfGhIjKlMnOpQrStUvWxYz012345": "API key",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N": "JWT",
}


ENCRYPTED = {"type": "reasoning.encrypted", "data": B64, "format": "google-gemini-v1", "index": 0}


def kinds(text: str) -> list[str]:
    return [finding.kind for finding in scan(text, KEY)]


def sse(value: object) -> str:
    return f"data: {json.dumps(value, separators=(',', ':'))}\n\n"


PROVIDER_MADE = {
    "a Mistral chunk id": sse({"id": HEX, "object": "chat.completion.chunk", "choices": []}),
    "a spaced member": f'data: {{"id" : "{HEX}", "choices": []}}\n\n',
    "an Anthropic signature": sse(
        {
            "choices": [
                {"delta": {"reasoning_details": [{"type": "reasoning.text", "signature": B64}]}}
            ]
        }
    ),
    "an OpenRouter encrypted detail": sse(
        {"choices": [{"delta": {"reasoning_details": [ENCRYPTED]}}]}
    ),
    "an encrypted detail, type after data": sse(
        {"reasoning_details": [{"data": B64, "format": "x", "type": "reasoning.encrypted"}]}
    ),
    "a Gemini thought signature": sse(
        {"extra_content": {"google": {"thought_signature": B64}}, "choices": []}
    ),
    "a Responses encrypted_content": sse({"item": {"encrypted_content": B64}}),
    "a system fingerprint": sse({"system_fingerprint": HEX, "choices": []}),
    "an obfuscation": sse({"obfuscation": B64, "choices": []}),
    "a repr's id": f"ChatCompletionChunk(id='{HEX}', choices=[], object='chat.completion.chunk')",
}


@pytest.mark.parametrize("name", list(PROVIDER_MADE))
def test_a_run_a_provider_made_is_not_a_secret(name: str) -> None:
    assert kinds(PROVIDER_MADE[name]) == []


def test_provider_data_inside_a_har_body_is_not_a_secret() -> None:
    """A HAR keeps the stream as a JSON string: the member's quotes are escaped there."""
    text = har({"id": HEX, "choices": []}, {"id": HEX, "choices": [], "signature": B64})
    assert f'\\"id\\": \\"{HEX}\\"' in text
    assert kinds(text) == []


USER_MADE = {
    "content": sse({"choices": [{"delta": {"content": HEX}}]}),
    "arguments": sse({"choices": [{"delta": {"tool_calls": [{"function": {"arguments": B64}}]}}]}),
    "api_key": sse({"api_key": HEX}),
    "a note": sse({"note": B64}),
    "data, not an encrypted detail": sse({"type": "reasoning.text", "data": B64}),
    "data of another object": sse(
        [{"type": "reasoning.encrypted", "data": "x"}, {"type": "text", "data": B64}]
    ),
    "an id with more after the run": sse({"id": f"{HEX} {HEX}"}),
    "an id's run cut by a dot": sse({"id": f"{HEX}.x"}),
    "a name of id in words": f"the id is {HEX}",
    "id= without quotes": f"id={HEX}",
}


@pytest.mark.parametrize("name", list(USER_MADE))
def test_the_same_run_elsewhere_is_still_a_secret(name: str) -> None:
    assert kinds(USER_MADE[name]) in (["hex secret"], ["base64 secret"], ["hex secret"] * 2)


@pytest.mark.parametrize("member", ["id", "signature", "data", "system_fingerprint"])
@pytest.mark.parametrize(("secret", "kind"), KNOWN.items())
def test_a_key_with_a_known_shape_is_a_secret_in_any_member(
    member: str, secret: str, kind: str
) -> None:
    text = sse({"type": "reasoning.encrypted", member: secret, "choices": []})
    assert kinds(text) == [kind]


def test_the_whole_value_is_read_with_its_own_quotes() -> None:
    start = len('{"id": "')
    text = f'{{"id": "{HEX}"}}'
    assert provider_data(text, start, start + len(HEX))
    assert not provider_data(text, start, start + len(HEX) - 1)  # not the whole value
    assert not provider_data(f'{{"id": "{HEX}\'}}', start, start + len(HEX))  # quotes differ
    assert not provider_data(HEX, 0, len(HEX))
    escaped = f'{{\\"id\\": \\"{HEX}\\"}}'
    at = escaped.index(HEX)
    assert provider_data(escaped, at, at + len(HEX))
    assert not provider_data(escaped.replace(f'{HEX}\\"', f'{HEX}"'), at, at + len(HEX))
