"""Small pieces of the web layer: the LRU, clipping, query parsing, the palette."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import weakref
from urllib.parse import urlencode

import pytest
from starlette.datastructures import QueryParams

from webapp.cli.palette import RULE_COLOURS
from webapp.core.options import Options
from webapp.core.rules import RULE_NAMES
from webapp.web.backend.memory.cache import Memo
from webapp.web.http import links as links_module
from webapp.web.http.links import Links
from webapp.web.http.palette import RULES_CSS
from webapp.web.http.query import BadQuery, parse_options
from webapp.web.http.templating import TEMPLATES
from webapp.web.http.text import clipped, excerpt, printable


def test_memo_computes_once_and_evicts_the_least_recent() -> None:
    memo: Memo[str, int] = Memo(2)
    made: list[str] = []

    def make(key: str) -> int:
        made.append(key)
        return len(made)

    assert memo.get("a", lambda: make("a")) == 1
    assert memo.get("a", lambda: make("a")) == 1
    memo.get("b", lambda: make("b"))
    memo.get("a", lambda: make("a"))  # a is now the most recent
    memo.get("c", lambda: make("c"))  # evicts b
    memo.get("b", lambda: make("b"))
    assert made == ["a", "b", "c", "b"]
    assert len(memo) == 2


def test_memo_makes_a_missing_value_once_under_concurrent_misses() -> None:
    memo: Memo[str, int] = Memo(4)
    gate = threading.Barrier(6)
    made: list[int] = []

    def make() -> int:
        made.append(1)
        return 7

    def worker() -> None:
        gate.wait()
        assert memo.get("k", make) == 7

    threads = [threading.Thread(target=worker) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert made == [1]


def test_memo_forgets_a_failed_computation() -> None:
    memo: Memo[str, int] = Memo(2)

    def boom() -> int:
        raise RuntimeError("no")

    with pytest.raises(RuntimeError):
        memo.get("k", boom)
    assert memo.get("k", lambda: 3) == 3


class _Heavy:
    """A value a weak reference can watch."""


def test_memo_renews_a_value_without_holding_the_old_one_meanwhile() -> None:
    """`renew` drops the kept value before making the new one (both are never held at once),
    and a `get` meanwhile waits for the new value instead of taking the old."""
    memo: Memo[str, _Heavy] = Memo(4)
    old = memo.get("k", _Heavy)
    gone = weakref.ref(old)
    del old
    making, asked = threading.Event(), threading.Event()
    got: list[_Heavy] = []
    new = _Heavy()

    def make() -> _Heavy:
        assert gone() is None  # no longer held by the memo
        making.set()
        assert asked.wait(5)
        return new

    def ask() -> None:
        assert making.wait(5)
        asked.set()
        got.append(memo.get("k", _Heavy))

    asking = threading.Thread(target=ask)
    asking.start()
    assert memo.renew("k", make)
    asking.join()
    assert got == [new] and memo.peek("k") is new
    assert not memo.renew("missing", _Heavy) and memo.peek("missing") is None


def test_memo_forgets_a_value_whose_renewal_failed() -> None:
    memo: Memo[str, int] = Memo(4)
    memo.get("k", lambda: 1)

    def boom() -> int:
        raise RuntimeError("no")

    with pytest.raises(RuntimeError):
        memo.renew("k", boom)
    assert memo.peek("k") is None and memo.get("k", lambda: 2) == 2


def test_clip_and_excerpt() -> None:
    assert clipped("short", 10).head == "short"
    long = clipped("a" * 50 + "b" * 50, 20)
    assert (long.head, long.hidden, long.tail) == ("a" * 10, 80, "b" * 10)
    text = "x" * 5000 + "NEW"
    part = excerpt(text, "NEW", before_limit=100)
    assert part.hidden_before == 4900
    assert part.before == "x" * 100
    assert part.appended.head == "NEW" and part.has_appended
    assert not excerpt("abc", "").has_appended
    huge = excerpt("{" + "y" * 10_000, "y" * 9_000, appended_limit=100)
    assert huge.appended.hidden == 8_900


def test_printable_replaces_lone_surrogates_only() -> None:
    assert printable("a\ud800b😀") == "a\ufffdb😀"
    assert printable("plain") == "plain"


def test_query_parsing_and_canonical_links() -> None:
    options = parse_options(
        QueryParams("policy=exact-key&path=server-tools&server_tools=a,b&server_tools=c&choice=2")
    )
    assert options == Options("exact-key", "server-tools", ("a", "b", "c"), 2)
    links = Links("abc", options)
    assert links.step(4) == (
        "/s/abc?step=4&policy=exact-key&path=server-tools&server_tools=a%2Cb%2Cc&choice=2"
    )
    assert parse_options(QueryParams("")) == Options()
    for bad in ("policy=x", "path=y", "choice=1.5", "choice=%EF%BC%91"):
        with pytest.raises(BadQuery):
            parse_options(QueryParams(bad))


def test_step_links_encode_their_view_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A full page links to some 400 steps (the overview's columns, the timeline's rows): the
    view's query is encoded once for them all, and each URL is the one urlencode would give."""
    calls: list[object] = []

    def counted(query: object) -> str:
        calls.append(query)
        return urlencode(query)  # type: ignore[arg-type]

    monkeypatch.setattr(links_module, "urlencode", counted)
    views = [
        Links("abc", Options("exact-key", "server-tools", ("a b", "c&d"), 2), 3, "E1", 40, True),
        Links("example:tour", Options()),
        Links("abc", Options(), embed=True),
    ]
    for links in views:
        for step in (0, 7, 1_000_000):
            query = {"step": step, **links._view_query()}
            assert links.step(step) == f"{links.base}?{urlencode(query)}"
    calls.clear()
    for links in views:
        for step in range(400):
            links.step(step)
    assert len(calls) <= len(views)


def test_every_rule_has_its_palette_colour_in_the_stylesheet() -> None:
    css = RULES_CSS  # what /rules.css serves every page
    for name in RULE_NAMES:
        declared = re.search(rf"--rule-{re.escape(name)}:\s*(#[0-9a-fA-F]{{6}})", css)
        assert declared, name
        assert declared.group(1).lower() == RULE_COLOURS[name].hex.lower()
        assert f".rule-{name} {{ --rule: var(--rule-{name}); }}" in css


def test_templates_never_mark_data_safe() -> None:
    for template in TEMPLATES.glob("*.html"):
        text = template.read_text()
        assert "|safe" not in text.replace(" ", ""), template.name
        assert "autoescape false" not in text, template.name


def test_the_store_and_examples_import_no_web_code() -> None:
    code = (
        "import sys, webapp.storage, webapp.settings, webapp.examples; "
        "print(sorted(m for m in ('fastapi', 'starlette', 'jinja2') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


def test_templates_take_stream_urls_from_links() -> None:
    for template in TEMPLATES.glob("*.html"):
        text = template.read_text()
        assert "/s/" not in text and "/api/streams" not in text, template.name


def test_compare_links_name_both_policies_and_keep_the_view() -> None:
    links = Links("abc", Options("adr-0019", "server-tools", ("a", "b"), 2))
    assert links.compare() == (
        "/s/abc/compare?left=exact-key&right=adr-0019&path=server-tools&server_tools=a%2Cb&choice=2"
    )
    assert links.with_path("client").compare("adr-0019", "exact-key", only=True, start=40) == (
        "/s/abc/compare?left=adr-0019&right=exact-key&path=client&server_tools=a%2Cb&choice=2"
        "&only=differing&start=40"
    )
    assert links.hidden_fields(3) == (
        ("step", "3"),
        ("policy", "adr-0019"),
        ("path", "server-tools"),
    )
