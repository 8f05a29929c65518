"""Long runs of one character cost their length, not its square: blanks, dots, brackets, ids.

Like tests/test_linear_redact.py (whose timing these share, tests/timing.py): each case times a
function at n and 8n and asserts the ratio is far below the 64 of a quadratic cost. Before the
fix, the first case froze the server 9.6 s on a 16 KB post: the shell-prompt pattern every
redaction runs (`webapp.core.readers.http.PROMPT`) traded a run of blanks between two greedy runs.
The content scan read `a.a.a.a...` once per `a` looking for an e-mail's `@` (128 KB: 5.5 s)
and built the set of masks taken once per new secret (640 KB of addresses: 24.7 s).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.timing import GROWTH, assert_linear
from webapp.core.readers import http
from webapp.core.redact import redact
from webapp.core.redact.content import scan
from webapp.core.redact.text import redact_text
from webapp.web.backend.library.holdings import leaves

N = 16_000
KEY = b"linear-key-0123"


def _dump(text: str) -> object:
    dump = http.split_dump(text)
    return None if dump is None else http.clean_body(dump, ":")


def _indented(n: int) -> str:
    """A body of `{` lines indented by n / 8 blanks each (2 MB of them took 62.5 s)."""
    return "data: 1\n" + (" " * (n // 8) + "{\n") * 8


CASES: dict[str, tuple[Callable[[str], object], Callable[[int], str]]] = {
    "a line of spaces": (redact, lambda n: " " * n),
    "a line of tabs and a word": (redact_text, lambda n: "\t" * n + "x\n"),
    "a line of spaces, then lines": (redact, lambda n: " " * n + "\nx\n"),
    "indented { lines": (redact, _indented),
    "a virtualenv prompt, then spaces": (redact_text, lambda n: "(venv)" + " " * n + "x"),
    "a shell prompt, then spaces": (redact_text, lambda n: "user@box:~$" + " " * n + "x"),
    "a PowerShell prompt, then spaces": (redact_text, lambda n: "PS C:\\>" + " " * n + "x"),
    "sudo, then spaces": (redact_text, lambda n: "sudo" + " " * n + "x"),
    "spaces before a body (dump)": (_dump, lambda n: " " * n + "x\nHTTP/1.1 200 OK\n\ndata: 1\n"),
    "spaces after a status (dump)": (
        _dump,
        lambda n: "HTTP/1.1 200 OK\n" + " " * n + "x\n\ndata: 1\n",
    ),
    "a run of dotted words (scan)": (lambda text: scan(text, KEY), lambda n: "a." * (n // 2)),
    "a run of digits and percents (scan)": (
        lambda text: scan(text, KEY),
        lambda n: "1%" * (n // 2),
    ),
    "a run of dotted words before an @ (scan)": (
        lambda text: scan(text, KEY),
        lambda n: "a." * (n // 2) + "@example.com",
    ),
    "many distinct e-mail addresses (scan)": (
        lambda text: scan(text, KEY),
        lambda n: " ".join(f"u{i:07d}@example.com" for i in range(n // 21)),
    ),
    "a long camelCase run (scan)": (lambda text: scan(text, KEY), lambda n: "GetAbc1" * (n // 7)),
    "a run of capitals and a word (scan)": (
        lambda text: scan(text, KEY),
        lambda n: "ABCDEFG1" * (n // 8) + "abc",
    ),
    "camelCase names (scan)": (
        lambda text: scan(text, KEY),
        lambda n: " ".join("GetWeatherForecastForLocation2" for _ in range(n // 31)),
    ),
    # Each hex or base64 run asks which member it is the value of: a bounded look back.
    "distinct hex ids (scan)": (
        lambda text: scan(text, KEY),
        lambda n: "".join(f'{{"id":"{i:016x}a1b2c3d4e5f60718"}}' for i in range(n // 42)),
    ),
    "backslashes and a long name before each run (scan)": (
        lambda text: scan(text, KEY),
        lambda n: "".join(
            "{" + "\\" * 10 + '"' + "x" * 60 + '":' + "\\" * 10 + f'"{i:016x}a1b2c3d4e5f60718"}}'
            for i in range(n // 120)
        ),
    ),
    "encrypted details, long objects around (scan)": (
        lambda text: scan(text, KEY),
        lambda n: "".join(
            f'{{"a":"{"b" * 150}","data":"Zm9v{i:08d}YmFyQmF6cXV4Zm9vYmFyYmF6cXV4Zm9v","c":0}}'
            for i in range(n // 230)
        ),
    ),
    # The library reads the values in a call's arguments, whole or broken, token by token.
    "escaped quotes, never closed (argument values)": (
        lambda text: list(leaves(text)),
        lambda n: '"\\"' * (n // 3),
    ),
    "strings never closed (argument values)": (
        lambda text: list(leaves(text)),
        lambda n: '{"a' * (n // 3),
    ),
    "keys before long blanks (argument values)": (
        lambda text: list(leaves(text)),
        lambda n: '"k"' + " " * n + ':"v"',
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_cost_grows_linearly(name: str) -> None:
    function, make = CASES[name]
    small, large = make(N), make(N * GROWTH)
    assert_linear(name, lambda: function(small), lambda: function(large))


@pytest.mark.parametrize(
    "line",
    [
        "curl https://x",
        "  curl https://x",
        "(venv) user@box:~$ curl https://x",
        "(venv)   curl https://x",
        "user@box:~$    sudo   curl https://x",
        "PS C:\\> curl.exe https://x",
        "C:\\>curl https://x",
        "\t% curl https://x",
    ],
)
def test_the_prompt_still_stands_before_a_command(line: str) -> None:
    assert http.COMMAND.match(line) is not None


@pytest.mark.parametrize("line", ["  x curl", "(a)(b) curl", "user@box curl", "sudocurl x"])
def test_what_is_no_prompt_is_still_none(line: str) -> None:
    assert http.COMMAND.match(line) is None
