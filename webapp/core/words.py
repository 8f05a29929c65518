"""How streamviz writes numbers, counts and quoted excerpts, wherever it writes them."""

from __future__ import annotations

import json

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
    shown = json.dumps(text[:limit], ensure_ascii=False).translate(_HIGH_CONTROLS)
    return shown + "..." if len(text) > limit else shown


def excerpt(text: str, limit: int = 60) -> str:
    """Text for a message, clipped to `limit` with `...`, in single quotes (JSON stays legible).

    `'{"city":'` reads better in a sentence than the JSON literal `"{\\"city\\":"`.
    """
    shown = text if len(text) <= limit else text[: limit - 3] + "..."
    return repr(shown)
