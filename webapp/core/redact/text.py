"""Redaction of text: HTTP dumps and curl commands, header, command and comment lines only.

Blocks open at a status or request line (the header lines after it follow, folded ones too),
at a curl -v line (`> `, `< `, `* `), at a `curl` command after a shell prompt or not, or after
`sudo`/`time` (its continuation lines follow; its body, `-d`/`--data-urlencode`/`--json`/`-F`,
loses the values of members and pairs named like credentials), and, in the head of the input
(before its first `data:` or JSON line), at a header line pasted without a status line. The
head's other lines (a shell comment, a note) lose credential query parameters and URL
passwords, and SSE comment lines (`: ...`) anywhere the secrets written in them. Nothing else is
touched, so no line a reader reads is. Each pattern is matched once per line and cannot
backtrack across it.
"""

from __future__ import annotations

import re

from webapp.core.readers.http import PROMPT, quote_after
from webapp.core.redact.copies import splice
from webapp.core.redact.rules import (
    REDACTED,
    comment_lines,
    redact_comment,
    redact_json_members,
    redact_pairs,
    redact_query,
    redact_userinfo,
    secret_header,
    secret_param,
    variable_only,
)

_NAME = r"[!#$%&'*+.^_`|~0-9A-Za-z-]+"
_HEADER_NAME = re.compile(rf"(?P<name>{_NAME}):[ \t]*")
_STATUS_OR_REQUEST = re.compile(r"(?:HTTP/\d(?:\.\d)? \d{3}\b|[A-Z]+ \S+ HTTP/\d(?:\.\d)?[ \t]*$)")
_COMMAND_AT = PROMPT + r"curl(?:\.exe)?(?:[ \t]|$)"
_COMMAND = re.compile(_COMMAND_AT)
_OPENERS = rf"[<>*](?: |$)|HTTP/\d|[A-Z]+ \S+ HTTP/\d|{_COMMAND_AT}"
_OPENER = re.compile(rf"(?m)^(?:{_OPENERS})")
_HEAD_OPENER = re.compile(rf"(?m)^(?:{_OPENERS}|{_NAME}:)")
"""In the head, a header line also opens a block (headers pasted without a status line)."""
_MAY_OPEN = re.compile(r"\n(?!data: |data:\{|\r?\n)")
"""A line break before a line that may open a block: a stream's data lines (`data: ...`,
`data:{...}`) and blank lines never match `_OPENER` (not even as a prompt: `data:` is
followed by no `$#%>`), and a body is mostly those."""
_BODY_START = re.compile(r"(?m)^(?:data:|[ \t]*[{\[]|ChatCompletionChunk\()")
_LINE_END = re.compile(r"\r\n|\r|\n")
_BRACKETED = re.compile(rf"\[(?P<name>{_NAME}): (?P<value>[^\]\r\n]*)\]")


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
        # in order: the comment lines' edits come after the blocks', wherever they are
        return splice(self.text, sorted(self.spans))


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
    """Redact the header and command lines of a text; return it and what was removed."""
    edits = _Edits(text)
    body = _BODY_START.search(text)
    head_end = body.start() if body else len(text)
    pos, number, counted = 0, 1, 0
    while True:
        in_head = pos < head_end
        match = _HEAD_OPENER.search(text, pos, head_end) if in_head else _next_opener(text, pos)
        if in_head:  # the head's other lines (a comment, a note) may hold a URL with a key
            loose_end = head_end if match is None else match.start()
            _loose(text, pos, loose_end, number + text.count("\n", counted, pos), edits)
        if match is None:
            if in_head:
                pos = head_end
                continue
            break
        start = match.start()
        number += text.count("\n", counted, start)
        counted = start
        pos, body_follows = _block(text, start, number, edits, head_end if in_head else 0)
        if body_follows:
            head_end = min(head_end, pos)
        number += text.count("\n", start, pos)
        counted = pos
    _comments(text, edits)
    return edits.result(), edits.removed


def _next_opener(text: str, pos: int) -> re.Match[str] | None:
    """`_OPENER.search(text, pos)`, tried only at the starts of lines that may open a block
    (`_MAY_OPEN`) instead of at every character of a long body."""
    if pos == 0 or text[pos - 1] == "\n":
        match = _OPENER.match(text, pos)
        if match is not None:
            return match
    for line in _MAY_OPEN.finditer(text, pos):
        match = _OPENER.match(text, line.end())
        if match is not None:
            return match
    return None


def _loose(text: str, pos: int, end: int, number: int, edits: _Edits) -> None:
    """Lines of the head that open no block: credential query parameters and URL passwords
    (an SSE comment line is left to `_comments`)."""
    while pos < end:
        line_end, after = _line_end(text, pos)
        if text.startswith(":", pos):
            pos, number = after, number + 1
            continue
        line = text[pos:line_end]
        if "=" in line or "://" in line:
            new, said = _url_line(line, number)
            edits.line(pos, line_end, new, said)
        pos, number = after, number + 1


def _comments(text: str, edits: _Edits) -> None:
    """SSE comment lines (`: ...`) anywhere, but those a block edited already: the secrets
    written in them (`webapp.core.redact.rules.redact_comment`)."""
    if ":" not in text:
        return
    edited = {start for start, _, _ in edits.spans}
    number, counted = 1, 0
    for start, end in comment_lines(text):
        if start in edited:
            continue
        new, said, _ = redact_comment(text[start:end])
        if said:
            number += text.count("\n", counted, start)
            counted = start
            edits.line(start, end, new, [f"{what} (line {number})" for what in said])


def _block(text: str, start: int, number: int, edits: _Edits, head_end: int) -> tuple[int, bool]:
    """Redact the block of lines opening at `start`; return where the block ends, and whether
    a body follows it (after a status or request line's headers, or curl -v's `<` line)."""
    end, after = _line_end(text, start)
    line = text[start:end]
    if _COMMAND.match(line):
        return _command_block(text, start, number, edits), False
    if line[:1] in "<>*" and line[1:2] in (" ", ""):
        new, said = _verbose_line(line, number)
        edits.line(start, end, new, said)
        return after, line.rstrip() == "<"
    if _STATUS_OR_REQUEST.match(line):
        new, said = _url_line(line, number)
        edits.line(start, end, new, said)
        return _headers(text, after, number + 1, edits, len(text)), True
    if start < head_end and _HEADER_NAME.match(line):
        return _headers(text, start, number, edits, head_end), False
    return after, False


def _headers(text: str, start: int, number: int, edits: _Edits, limit: int) -> int:
    """Redact header lines from `start` (and the lines folded into them) until a blank line."""
    secret: str | None = None  # the name of the secret header the next folded line continues
    while start < limit:
        end, after = _line_end(text, start)
        line = text[start:end]
        if not line.strip():
            return start
        if _COMMAND.match(line):
            return start  # a command pasted right after the headers
        if line[0] in " \t":
            new, said = _folded(line, number, secret) if secret else _url_line(line, number)
        elif (header := _header(line)) is not None:
            secret = header[0] if secret_header(header[0]) else None
            new, said = _header_line(line, number, "")
        else:
            return start
        edits.line(start, end, new, said)
        start, number = after, number + 1
    return start


def _folded(line: str, number: int, name: str) -> tuple[str, list[str]]:
    """A line folded into a secret header's value (RFC 7230's obsolete line folding)."""
    value = line.strip(" \t")
    if not value or value == REDACTED or variable_only(value):
        return line, []
    start = len(line) - len(line.lstrip(" \t"))
    new = line[:start] + REDACTED + line[start + len(value) :]
    return new, [f"{name} header, folded line (line {number})"]


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
        new, more = _url_line(new, number)
        return prefix + new, said + more
    if _HEADER_NAME.match(rest):
        new, said = _header_line(rest, number, "")
        return prefix + new, said
    new, said = _url_line(rest, number)
    return prefix + new, said


def _header_line(line: str, number: int, where: str) -> tuple[str, list[str]]:
    header = _header(line)
    if header is None:
        return line, []
    name, value, start, end = header
    if secret_header(name) and value and value != REDACTED and not variable_only(value):
        return line[:start] + REDACTED + line[end:], [f"{name} header{where} (line {number})"]
    return _url_line(line, number)


def _url_line(line: str, number: int) -> tuple[str, list[str]]:
    """Credential query parameters and URL passwords in a line."""
    new, names, _ = redact_query(line)
    new, passwords = redact_userinfo(new)
    said = [f"query parameter {name!r} (line {number})" for name in names]
    return new, said + [f"password in a URL (line {number})" for _ in passwords]


_FLAG = re.compile(
    r"(?<!\S)(?P<flag>-[sSvkLNiIfq]*[HbuUdF]|--header|--cookie|--user|--oauth2-bearer"
    r"|--proxy-user|--data-urlencode|--data-binary|--data-ascii|--data-raw|--data|--json"
    r"|--form-string|--form)(?:=|[ \t]+)?(?=\S)"
)
_FLAG_NAMES = {
    "H": "--header",
    "b": "--cookie",
    "u": "--user",
    "U": "--proxy-user",
    "d": "--data",
    "F": "--form",
}
_DATA_FLAGS = frozenset(
    {"--data", "--data-raw", "--data-binary", "--data-ascii", "--data-urlencode", "--json"}
)
"""curl's flags whose argument is the request body: form pairs or JSON."""
_FORM_FLAGS = frozenset({"--form", "--form-string"})


def _command_block(text: str, start: int, number: int, edits: _Edits) -> int:
    """Redact a curl command and its continuation lines; return where it ends."""
    continues, quote = True, ""
    carry: _Carry = ("", False)
    after = start
    while continues and start < len(text):
        end, after = _line_end(text, start)
        line = text[start:end]
        new, said, carry = _command_line(line, number, carry)
        edits.line(start, end, new, said)
        quote = quote_after(line, quote)
        continues = bool(quote) or line.rstrip().endswith(("\\", "^", "`"))
        start, number = after, number + 1
    return after


def _argument(line: str, pos: int) -> tuple[int, int, str]:
    """A shell argument's content starting at `pos` (inside its quotes, if any): its span, and
    its quote when that is still open at the end of the line."""
    quote = line[pos]
    if quote in "'\"":
        close = pos + 1
        while close < len(line) and line[close] != quote:
            close += 2 if quote == '"' and line[close] == "\\" else 1
        return pos + 1, min(close, len(line)), quote if close >= len(line) else ""
    end = pos
    while end < len(line) and not line[end].isspace():
        end += 1
    return pos, end, ""


def _carried(line: str, quote: str) -> tuple[int, int, bool]:
    """The part of a line that continues a quoted secret from the line before: its span
    (blanks around it left out), and whether the quote is still open after the line."""
    end = 0
    while end < len(line) and line[end] != quote:
        end += 2 if quote == '"' and line[end] == "\\" else 1
    still_open, end = end >= len(line), min(end, len(line))
    start = len(line[:end]) - len(line[:end].lstrip(" \t"))
    return start, max(start, len(line[:end].rstrip(" \t"))), still_open


_Carry = tuple[str, bool]
"""A quote left open at the end of a command's line: the quote ("" when none), and whether it
holds a request body (form pairs or JSON) rather than one secret."""


def _command_line(line: str, number: int, carry: _Carry) -> tuple[str, list[str], _Carry]:
    """One line of a curl command; `carry` is the quoted argument left open on the line before."""
    spans: list[tuple[int, int, str]] = []
    said: list[str] = []
    skip = 0
    quote, is_body = carry
    if quote:
        start, end, still_open = _carried(line, quote)
        if is_body:
            new, what = _body_secrets(line[start:end])
            if what:
                spans.append((start, end, new))
                said += [f"{item} in the curl command (line {number})" for item in what]
        elif start < end and line[start:end] != REDACTED:
            spans.append((start, end, REDACTED))
            said.append(f"the rest of a secret in the curl command (line {number})")
        skip = len(line) if still_open else end + 1
        carry = carry if still_open else ("", False)
    for match in _FLAG.finditer(line, skip):
        if spans and match.start() < spans[-1][1]:
            continue  # inside an argument already redacted
        flag = _FLAG_NAMES.get(match.group("flag")[-1], match.group("flag"))
        start, end, open_quote = _argument(line, match.end())
        if open_quote and line.endswith("\\", start, end):  # the line's continuation stays
            end = start + len(line[start : end - 1].rstrip(" \t"))
        content = line[start:end]
        if flag in _DATA_FLAGS or flag in _FORM_FLAGS:
            new, what = _body_secrets(content, form=flag in _FORM_FLAGS)
            if what:
                spans.append((start, end, new))
                said += [f"{item} in the curl command (line {number})" for item in what]
            carry = (open_quote, True) if open_quote else carry
            continue
        span = _secret_in_argument(flag, content)
        if span is not None:
            spans.append((start + span[0], start + span[1], REDACTED))
            said.append(f"{_what(flag, content)} in the curl command (line {number})")
            carry = (open_quote, False) if open_quote else carry
    if spans:
        line = splice(line, spans)
    new, more = _url_line(line, number)
    return new, said + more, carry


def _body_secrets(content: str, *, form: bool = False) -> tuple[str, list[str]]:
    """A request body given to curl (-d, --data-urlencode, --json, -F): JSON members and form
    pairs named like credentials; the content with their values replaced, and what went."""
    if form:  # -F name=value (name=@file and name=<file name files: no secret in them)
        name, equals, value = content.partition("=")
        if not equals or value[:1] in ("@", "<") or value in ("", REDACTED):
            return content, []
        if variable_only(value) or not (secret_param(name) or secret_header(name)):
            return content, []
        return f"{name}={REDACTED}", [f"form field {name!r}"]
    return redact_posted(content)


def redact_posted(content: str) -> tuple[str, list[str]]:
    """A posted body (JSON or form data): the values of members and pairs named like
    credentials replaced; the content and what went."""
    new, names, _ = redact_json_members(content)
    said = [f"member {name!r} of the posted JSON" for name in names]
    new, names, _ = redact_pairs(new)
    said += [f"form parameter {name!r}" for name in names if name]
    return new, said


def _secret_in_argument(flag: str, content: str) -> tuple[int, int] | None:
    """The part of a curl argument that is secret, as a span within it."""
    if flag == "--header":
        header = _header(content)
        if header is None:
            return None
        name, value, start, end = header
        if not (secret_header(name) and value) or value == REDACTED:
            return None
        return None if variable_only(value) else (start, end)
    if flag in ("--user", "--proxy-user"):
        colon = content.find(":")
        if (
            colon < 0
            or content[colon + 1 :] in ("", REDACTED)
            or variable_only(content[colon + 1 :])
        ):
            return None
        return colon + 1, len(content)
    if flag == "--cookie" and "=" not in content:
        return None  # a cookie file's name, not cookies
    if content in ("", REDACTED) or variable_only(content):
        return None
    return 0, len(content)


def _what(flag: str, content: str) -> str:
    if flag == "--header":
        return f"{content.split(':', 1)[0]} header"
    return {
        "--cookie": "cookie",
        "--user": "password",
        "--proxy-user": "proxy password",
    }.get(flag, "bearer token")
