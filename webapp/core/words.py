"""How streamviz writes numbers, counts, quoted excerpts and titles, wherever it writes them."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

# C1 controls survive json.dumps(ensure_ascii=False); they are escaped too, so that an excerpt
# of a recorded stream can never drive the terminal or page it is shown on.
_HIGH_CONTROLS = {code: f"\\x{code:02x}" for code in range(0x7F, 0xA0)}


def number(n: int) -> str:
    """`79,952`: thousands separated."""
    return f"{n:,}"


def count(n: int, noun: str, plural: str | None = None) -> str:
    """`1 block`, `2 blocks`, `4,605 anomalies` (with `plural="anomalies"`)."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"


def quote(text: str, limit: int = 60) -> str:
    """A JSON string literal of the first `limit` characters, `...` after it when clipped."""
    head = text[:limit]
    if _AS_IS.fullmatch(head):  # printable ASCII but for `"` and `\`: itself, quoted
        shown = f'"{head}"'
    else:
        shown = json.dumps(head, ensure_ascii=False).translate(_HIGH_CONTROLS)
    return shown + "..." if len(text) > limit else shown


_AS_IS = re.compile(r"[\x20\x21\x23-\x5b\x5d-\x7e]*")
"""Text that JSON writes as it is (a timeline row quotes one fragment's text a row)."""


def excerpt(text: str, limit: int = 60) -> str:
    """Text for a message, clipped to `limit` with `...`, in single quotes (JSON stays legible).

    `'{"city":'` reads better in a sentence than the JSON literal `"{\\"city\\":"`.
    """
    shown = text if len(text) <= limit else text[: limit - 3] + "..."
    return repr(shown)


def article(word: str) -> str:
    """ "an ambiguous-continuation", "a phantom-call": the word after its indefinite article."""
    return f"{'an' if word[:1].lower() in 'aeiou' else 'a'} {word}"


TITLE_MOST = 200
"""A stream's title is at most this many characters (cut with an ellipsis)."""
TOOLS_NAMED = 4
"""Tools a title names at most; "and N more" says how many others."""
_SURROGATES = re.compile("[\ud800-\udfff]")


def _one_line(text: str) -> str:
    return _SURROGATES.sub("\ufffd", " ".join(text.split()))


def title_from(model: object, tools: Iterable[object], fallback: str = "") -> str:
    """ "gpt-4o: get_weather, book_flight": a stream's title from what it holds, the same for a
    capture (its request's model and declared tools) and a paste (the model its chunks name,
    the tools they call). "MODEL" or "TOOL, TOOL" when one is missing, `fallback` when both
    are; non-strings and empties left out, repeats once; one line of at most `TITLE_MOST`."""
    head = _one_line(model) if isinstance(model, str) else ""
    names: list[str] = []
    for tool in tools:
        name = _one_line(tool) if isinstance(tool, str) else ""
        if name and name not in names:
            names.append(name)
    listed = ", ".join(names[:TOOLS_NAMED])
    if len(names) > TOOLS_NAMED:
        listed += f" and {len(names) - TOOLS_NAMED} more"
    title = f"{head}: {listed}" if head and listed else head or listed or _one_line(fallback)
    return title if len(title) <= TITLE_MOST else title[: TITLE_MOST - 1] + "\u2026"


_INVISIBLE = re.compile(
    "[\x80-\x9f\xad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f"
    "\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd"
    "\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f]"
)
"""Characters that print as nothing or move the text around them: C1 controls, Unicode's
format characters (zero-width spaces and joiners, the byte-order mark, the bidirectional
embeddings, overrides and isolates of "Trojan Source", tags) and the line and paragraph
separators."""


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def visible(text: str) -> str:
    """The text with each invisible or reordering character shown as its escape (`\\u202e`),
    wherever a title, note or author is printed: a right-to-left override cannot turn the
    rest of a line around, nor a zero-width space hide in a name."""
    return _INVISIBLE.sub(_escape, text) if _INVISIBLE.search(text) else text
