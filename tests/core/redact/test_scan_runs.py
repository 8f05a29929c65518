"""The content scan's runs found without a regex at every character: the same runs and the
same findings as the regex scan found, in a fraction of its time.

The reference here is the scan as it was (`_RUN`, `_regex_in_runs`): a regex tried at every
character, every run it found read with the patterns unless its key was found clean before.
`webapp.core.redact.runs` finds the runs with `bytes.find` and blanks repeated clean ones in
later blocks; these properties hold it to the reference, with blocks and the count that
blanks made small enough for short generated texts to cross them.
"""

from __future__ import annotations

import heapq
import re
import time
from collections.abc import Iterator
from unittest import mock

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.streamkit import chunk, frag, sse
from webapp.core.redact import content, runs
from webapp.core.redact.content import scan
from webapp.core.redact.runs import Runs

KEY = b"test-key-runs-01"
_RUN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._%+/=@~-]{15,}+")
"""The runs as the scan found them before: this regex, tried at every character."""


def _regex_in_runs(text: str) -> Iterator[re.Match[str]]:
    """`content._in_runs` as it was: the patterns' matches in the regex's runs."""
    clean: set[tuple[str, str]] = set()
    for run in _RUN.finditer(text):
        start = run.start()
        before = content._BEARER_BEFORE.search(text, max(0, start - 24), start)
        if before is not None:
            yield from content._PATTERN.finditer(text, before.start(), run.end())
            continue
        key = (text[max(0, start - 2) : start], run.group())
        if key in clean:
            continue
        found = False
        for match in content._PATTERN.finditer(text, start, run.end()):
            found = True
            yield match
        if not found and len(clean) < 4096:
            clean.add(key)


def _regex_matches(text: str) -> Iterator[re.Match[str]]:
    """`content._matches` over the regex's runs."""
    end = 0
    merged = heapq.merge(_regex_in_runs(text), content._emails(text), key=lambda m: m.start())
    for match in merged:
        if match.start() >= end:
            end = match.end()
            yield match


def _regex_scan(text: str) -> list[content.Finding]:
    with mock.patch.object(content, "_matches", _regex_matches):
        return scan(text, KEY)


def _small_blocks() -> mock._patch_dict:  # type: ignore[type-arg]
    """Blocks of 32 characters, and a clean run blanked once seen twice: short texts cross
    both, and a stretch longer than a block makes a longer one."""
    return mock.patch.multiple(runs, _BLOCK=32, _OFTEN=2)  # type: ignore[no-any-return]


_FRAMING = ['"chat.completion.chunk"', '"chatcmpl-0123456789abcdef",', ':"gpt-4o-2024-08-06"']
_PIECES = st.sampled_from(
    [
        # secrets, and secrets' near misses: one character short, a prefix alone
        "sk-proj-Ab3dEfGh1jKlMn0pQrStUvWx", "sk-Ab3dEfGh1jKlMn0pQrStUvWxYz", "sk-Ab3dEfGh1jKlM",
        "sk-", "AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPL",
        "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
        "9f86d081884c7d659a2feaa0c55ad015", "9f86d081884c7d659a2feaa0c55ad01",
        "QWxhZGRpbjpvcGVuIHNlc2FtZQ0KQWxhZGRpbjpvcGVuIHNlc2FtZQ0K",
        "a.b@example.com", "alice.smith+work@example.co.uk",
        "QWxhZGRpbjpvcGVuIHNlc2FtZQ0KQWxhZGRpbj",  # two short of base64: after `x/`, one
        # runs of 15 and 16 characters, lead characters before a run, glue
        "abcdefghijklmno", "abcdefghijklmnop", "0123456789abcdef", "-", ".", "_", "%", "+", "/",
        "=", "@", "~", "--", "x", "7",
        # delimiters, JSON escapes, blanks, `Bearer `, characters beyond ASCII
        '"', ":", ",", "{", "}", " ", "\t", "\n", "\\", "\\n", "\\t", "\\u00e9", "\\\\",
        "Bearer ", "Bearer\t", "?", "é", "€", "\U0001f600", "\udcff",
        *_FRAMING,
    ]
)  # fmt: skip


def _texts(lines: list[tuple[str, list[str]]]) -> str:
    """Lines of a framing run then pieces glued together, three times over: clean runs seen
    often, then the same characters, and secrets, beside them in later blocks."""
    return "".join(frame + "".join(pieces) for frame, pieces in lines) * 3


_LINES = st.lists(
    st.tuples(st.sampled_from(_FRAMING), st.lists(_PIECES, max_size=6)), min_size=1, max_size=12
)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_LINES)
@example([('"chat.completion.chunk"', ["sk-Ab3dEfGh1jKlMn0pQrStUvWxYz"])])
@example([(" ", ["\\n", "sk-Ab3dEfGh1jKlMn0pQrStUvWxYz", " ", "abcdefghijklmnop", '"'])] * 3
         + [(" ", ["Bearer ", "abcdefghijklmnop", '"'])])  # fmt: skip
@example([(",", ["/", "QWxhZGRpbjpvcGVuIHNlc2FtZQ0KQWxhZGRpbj", '"'])] * 3
         + [(",", ["x", "/", "QWxhZGRpbjpvcGVuIHNlc2FtZQ0KQWxhZGRpbj", '"'])])  # fmt: skip
def test_runs_and_findings_are_the_regex_scans(lines: list[tuple[str, list[str]]]) -> None:
    text = _texts(lines)
    expected_runs = [run.span() for run in _RUN.finditer(text)]
    expected = _regex_scan(text)
    assert list(Runs(text)) == expected_runs
    assert scan(text, KEY) == expected
    with _small_blocks():
        assert scan(text, KEY) == expected


_CHARACTERS = st.sampled_from("abcxyzABZ0129._%+/=@~-\"' \t\n\\é?\udcff")


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=_CHARACTERS, max_size=300))
def test_any_text_has_the_regex_runs(text: str) -> None:
    expected = [run.span() for run in _RUN.finditer(text)]
    assert list(Runs(text)) == expected
    with _small_blocks():
        assert list(Runs(text)) == expected
        assert scan(text, KEY) == _regex_scan(text)


def test_a_secret_after_framing_blanked_in_later_blocks_is_found() -> None:
    # By the third block the framing runs are blanked; a key right after one's closing quote,
    # or as the framing member's own value, is still found; one glued to a framing run is one
    # run with it, read whole, and no word starts at the key (no secret, as before).
    frames = sse(*(chunk(frag(args="x")) for _ in range(10_000)))
    key = "sk-Ab3dEfGh1jKlMn0pQrStUvWxYz"
    tail = [
        '{"object":"chat.completion.chunk' + key + '"}',
        '{"object":"chat.completion.chunk"' + key + "}",
        '{"object":"' + key + '"}',
        '{"object":"chat.completion.chunk"}',
    ]
    text = frames + "\n".join(tail) + "\n" + frames
    found = scan(text, KEY)
    assert len(text) > 4 * runs._BLOCK
    first = frames.count("\n") + 1
    assert [(text[f.start : f.end], f.line) for f in found] == [(key, first + 1), (key, first + 2)]
    assert found == _regex_scan(text)


def _best(work: object, rounds: int = 5) -> float:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        work()  # type: ignore[operator]
        times.append(time.perf_counter() - started)
    return min(times)


def test_scanning_a_long_stream_costs_less_than_a_regex_at_every_character() -> None:
    """A stream of short tokens (2 MB, one framing run per chunk), timed against one pass of
    the run regex over it in the same process, the two measured alternately: the scan was
    that pass and more (1.4x), now it reads the text with bytes methods (0.2-0.3x). The
    bound, 0.7x, leaves room for a shared machine's noise."""
    text = sse(*(chunk(frag(args="bcdefghija")) for _ in range(10_000)))
    ratios = []
    for _ in range(3):
        regex = _best(lambda: sum(1 for _ in _RUN.finditer(text)))
        scanned = _best(lambda: scan(text, KEY))
        ratios.append(scanned / regex)
        if ratios[-1] < 0.7:
            break
    assert min(ratios) < 0.7, f"the scan took {min(ratios):.2f}x a regex pass"
