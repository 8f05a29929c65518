"""An HTTP response dump (`curl -i`, `curl -v 2>&1`): the status and headers before the body.

Recognised before the body: blank lines; a pasted `curl` command, after a shell prompt or not
(with `\\`, `^` or backtick continuations, or a quote left open); curl's `Note:`/`Warning:`
lines, its `-v` lines (`* `, `> `, `< `, `{ [5 bytes data]`, `} [...]`) and its progress meter;
a status line (`HTTP/1.1 200 OK`, `HTTP/2 200`) and the header lines after it. The last status wins
(`100 Continue`, a proxy's `200 Connection established`, redirects). The body keeps its
original line numbers; curl's own lines inside it become filler lines its reader ignores.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from webapp.core import words
from webapp.core.readers.parse import LINE_BREAK

STATUS = re.compile(r"HTTP/\d(?:\.\d)? (\d{3})\b[^\r\n]*")
HEADER = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+:")
VERBOSE = re.compile(r"(?:[*<>](?: |$)|[{}] \[)")
_CURL_NOTE = re.compile(r"(?:Note|Warning): ")
PROMPT = (
    r"[ \t]*+(?:\([^()\r\n]*+\)[ \t]*+)?"  # a virtualenv's "(venv) "
    r"(?:[\w.@:~/\\-]*+[$#%>]|PS[ \t][^>\r\n]*+>)?"  # user@box:~$, %, #, > (PS2), C:\>, PS C:\>
    r"[ \t]*+(?:(?:sudo|time|nohup|command|exec)[ \t]++)*+"
)
"""A shell prompt and what may stand before a command (`sudo`, `time`, ...): shared with
`webapp.core.redact`.

Every run is possessive: a run of blanks is taken whole by the first `[ \t]*+` (the prompt
and the virtualenv start with something else), so a line of n blanks costs n steps, not the
n * n of two greedy runs trading blanks (tests/test_linear_runs.py)."""
COMMAND = re.compile(PROMPT + r"curl(?:\.exe)?(?:[ \t]|$)")
_PROGRESS = re.compile(
    r"[ \t]*(?:% Total\b|Dload\b|\d{1,3}[ \t]+\S+[ \t]+\d{1,3}[ \t]+\S+[ \t]+\d{1,3}[ \t].*"
    r"(?:--:--:--|\d:\d\d:\d\d))"
)
_BODY_VERBOSE = re.compile(r"(?m)^(?:[*<>](?: [^\r\n]*)?|[{}] \[[^\r\n]*)\r?$")
_BODY_PROGRESS = re.compile(
    r"(?<![^\r\n])[ \t]*(?:% Total\b|Dload\b|\d{1,3}[ \t]+\S+[ \t]+\d{1,3}[ \t])[^\r\n]*"
    r"(?:--:--:--|\d:\d\d:\d\d|Speed)[^\r\n]*"
)


@dataclass(frozen=True, slots=True)
class Dump:
    """What stood before the body, and the body itself."""

    status: int
    status_line: str
    body: str
    first_line: int
    """The number of the body's first line in the whole input."""
    skipped: int
    """How many lines stood before the body."""
    verbose: bool
    progress: bool
    content_type: str | None


def lines(text: str) -> Iterator[tuple[int, int, int]]:
    """Yield (start, end without the line break, start of the next line), lazily."""
    pos, size = 0, len(text)
    while pos < size:
        match = LINE_BREAK.search(text, pos)
        if match is None:
            yield pos, size, size
            return
        yield pos, match.start(), match.end()
        pos = match.end()


_UNQUOTED = re.compile(r"""(?:[^'"\\]++|\\.?)*+""", re.DOTALL)
_IN_QUOTES = {"'": re.compile(r"[^']*+"), '"': re.compile(r'(?:[^"\\]++|\\.?)*+', re.DOTALL)}


def quote_after(line: str, quote: str) -> str:
    """The shell quote (`'`, `"` or "") still open after this line, given the one open before."""
    pos = 0
    while True:
        match = (_IN_QUOTES[quote] if quote else _UNQUOTED).match(line, pos)
        pos = match.end() if match else len(line)  # these patterns always match
        if pos >= len(line):
            return quote
        quote = "" if quote else line[pos]
        pos += 1


def command_continues(line: str, quote: str) -> tuple[bool, str]:
    """Whether a shell command goes on after this line, and the quote still open after it."""
    quote = quote_after(line, quote)
    return bool(quote) or line.rstrip().endswith(("\\", "^", "`")), quote


class _Head:
    """The state while reading the lines before the body."""

    def __init__(self) -> None:
        self.status: int | None = None
        self.status_line = ""
        self.content_type: str | None = None
        self.verbose = False
        self.progress = False
        self.in_headers = False
        self.in_command = False
        self.quote = ""

    def take(self, line: str) -> bool:
        """Consume a line that belongs before the body; False when the body starts here."""
        if self.in_command:
            self.in_command, self.quote = command_continues(line, self.quote)
            return True
        if not line.strip():
            self.in_headers = False
            return True
        if VERBOSE.match(line):
            self.verbose = True
            if line.startswith("< "):
                self._header_or_status(line[2:])
            return True
        if STATUS.match(line):
            self._header_or_status(line)
            self.in_headers = True
            return True
        if self.in_headers and (HEADER.match(line) or line[0] in " \t"):
            self._header_or_status(line)
            return True
        if _PROGRESS.match(line):
            self.progress = True
            return True
        if self.status is None and _CURL_NOTE.match(line):
            return True
        if self.status is None and COMMAND.match(line):
            self.in_command, self.quote = command_continues(line, "")
            return True
        return False

    def _header_or_status(self, line: str) -> None:
        match = STATUS.match(line)
        if match:
            self.status, self.status_line = int(match.group(1)), line.strip()
        elif line.lower().startswith("content-type:"):
            self.content_type = line.split(":", 1)[1].strip()


def split_dump(text: str) -> Dump | None:
    """Split an HTTP response dump into its head and body; None if there is no status line."""
    head = _Head()
    number = 1
    body_start = len(text)
    for start, end, _next in lines(text):
        if not head.take(text[start:end]):
            body_start = start
            break
        number += 1
    if head.status is None:
        return None
    return Dump(
        status=head.status,
        status_line=head.status_line,
        body=text[body_start:],
        first_line=number,
        skipped=number - 1,
        verbose=head.verbose,
        progress=head.progress,
        content_type=head.content_type,
    )


def clean_body(dump: Dump, filler: str) -> tuple[str, int]:
    """The body with curl's own lines replaced by `filler`, and how many there were."""
    body, count = dump.body, 0
    if dump.verbose:
        body, count = _BODY_VERBOSE.subn(filler, body)
    if dump.progress or "Dload" in body or "--:--:--" in body:
        body, more = _BODY_PROGRESS.subn(filler, body)
        count += more
    return body, count


def notes(dump: Dump, cleaned: int) -> list[str]:
    """What a person should know about the part of the dump that was not read."""
    said = [
        f"skipped {words.count(dump.skipped, 'line')} of HTTP status and headers before the body "
        f"(lines 1-{dump.skipped}; status {dump.status_line!r}); line numbers are the input's"
    ]
    if not 200 <= dump.status < 300:
        said.append(
            f"the response status is {dump.status}, not a success: "
            "the body is likely an error message rather than a stream"
        )
    if cleaned:
        said.append(f"ignored {words.count(cleaned, 'line')} of curl's own output inside the body")
    return said
