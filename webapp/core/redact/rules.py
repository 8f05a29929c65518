"""Which headers and parameters carry credentials, and the replacement they get."""

from __future__ import annotations

import re

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
