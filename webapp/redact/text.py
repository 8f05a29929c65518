"""Redaction of text: HTTP dumps and curl commands, header and command lines only.

Blocks open at a status or request line (the header lines after it follow), at a curl -v
line (`> `, `< `, `* `), or at a `curl` command (its continuation lines follow); nothing else
is touched, so a body never is.
"""

from __future__ import annotations

import re

from webapp.redact.rules import REDACTED, redact_query, secret_header, variable_only

_HEADER_NAME = re.compile(r"(?P<name>[!#$%&'*+.^_`|~0-9A-Za-z-]+):[ \t]*")
_STATUS_OR_REQUEST = re.compile(r"(?:HTTP/\d(?:\.\d)? \d{3}\b|[A-Z]+ \S+ HTTP/\d(?:\.\d)?[ \t]*$)")
_COMMAND = re.compile(r"[ \t]*(?:\$[ \t]*)?curl(?:\.exe)?(?:[ \t]|$)")
_OPENER = re.compile(
    r"(?m)^(?:[<>*](?: |$)|HTTP/\d|[A-Z]+ \S+ HTTP/\d|[ \t]*(?:\$[ \t]*)?curl(?:\.exe)?\b)"
)
_LINE_END = re.compile(r"\r\n|\r|\n")
_BRACKETED = re.compile(r"\[(?P<name>[!#$%&'*+.^_`|~0-9A-Za-z-]+): (?P<value>[^\]\r\n]*)\]")


class _Edits:
    """Replacements in the text, by line, with what each removed."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.spans: list[tuple[int, int, str]] = []
        self.removed: list[str] = []

    def line(self, start: int, end: int, new: str, said: list[str]) -> None:
        if said:
            self.spans.append((start, end, new))
            self.removed.extend(said)

    def result(self) -> str:
        return _splice(self.text, self.spans)


def _splice(text: str, spans: list[tuple[int, int, str]]) -> str:
    """The text with each (start, end) span, in order and apart, replaced by its new text."""
    pieces, last = [], 0
    for start, end, new in spans:
        pieces += [text[last:start], new]
        last = end
    pieces.append(text[last:])
    return "".join(pieces)


def _header(line: str) -> tuple[str, str, int, int] | None:
    """A `name: value` line's name, value and the value's span (without trailing blanks)."""
    match = _HEADER_NAME.match(line)
    if match is None:
        return None
    start = match.end()
    end = max(start, len(line.rstrip(" \t")))
    return match.group("name"), line[start:end], start, end


def _line_end(text: str, pos: int) -> tuple[int, int]:
    match = _LINE_END.search(text, pos)
    return (match.start(), match.end()) if match else (len(text), len(text))


def redact_text(text: str) -> tuple[str, list[str]]:
    edits = _Edits(text)
    pos, number, counted = 0, 1, 0
    while (match := _OPENER.search(text, pos)) is not None:
        start = match.start()
        number += text.count("\n", counted, start)
        counted = start
        pos = _block(text, start, number, edits)
        number += text.count("\n", start, pos)
        counted = pos
    return edits.result(), edits.removed


def _block(text: str, start: int, number: int, edits: _Edits) -> int:
    """Redact the block of lines opening at `start`; return where the block ends."""
    end, after = _line_end(text, start)
    line = text[start:end]
    if line[:1] in "<>*" and line[1:2] in (" ", ""):
        new, said = _verbose_line(line, number)
        edits.line(start, end, new, said)
        return after
    if _COMMAND.match(line):
        return _command_block(text, start, number, edits)
    if not _STATUS_OR_REQUEST.match(line):
        return after
    new, said = _query_line(line, number)
    edits.line(start, end, new, said)
    while after < len(text):
        number += 1
        start = after
        end, after = _line_end(text, start)
        line = text[start:end]
        if not line.strip() or not (_HEADER_NAME.match(line) or line[0] in " \t"):
            return start
        new, said = _header_line(line, number, "")
        edits.line(start, end, new, said)
    return after


def _verbose_line(line: str, number: int) -> tuple[str, list[str]]:
    """A curl -v line: `> `/`< ` headers and request lines, `* [HTTP/2] [1] [name: value]`."""
    prefix, rest = line[:2], line[2:]
    if line.startswith("*"):
        said: list[str] = []

        def bracketed(match: re.Match[str]) -> str:
            name, value = match.group("name"), match.group("value")
            if not secret_header(name) or not value or value == REDACTED:
                return match.group(0)
            said.append(f"{name} header (line {number})")
            return f"[{name}: {REDACTED}]"

        last = rest.rfind("]") + 1  # no match can end past it: no scan runs on to the end
        new = _BRACKETED.sub(bracketed, rest[:last]) + rest[last:]
        new, more = _query_line(new, number)
        return prefix + new, said + more
    if _HEADER_NAME.match(rest):
        new, said = _header_line(rest, number, "")
        return prefix + new, said
    new, said = _query_line(rest, number)
    return prefix + new, said


def _header_line(line: str, number: int, where: str) -> tuple[str, list[str]]:
    header = _header(line)
    if header is None:
        return line, []
    name, value, start, end = header
    if secret_header(name) and value and value != REDACTED and not variable_only(value):
        return line[:start] + REDACTED + line[end:], [f"{name} header{where} (line {number})"]
    return _query_line(line, number)


def _query_line(line: str, number: int) -> tuple[str, list[str]]:
    new, names, _ = redact_query(line)
    return new, [f"query parameter {name!r} (line {number})" for name in names]


_FLAG = re.compile(
    r"(?<!\S)(?P<flag>-H|--header|-b|--cookie|-u|--user|--oauth2-bearer|--proxy-user)"
    r"(?:=|[ \t]+)?(?=\S)"
)


def _command_block(text: str, start: int, number: int, edits: _Edits) -> int:
    continues, quote_open = True, False
    after = start
    while continues and start < len(text):
        end, after = _line_end(text, start)
        line = text[start:end]
        new, said = _command_line(line, number)
        edits.line(start, end, new, said)
        if line.count("'") % 2:
            quote_open = not quote_open
        continues = quote_open or line.rstrip().endswith(("\\", "^", "`"))
        start, number = after, number + 1
    return after


def _argument(line: str, pos: int) -> tuple[int, int]:
    """The span of a shell argument's content starting at `pos` (inside its quotes, if any)."""
    quote = line[pos]
    if quote in "'\"":
        close = pos + 1
        while close < len(line) and line[close] != quote:
            close += 2 if quote == '"' and line[close] == "\\" else 1
        return pos + 1, min(close, len(line))
    end = pos
    while end < len(line) and not line[end].isspace():
        end += 1
    return pos, end


def _command_line(line: str, number: int) -> tuple[str, list[str]]:
    spans: list[tuple[int, int]] = []
    said: list[str] = []
    for match in _FLAG.finditer(line):
        if spans and match.start() < spans[-1][1]:
            continue  # inside an argument already redacted
        flag = match.group("flag")
        start, end = _argument(line, match.end())
        content = line[start:end]
        span = _secret_in_argument(flag, content)
        if span is not None:
            spans.append((start + span[0], start + span[1]))
            said.append(f"{_what(flag, content)} in the curl command (line {number})")
    if spans:
        line = _splice(line, [(start, end, REDACTED) for start, end in spans])
    new, more = _query_line(line, number)
    return new, said + more


def _secret_in_argument(flag: str, content: str) -> tuple[int, int] | None:
    """The part of a curl argument that is secret, as a span within it."""
    if flag in ("-H", "--header"):
        header = _header(content)
        if header is None:
            return None
        name, value, start, end = header
        if not (secret_header(name) and value) or value == REDACTED:
            return None
        return None if variable_only(value) else (start, end)
    if flag in ("-u", "--user", "--proxy-user"):
        colon = content.find(":")
        if (
            colon < 0
            or content[colon + 1 :] in ("", REDACTED)
            or variable_only(content[colon + 1 :])
        ):
            return None
        return colon + 1, len(content)
    if flag in ("-b", "--cookie") and "=" not in content:
        return None  # a cookie file's name, not cookies
    if content in ("", REDACTED) or variable_only(content):
        return None
    return 0, len(content)


def _what(flag: str, content: str) -> str:
    if flag in ("-H", "--header"):
        return f"{content.split(':', 1)[0]} header"
    return {
        "-b": "cookie",
        "--cookie": "cookie",
        "-u": "password",
        "--user": "password",
        "--proxy-user": "proxy password",
    }.get(flag, "bearer token")
