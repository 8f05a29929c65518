"""Which member a run of text is the value of, and whether that member holds provider data.

The content scan (`webapp.core.redact.content`) takes a long hex or base64 run for a secret by
its shape alone. A stream is full of such runs that a provider made and no user ever typed: a
chunk's `id` (Mistral's, and DeepSeek's on Azure, are 32 hex digits), the `signature` of a
reasoning block (Anthropic's, through OpenRouter or a gateway), the `data` of an OpenRouter
`reasoning.encrypted` detail (Gemini's and Grok's thought signatures), `encrypted_content`,
`system_fingerprint`, `obfuscation`. A run that is the whole string value of such a member is
data, not a credential. Only these shape-guessed kinds are judged here: a run with a key's
prefix (`sk-`, `AIza`, ...), a JWT, a bearer token or an address is a secret wherever it is,
and a member named like a credential (`api_key`, `token`) never counts as provider data.

Every look is bounded (the name within `_NAME_REACH` characters before the value, an
encrypted detail's `type` within `_TYPE_REACH`), so a scan stays linear in its input.
"""

from __future__ import annotations

import re

PROVIDER_DATA = frozenset(
    {
        "id",
        "signature",
        "thought_signature",
        "thoughtSignature",
        "encrypted_content",
        "system_fingerprint",
        "obfuscation",
    }
)
"""Members whose string value a provider made: an id, a signature, an encrypted blob."""
ENCRYPTED = "reasoning.encrypted"
"""The `type` of an OpenRouter reasoning detail whose `data` member is a signature."""

_NAME_REACH = 96
_TYPE_REACH = 160
_SLASHES = 8
"""A value's opening quote may be escaped (JSON inside a JSON string, as a HAR body keeps an
SSE stream): up to this many backslashes before it are read."""
_NAME = re.compile(
    r"(?:\\*\"(?P<member>[A-Za-z_][\w.-]{0,63})\\*\"[ \t\r\n]*:"  # "name": (JSON, escaped)
    r"|(?<![\w.])(?P<keyword>[A-Za-z_]\w{0,63})=)"  # name= (an openai-python repr)
    r"[ \t\r\n]*\Z"
)


def provider_data(text: str, start: int, end: int) -> bool:
    """Whether `text[start:end]` is the whole string value of a member that holds provider
    data (`PROVIDER_DATA`, or the `data` of a `reasoning.encrypted` detail)."""
    if start == 0 or text[start - 1] not in "\"'":
        return False
    quote = start - 1
    while quote > 0 and start - 1 - quote < _SLASHES and text[quote - 1] == "\\":
        quote -= 1
    if not text.startswith(text[quote:start], end):
        return False  # the run is not the whole value
    name = _NAME.search(text, max(0, quote - _NAME_REACH), quote)
    if name is None:
        return False
    member = name.group("member") or name.group("keyword")
    if member in PROVIDER_DATA:
        return True
    return member == "data" and _encrypted_detail(text, name.start(), end)


def _encrypted_detail(text: str, before: int, after: int) -> bool:
    """Whether the object around a member (from `before` to `after`) is a reasoning detail of
    type `reasoning.encrypted`: its `type` comes before the member or after its value."""
    head = text[max(0, before - _TYPE_REACH) : before]
    head = head[head.rfind("{") + 1 :]
    tail = text[after : after + _TYPE_REACH]
    closing = tail.find("}")
    tail = tail if closing < 0 else tail[:closing]
    return ENCRYPTED in head or ENCRYPTED in tail
