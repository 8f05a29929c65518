"""Split template lines over 160 characters where the rendered page cannot change:
`python scripts/template_lines.py templates/*.html` (`tests/web/test_web_templates_print.py`
keeps the limit).

A line is split before a Jinja tag that follows a non-space, the tag given whitespace control
(`{%-`, `{{-`: the newline and indent added are stripped); else at a space outside any tag, the
next line starting with `{#- #}` (an empty comment that strips them the same way). A line in a
`<pre>` or `<textarea>` is split only the first way. What is left (a long attribute, a long
expression) is reported, to split by hand inside the tag or the expression.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

LIMIT = 160
AIM = 130
"""Where a split by a space is looked for first, so the lines come out well under the limit."""
TAG = re.compile(r"\{[%{](?![-+])")
CLOSING = {"{{": "}}", "{%": "%}", "{#": "#}"}


def _too_long(line: str) -> bool:
    return len(line.encode("utf-8")) > LIMIT  # as `awk 'length>160'` counts them


def _before_tags(line: str, pad: str) -> list[str]:
    """The line split before tags that follow a non-space, each given whitespace control."""
    out: list[str] = []
    rest = line
    while _too_long(rest):
        starts = [m.start() for m in TAG.finditer(rest) if len(pad) + 10 < m.start() <= LIMIT]
        starts = [start for start in starts if not rest[start - 1].isspace()]
        if not starts:
            break
        cut = starts[-1]
        out.append(rest[:cut])
        rest = pad + rest[cut : cut + 2] + "-" + rest[cut + 2 :]
    return [*out, rest]


def _spaces(line: str) -> list[int]:
    """Where the line has a space outside Jinja's delimiters and outside HTML tags."""
    found: list[int] = []
    closing = ""
    in_tag = False
    i = 0
    while i < len(line):
        two = line[i : i + 2]
        if closing:
            if two == closing:
                closing = ""
                i += 1
        elif two in CLOSING:
            closing = CLOSING[two]
            i += 1
        elif line[i] == "<":
            in_tag = True
        elif line[i] == ">":
            in_tag = False
        elif line[i] == " " and not in_tag and i > 0 and line[i - 1] != " ":
            found.append(i)
        i += 1
    return found


def _at_spaces(line: str, pad: str) -> list[str]:
    """The line split at spaces, each next line starting with an empty comment that strips."""
    out: list[str] = []
    rest = line
    while _too_long(rest):
        spaces = [i for i in _spaces(rest) if len(pad) + 10 < i <= LIMIT]
        near = [i for i in spaces if i <= AIM] or spaces
        if not near:
            break
        cut = near[-1]
        out.append(rest[:cut])
        rest = pad + "{#- #}" + rest[cut:]
    return [*out, rest]


def split(line: str) -> list[str]:
    """The line as lines of at most `LIMIT` characters where it can be, rendering the same."""
    if not _too_long(line):
        return [line]
    pad = " " * (len(line) - len(line.lstrip(" ")) + 2)
    lines = _before_tags(line, pad)
    if "<pre" in line or "<textarea" in line:
        return lines
    return [part for piece in lines for part in _at_spaces(piece, pad)]


def main(paths: list[str]) -> int:
    """Rewrite each template; 1 when a line is still too long (it is named)."""
    left = 0
    for name in paths:
        path = Path(name)
        lines = path.read_text(encoding="utf-8").split("\n")
        new = [part for line in lines for part in split(line)]
        path.write_text("\n".join(new), encoding="utf-8")
        for number, line in enumerate(new, 1):
            if _too_long(line):
                left += 1
                print(f"{name}:{number}: {len(line)} characters, split it by hand")
    return 1 if left else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
