"""How upstream's JavaScript reads a fragment's keys: truthiness, `typeof`, `String()`.

The provider being modelled is JavaScript, so a fragment's `index`, `id`, `name` and
`arguments` are read the way `ensureToolCallBlock` reads them, not the way Python would.
"""

from __future__ import annotations

import itertools
import math
from typing import Any, NamedTuple

# Objects and arrays are distinct Map keys in JavaScript even when equal; each gets its own.
_object_keys = itertools.count()
_SAFE_INTEGER = 2**53


def truthy(value: Any) -> bool:
    """JavaScript truthiness of a JSON value (objects and arrays are always truthy)."""
    if value is None or value is False:
        return False
    if type(value) is str:
        return value != ""
    if isinstance(value, bool):
        return True
    if isinstance(value, int | float):
        return value != 0 and not (isinstance(value, float) and math.isnan(value))
    if isinstance(value, str):
        return value != ""
    return True


def is_number(value: Any) -> bool:
    """`typeof value === "number"` for a JSON value (a bool is not one)."""
    kind = type(value)
    return kind is int or kind is float or (isinstance(value, int | float) and kind is not bool)


def map_key(value: Any) -> object:
    """A Python dict key that compares the way a JavaScript `Map` key does (SameValueZero)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return ("boolean", value)
    if isinstance(value, int) and abs(value) > _SAFE_INTEGER:
        return ("number", float(value))  # JavaScript parsed it to the nearest double
    if isinstance(value, int | float):
        return ("number", value)  # 1 and 1.0 are the same number, as in JavaScript
    return ("object", next(_object_keys))


def number_text(value: float) -> str:
    """`String(n)` for a finite JavaScript number (ECMAScript Number::toString)."""
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    digits, exponent = _shortest_digits(abs(value))
    k, n = len(digits), exponent + len(digits)  # value = 0.digits * 10**n
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * -n + digits
    e = n - 1
    mantissa = digits if k == 1 else digits[0] + "." + digits[1:]
    return f"{sign}{mantissa}e{'+' if e >= 0 else '-'}{abs(e)}"


def _shortest_digits(value: float) -> tuple[str, int]:
    """The shortest round-trip digits of a positive float and their exponent (value = d * 10**e)."""
    mantissa, _, exp = repr(value).partition("e")
    whole, _, frac = mantissa.partition(".")
    digits = (whole + frac).lstrip("0")
    significant = digits.rstrip("0")
    exponent = (int(exp) if exp else 0) - len(frac) + len(digits) - len(significant)
    return significant, exponent


def js_string(value: Any) -> str:
    """`String(value)` as JavaScript's `+=` on a string would produce it."""
    if isinstance(value, str):
        return value
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value) if abs(value) <= _SAFE_INTEGER else number_text(float(value))
    if isinstance(value, float):
        return number_text(value)
    if isinstance(value, list):
        return ",".join("" if item is None else js_string(item) for item in value)
    return "[object Object]"


class Keys(NamedTuple):
    """A fragment's keys as upstream reads them, plus what was unusual about them.

    A named tuple rather than a frozen dataclass: one is built per fragment, on the hot path.
    """

    index: Any
    """The index as read (None when absent or not a number)."""
    id: Any
    """The id as read when truthy, else None."""
    name: Any
    """`function.name` when truthy, else None."""
    arguments: str
    """The text appended to the block: `String(function.arguments)` when truthy, else ""."""
    raw_index: Any
    raw_id: Any
    raw_name: Any
    raw_arguments: Any
    oddities: tuple[str, ...]
    """Values of an unexpected type, in words (upstream would still use them as shown)."""

    @property
    def bare(self) -> bool:
        """No name and no id: what decision 0019 calls a continuation candidate."""
        return self.name is None and self.id is None


def read_keys(fragment: dict[str, Any]) -> Keys:
    """Read a fragment's keys with JavaScript truthiness, as `ensureToolCallBlock` does."""
    function = fragment.get("function")
    if not isinstance(function, dict):
        function = {}
    raw_index = fragment.get("index")
    raw_id = fragment.get("id")
    raw_name = function.get("name")
    raw_arguments = function.get("arguments")
    oddities: list[str] = []
    index = raw_index if is_number(raw_index) else None
    if index is not None and not float(index).is_integer():
        oddities.append(f"index {raw_index!r} is not an integer (upstream still uses it)")
    elif raw_index is not None and index is None:
        oddities.append(f"index {_show(raw_index)} is not a number, so it does not count")
    if raw_id is not None and not isinstance(raw_id, str):
        oddities.append(f"id {_show(raw_id)} is not a string")
    if raw_name is not None and not isinstance(raw_name, str):
        oddities.append(f"function.name {_show(raw_name)} is not a string")
    if raw_arguments is not None and not isinstance(raw_arguments, str):
        oddities.append(
            f"function.arguments {_show(raw_arguments)} is not a string: "
            f"upstream appends String() of it, {js_string(raw_arguments)!r}"
        )
    if fragment.get("function") is not None and not isinstance(fragment["function"], dict):
        oddities.append("function is not an object")
    return Keys(
        index=index,
        id=raw_id if truthy(raw_id) else None,
        name=raw_name if truthy(raw_name) else None,
        arguments=js_string(raw_arguments) if truthy(raw_arguments) else "",
        raw_index=raw_index,
        raw_id=raw_id,
        raw_name=raw_name,
        raw_arguments=raw_arguments,
        oddities=tuple(oddities),
    )


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
