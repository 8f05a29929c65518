"""How upstream's JavaScript reads a fragment's keys: truthiness, `typeof`, `String()`.

The provider being modelled is JavaScript, so a fragment's `index`, `id`, `name` and
`arguments` are read the way `ensureToolCallBlock` reads them, not the way Python would.
"""

from __future__ import annotations

import itertools
import json
import math
import re
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
    return True


def is_number(value: Any) -> bool:
    """`typeof value === "number"` for a JSON value (a bool is not one)."""
    kind = type(value)
    return kind is int or kind is float or (isinstance(value, int | float) and kind is not bool)


def as_double(value: int | float) -> float:
    """The JavaScript number a JSON number parses to (beyond the largest double: Infinity)."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def map_key(value: Any) -> object:
    """A Python dict key that compares the way a JavaScript `Map` key does (SameValueZero)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return ("boolean", value)
    if isinstance(value, int) and abs(value) > _SAFE_INTEGER:
        return ("number", as_double(value))  # JavaScript parsed it to the nearest double
    if isinstance(value, int | float):
        return ("number", value)  # 1 and 1.0 are the same number, as in JavaScript
    return ("object", next(_object_keys))


def index_key(value: int | float) -> object:
    """`map_key` for a number, as a plain number: a dict keyed only by numbers (the registry of
    indexes) compares its keys as a JavaScript `Map` does, without building a tuple per key."""
    if type(value) is float or (type(value) is int and -_SAFE_INTEGER <= value <= _SAFE_INTEGER):
        return value  # 1 and 1.0, 0 and -0.0 are equal keys, as in JavaScript
    return as_double(value)  # beyond 2**53 JavaScript parsed it to the nearest double


def number_text(value: float) -> str:
    """`String(n)` for a finite JavaScript number (ECMAScript Number::toString)."""
    if value == 0:
        return "0"
    if math.isinf(value) or math.isnan(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
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
        return str(value) if abs(value) <= _SAFE_INTEGER else number_text(as_double(value))
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
    """`function.name ?? custom.name` when truthy, else None."""
    arguments: str
    """`String(function.arguments)` when truthy, else ""."""
    raw_index: Any
    raw_id: Any
    raw_name: Any
    """`function.name ?? custom.name`, possibly falsy: a new block opens with it (or "")."""
    raw_arguments: Any
    custom_only: bool
    """A freeform (`custom`) tool call with no `function`: its block takes `custom.input`."""
    custom_input: str
    """`custom.input` when it is a non-empty string, else ""."""
    oddities: tuple[str, ...]
    """Values of an unexpected type, in words (upstream would still use them as shown)."""

    @property
    def bare(self) -> bool:
        """No name and no id: what decision 0019 calls a continuation candidate."""
        return self.name is None and self.id is None


def read_keys(fragment: dict[str, Any]) -> Keys:
    """Read a fragment's keys with JavaScript truthiness, as `ensureToolCallBlock` does."""
    get = fragment.get
    raw_function = get("function")
    raw_custom = get("custom")
    raw_index = get("index")
    raw_id = get("id")
    if isinstance(raw_function, dict):
        raw_name = raw_function.get("name")
        raw_arguments = raw_function.get("arguments")
    else:
        raw_name = raw_arguments = None
    raw_input = None
    custom_only = False
    if raw_custom is not None:  # a custom tool call (rare): its name and input
        raw_name, raw_input, custom_only = _custom(raw_custom, raw_function, raw_name)
    kind = type(raw_index)
    index = raw_index if kind is int or kind is float or is_number(raw_index) else None
    ordinary = (
        (raw_index is None or kind is int)
        and (raw_id is None or type(raw_id) is str)
        and (raw_name is None or type(raw_name) is str)
        and (raw_arguments is None or type(raw_arguments) is str)
        and (raw_function is None or isinstance(raw_function, dict))
        and raw_input is None
    )
    # Truthiness inlined for strings and None, the usual types (`truthy` for the rest).
    return Keys(
        index,
        (raw_id if raw_id else None)
        if raw_id is None or type(raw_id) is str
        else (raw_id if truthy(raw_id) else None),
        (raw_name if raw_name else None)
        if raw_name is None or type(raw_name) is str
        else (raw_name if truthy(raw_name) else None),
        (raw_arguments or "")
        if raw_arguments is None or type(raw_arguments) is str
        else (js_string(raw_arguments) if truthy(raw_arguments) else ""),
        raw_index,
        raw_id,
        raw_name,
        raw_arguments,
        custom_only,
        raw_input if isinstance(raw_input, str) else "",
        () if ordinary else _oddities(fragment, index),
    )


def _custom(raw_custom: Any, raw_function: Any, raw_name: Any) -> tuple[Any, Any, bool]:
    """A `custom` key's name (when `function` gave none), its input, and whether it stands
    alone (a truthy `custom` without a truthy `function`)."""
    custom = raw_custom if isinstance(raw_custom, dict) else {}
    name = custom.get("name") if raw_name is None else raw_name
    return name, custom.get("input"), truthy(raw_custom) and not truthy(raw_function)


def _oddities(fragment: dict[str, Any], index: Any) -> tuple[str, ...]:
    """What is of an unexpected type in a fragment, in words."""
    function = fragment.get("function")
    raw_index = fragment.get("index")
    raw_id = fragment.get("id")
    raw_name = function.get("name") if isinstance(function, dict) else None
    raw_arguments = function.get("arguments") if isinstance(function, dict) else None
    oddities: list[str] = []
    if index is not None and not as_double(index).is_integer():
        oddities.append(f"index {_show(raw_index)} is not an integer (upstream still uses it)")
    elif raw_index is not None and index is None:
        oddities.append(f"index {_show(raw_index)} is not a number, so it does not count")
    if raw_id is not None and not isinstance(raw_id, str):
        oddities.append(f"id {_show(raw_id)} is not a string")
    if raw_name is not None and not isinstance(raw_name, str):
        oddities.append(f"function.name {_show(raw_name)} is not a string")
    if isinstance(raw_arguments, list):
        oddities.append(
            f"function.arguments {_show(raw_arguments)} is an array: upstream's streaming parser "
            "may throw on it and end the stream with an error; streamviz appends "
            f"String() of it, {js_string(raw_arguments)!r}"
        )
    elif raw_arguments is not None and not isinstance(raw_arguments, str):
        oddities.append(
            f"function.arguments {_show(raw_arguments)} is not a string: "
            f"upstream appends String() of it, {js_string(raw_arguments)!r}"
        )
    if function is not None and not isinstance(function, dict):
        oddities.append("function is not an object")
    custom = fragment.get("custom")
    custom_input = custom.get("input") if isinstance(custom, dict) else None
    if custom_input is not None and not isinstance(custom_input, str):
        oddities.append(f"custom.input {_show(custom_input)} is not a string: ignored")
    return tuple(oddities)


def json_piece(text: str) -> str:
    """`JSON.stringify(text).slice(1, -1)`: the text escaped for the inside of a JSON string."""
    escaped = json.dumps(text, ensure_ascii=False)[1:-1]
    return _LONE_SURROGATE.sub(lambda found: f"\\u{ord(found.group()):04x}", escaped)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
