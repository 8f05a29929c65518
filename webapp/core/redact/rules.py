"""Which headers and parameters carry credentials, and the replacement they get."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

from webapp.core.redact.copies import splice

REDACTED = "[redacted]"
LONG_ENOUGH = 8
"""Secrets at least this long are also replaced wherever else they occur."""

_SECRET_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "cookie",
        "set-cookie",
        "api-key",
        "x-api-key",
        "openai-api-key",
        "x-goog-api-key",
        "openai-organization",  # ids rather than secrets, but they name an account
        "openai-project",
        "x-auth-key",
    }
)
_SECRET_HEADER_PARTS = (
    "api-key",
    "apikey",
    "api_key",
    "secret",
    "password",
    "authorization",
    "subscription-key",  # Azure API Management's Ocp-Apim-Subscription-Key
)
_TOKEN_WORD = re.compile(r"token(?!s)")  # not x-ratelimit-remaining-tokens
_SECRET_PARAMS = frozenset(
    {
        "key",
        "api_key",
        "apikey",
        "api-key",
        "token",
        "access_token",
        "refresh_token",
        "id_token",
        "auth_token",
        "client_secret",
        "secret",
        "password",
        "sig",
        "signature",
    }
)
_QUERY_PARAM = re.compile(r"(?<=[?&;])(?P<name>[^=&#?;\s'\"<>]+)=(?P<value>[^&#;\s'\"<>]*)")
_VARIABLE = re.compile(
    r"(?:(?:Bearer|Basic|Token)[ \t]+)?(?:\$\w+|\$\{\w+\}|%\w+%|\$env:\w+)", re.IGNORECASE
)
_USERINFO = re.compile(
    r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*://"  # starts only where a scheme can start
    r"[^\s/?#@:'\"<>]*:(?P<password>[^\s/?#@'\"<>]+)@"
)
_SCHEME = re.compile(r"(?:Bearer|Basic|Token)[ \t]+(?P<token>\S+)$", re.IGNORECASE)


def secret_header(name: str) -> bool:
    """Whether a header of this name carries credentials."""
    lowered = name.strip().lower()
    return (
        lowered in _SECRET_HEADERS
        or any(part in lowered for part in _SECRET_HEADER_PARTS)
        or _TOKEN_WORD.search(lowered) is not None
    )


def secret_param(name: str) -> bool:
    """Whether a query or form parameter of this name carries credentials."""
    return name.strip().lower() in _SECRET_PARAMS


def variable_only(value: str) -> bool:
    """Whether a value only names a shell variable (`$OPENAI_API_KEY`): no secret in it."""
    return _VARIABLE.fullmatch(value.strip()) is not None


def redact_query(text: str) -> tuple[str, list[str], list[str]]:
    """Replace the values of sensitive query parameters; return the text, names and values."""
    names: list[str] = []
    values: list[str] = []

    def replace(match: re.Match[str]) -> str:
        name, value = match.group("name"), match.group("value")
        if not secret_param(name) or value in ("", REDACTED):
            return match.group(0)
        names.append(name)
        values.append(value)
        return f"{name}={REDACTED}"

    if "=" not in text:
        return text, names, values
    return _QUERY_PARAM.sub(replace, text), names, values


def redact_userinfo(text: str) -> tuple[str, list[str]]:
    """Replace the passwords of `scheme://user:password@host` URLs; return the text and them."""
    passwords: list[str] = []

    def replace(match: re.Match[str]) -> str:
        password = match.group("password")
        if password == REDACTED or variable_only(password):
            return match.group(0)
        passwords.append(password)
        start, end = match.span("password")
        whole = match.start()
        return match.group(0)[: start - whole] + REDACTED + match.group(0)[end - whole :]

    if "://" not in text:
        return text, passwords
    return _USERINFO.sub(replace, text), passwords


def secrets_in(value: str) -> list[str]:
    """The value, and the token alone when it is `Bearer <token>` or the like."""
    scheme = _SCHEME.match(value.strip())
    return [value, scheme.group("token")] if scheme else [value]


def redact_pairs(text: str) -> tuple[str, list[str], list[str]]:
    """Form data (`a=1&api_key=...`, as curl's -d and --data-urlencode send it): the values of
    the pairs named like credentials replaced; the text, the names and the values."""
    new, names, values = redact_query("&" + text)
    return new[1:], names, values


_JSON_MEMBER = re.compile(
    r'"(?P<name>[^"\\]{1,64})"[ \t\r\n]*:[ \t\r\n]*"(?P<value>(?:[^"\\]|\\.)*+)"'
)


def _unescaped(value: str) -> str:
    try:
        decoded = json.loads(f'"{value}"', strict=False)
    except ValueError:
        return value
    return decoded if isinstance(decoded, str) else value


def redact_json_members(text: str) -> tuple[str, list[str], list[str]]:
    """JSON text (a posted body): the string values of members named like credentials
    (`"api_key": "..."`) replaced; the text, the names and the values."""
    names: list[str] = []
    values: list[str] = []
    spans: list[tuple[int, int, str]] = []
    if '"' not in text:
        return text, names, values
    for match in _JSON_MEMBER.finditer(text):
        name, value = match.group("name"), match.group("value")
        if value in ("", REDACTED) or not (secret_param(name) or secret_header(name)):
            continue
        names.append(name)
        values.append(_unescaped(value))
        spans.append((*match.span("value"), REDACTED))
    return splice(text, spans), names, values


_COMMENT_HEADER = re.compile(r"[ \t]*+(?P<name>[!#$%&'*+.^_`|~0-9A-Za-z-]+):[ \t]*+")
_PAIR = re.compile(
    r"(?<![\w.-])(?P<name>[A-Za-z][\w.-]{0,63}+)[ \t]*+(?:=|:[ \t]*+)(?P<value>[^\s&;,'\"<>]++)"
)


def redact_comment(line: str) -> tuple[str, list[str], list[str]]:
    """An SSE comment line (`: ...`, which no reader reads): a credential header written in it
    (`: Authorization: Bearer ...`), credential query parameters and URL passwords, and pairs
    named like credentials (`: api_key=...`) replaced; the line, what went (in words, without
    where) and the values."""
    said: list[str] = []
    values: list[str] = []
    header = _COMMENT_HEADER.match(line, 1)
    if header is not None and secret_header(header.group("name")):
        value = line[header.end() :].rstrip(" \t")
        if value and value != REDACTED and not variable_only(value):
            said.append(f"{header.group('name')} header in a comment line")
            values.extend(secrets_in(value))
            line = line[: header.end()] + REDACTED + line[header.end() + len(value) :]
    line, names, found = redact_query(line)
    said += [f"query parameter {name!r} in a comment line" for name in names]
    values += found
    line, passwords = redact_userinfo(line)
    said += ["password in a URL in a comment line" for _ in passwords]
    values += passwords
    line, names, found = redact_json_members(line)
    said += [f"member {name!r} of JSON in a comment line" for name in names]
    values += found
    spans: list[tuple[int, int, str]] = []
    for match in _PAIR.finditer(line):
        name, value = match.group("name"), match.group("value")
        if value == REDACTED or variable_only(value):
            continue
        if secret_param(name) or secret_header(name):
            spans.append((*match.span("value"), REDACTED))
            said.append(f"{name!r} in a comment line")
            values.append(value)
    return splice(line, spans), said, values


COMMENT_LINE = re.compile(r"(?m)^:[^\r\n]*")
_COMMENT_AFTER_BREAK = re.compile(r"\n:[^\r\n]*")


def comment_lines(text: str) -> Iterator[tuple[int, int]]:
    """The spans `COMMENT_LINE.finditer` finds, found from each line break (a search for a
    literal, at C speed) instead of by trying `^` at every character of a long body."""
    first = COMMENT_LINE.match(text)
    if first is not None:
        yield first.span()
    for match in _COMMENT_AFTER_BREAK.finditer(text):
        yield match.start() + 1, match.end()


def redact_comments(text: str) -> tuple[str, list[str], list[str]]:
    """The SSE comment lines of a body with the secrets in them replaced (`redact_comment`);
    every other line as it was. The text, what went and the values."""
    said: list[str] = []
    values: list[str] = []
    spans: list[tuple[int, int, str]] = []
    for start, end in comment_lines(text):
        new, what, found = redact_comment(text[start:end])
        if what:
            spans.append((start, end, new))
            said += what
            values += found
    return splice(text, spans), said, values
