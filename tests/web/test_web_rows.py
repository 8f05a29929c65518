"""Timeline rows: appended text, collapsed runs of alike steps, names as of the step, numbers."""

from __future__ import annotations

import html
import re
import time
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import webapp.web.views.timeline
from tests.core.test_properties import any_options, any_records
from tests.streamkit import chunk, frag, sse
from tests.web.webkit import CONTINUATION, HX, Store
from webapp.core.assembler import assemble
from webapp.core.options import Options
from webapp.core.readers import read
from webapp.core.records import Record
from webapp.core.steps import Step
from webapp.settings import Settings
from webapp.web.app import create_app
from webapp.web.backend.trace.runs import find_runs

DASH = "\u2013"
CORPUS = Path(__file__).resolve().parent.parent / "corpus"
ROW = re.compile(r'<(a|div) class="(?:row|run-head)[^"]*" id="((?:row|run)-\d+)".*?</\1>', re.S)


def rows(page: str) -> dict[str, str]:
    """Each timeline row's id and its text, tags stripped and entities decoded."""
    found = {}
    for match in ROW.finditer(page):
        text = html.unescape(re.sub(r"<[^>]+>", " ", match.group(0)))
        found[match.group(2)] = " ".join(text.split())
    return found


def row_link(page: str, row_id: str) -> str:
    found = re.search(rf'id="{row_id}" href="([^"]+)"', page)
    assert found, row_id
    return html.unescape(found.group(1))


def long_run(n: int, name: str = "write_file") -> str:
    """A header, `n` bare continuations, a finish: one run of `n` continuations onto #0."""
    return sse(
        chunk(frag(0, "call_1", name, '{"text": "')),
        *(chunk(frag(args=f"line {i} ")) for i in range(n - 1)),
        chunk(frag(args='"}')),
        chunk(finish="tool_calls"),
    )


def test_a_row_shows_the_text_its_fragment_appended(client: TestClient, store: Store) -> None:
    stream_id = store(CONTINUATION)
    page = client.get(f"/s/{stream_id}?step=0&policy=adr-0019").text
    shown = rows(page)
    assert 'continuation → #0 get_weather +"{\\"city\\":"' in shown["row-1"]
    assert '+"\\"Paris\\"}"' in shown["row-2"]
    assert "+" not in shown["row-0"]  # the header appended nothing
    # escaped, in a monospace element of its own
    assert '<code class="appended"' in page
    assert "+&#34;{\\&#34;city\\&#34;:&#34;" in page


def test_appended_text_is_clipped_and_escaped(client: TestClient, store: Store) -> None:
    stream_id = store(sse(chunk(frag(0, "c", "f", "<b>" + "x" * 200)), chunk(finish="tool_calls")))
    page = client.get(f"/s/{stream_id}?step=1").text
    assert "<b>x" not in page
    shown = rows(page)["row-0"]
    assert '+"<b>' + "x" * 29 + '"...' in shown


def test_a_run_of_alike_steps_is_one_row_that_links_to_its_steps(
    client: TestClient, store: Store
) -> None:
    stream_id = store(long_run(60))
    page = client.get(f"/s/{stream_id}?step=0").text
    shown = rows(page)
    assert list(shown) == ["row-0", "run-1", "row-61", "row-62", "row-63"]  # finish, done, end
    assert f"steps 1{DASH}60: 60 continuations onto #0 write_file" in shown["run-1"]
    link = row_link(page, "run-1")
    assert link == f"/s/{stream_id}?step=1&policy=adr-0019&path=client"
    # the link shows the run's steps, each a row of its own, under the run's heading
    expanded = client.get(link).text
    shown = rows(expanded)
    assert "run-1" in shown and 'id="run-1" href' not in expanded
    assert f"steps 1{DASH}60: 60 continuations onto #0 write_file" in shown["run-1"]
    assert "skip to step 61 →" in shown["run-1"]
    assert all(f"row-{n}" in shown for n in range(1, 40))
    assert re.search(r'id="row-1" href="[^"]*" aria-current="step"', expanded)
    assert 'line 0 "' in shown["row-1"]


def test_a_thought_or_a_text_in_many_chunks_is_one_row_each(
    client: TestClient, store: Store
) -> None:
    """A reasoning model's thinking, then its words, then its call: each stretch of one-piece
    chunks folds into one row, so the call is on the first screen."""
    stream_id = store(
        sse(
            chunk(role="assistant"),
            *(chunk(reasoning_content=f"think {i} ") for i in range(30)),
            *(chunk(content=f"word{i} ") for i in range(12)),
            chunk(frag(0, "call_1", "get_weather", '{"city": "Paris"}')),
            chunk(finish="tool_calls"),
        )
    )
    page = client.get(f"/s/{stream_id}?step=0").text
    shown = rows(page)
    # the first piece of each opens its block (a start event too): a row of its own
    assert list(shown)[:6] == ["row-0", "row-1", "run-2", "row-31", "run-32", "row-43"]
    assert f"steps 2{DASH}30: 29 thinking deltas" in shown["run-2"]
    assert f"steps 32{DASH}42: 11 text deltas" in shown["run-32"]
    assert "get_weather" in shown["row-43"]


def test_a_run_holding_the_selected_step_is_shown_around_it(
    client: TestClient, store: Store
) -> None:
    stream_id = store(long_run(200))
    page = client.get(f"/s/{stream_id}?step=100").text
    shown = rows(page)
    assert "run-1" not in shown  # the window starts inside the run, below its heading
    assert re.search(r'id="row-100" href="[^"]*" aria-current="step"', page)
    assert len(shown) == 40  # the window's size (the settings fixture)
    # the htmx window around a step and the "more rows" requests keep it expanded
    partial = client.get(f"/s/{stream_id}/timeline?step=150", headers=HX).text
    assert "row-150" in rows(partial)
    more = client.get(f"/s/{stream_id}/rows?start=120&end=160&step=100", headers=HX).text
    assert list(rows(more)) == [f"row-{n}" for n in range(120, 160)]
    # another selected step outside the run: the same rows request collapses it
    more = client.get(f"/s/{stream_id}/rows?start=120&end=160&step=0", headers=HX).text
    assert list(rows(more)) == ["run-1", "row-201", "row-202", "row-203"]
    before = "direction=before"
    more = client.get(f"/s/{stream_id}/rows?start=0&end=160&step=0&{before}", headers=HX).text
    assert list(rows(more)) == ["row-0", "run-1"]


def test_an_anomaly_a_finish_or_a_name_breaks_a_run(store: Store) -> None:
    text = sse(
        chunk(frag(0, "call_1", "", "[")),  # a nameless header: named at step 7
        *(chunk(frag(args="1,")) for _ in range(6)),
        chunk(frag(0, name="late_name", args="2,")),
        *(chunk(frag(args="3,")) for _ in range(6)),
        chunk(frag(args="4,"), finish="tool_calls"),
        chunk(frag(args="5]")),
    )
    trace = assemble(read(text).records, Options())
    assert all(anomaly.step > 15 for anomaly in trace.anomalies)
    runs = find_runs(trace, [])
    assert [(run.first, run.last, run.rule, run.block) for run in runs.runs] == [
        (1, 6, "continuation", 0),
        (8, 13, "continuation", 0),
    ]
    assert runs.at(7) is None and runs.at(4) is runs.runs[0] and runs.at(13) is runs.runs[1]
    assert runs.at(14) is None and runs.at(0) is None
    assert [run.first for run in find_runs(trace, [1]).runs] == [8]  # 2-6 is too short


def _quiet(step: Step) -> tuple[str, int | None] | None:
    """A step's (rule, block) when it is quiet, from the step itself: what a run's steps are;
    ("text" or "thinking", None) for a step with no fragment and one delta of either."""
    fragments = step.fragments
    alike = {(fragment.rule, fragment.block) for fragment in fragments}
    if step.kind != "chunk" or not step.assembled or step.note or step.error or step.finish_reason:
        return None
    types = [event.type for event in step.events]
    if not fragments:
        prose = types in (["text_delta"], ["thinking_delta"])
        return (types[0].removesuffix("_delta"), None) if prose else None
    if (
        len(alike) != 1
        or any(fragment.late or fragment.oddities for fragment in fragments)
        or any(event.type != "toolcall_delta" for event in step.events)
    ):
        return None
    return alike.pop()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(any_records, any_options, st.integers(1, 4), st.sets(st.integers(0, 30), max_size=4))
def test_runs_are_the_alike_quiet_steps_the_steps_show(
    stream: list[Record], options: Options, minimum: int, flagged: set[int]
) -> None:
    """The runs found from the columns in one compiled pass (`Columns.quiet_runs`) are the
    stretches of at least `minimum` steps alike and quiet as the built steps show them (a
    tool call's fragments by one rule onto one block, or one piece of a text or a thought),
    cut at the flagged steps and at a block's naming."""
    trace = assemble(stream, options)
    renaming = {at for b in trace.blocks for history in (b.names, b.ids) for at, _ in history}
    breaks = flagged | renaming
    verdicts = [None if s.step in breaks else _quiet(s) for s in trace.steps]
    expected = []
    first = 0
    for number in range(len(verdicts) + 1):
        verdict = verdicts[number] if number < len(verdicts) else None
        if verdict is None or verdict != verdicts[first]:
            held = verdicts[first] if first < len(verdicts) else None
            if held is not None and number - first >= minimum:
                fragments = sum(len(trace.steps[n].fragments) for n in range(first, number))
                expected.append((first, number - 1, *held, fragments))
            first = number
    found = find_runs(trace, flagged, minimum).runs
    assert [(r.first, r.last, r.rule, r.block, r.fragments) for r in found] == expected


def test_short_runs_stay_rows(client: TestClient, store: Store) -> None:
    stream_id = store(long_run(5))
    shown = rows(client.get(f"/s/{stream_id}?step=0").text)
    assert list(shown) == [f"row-{n}" for n in range(9)]


def test_collapsed_runs_keep_a_100k_step_stream_to_one_window(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[int] = []
    real = webapp.web.views.timeline._timeline_row

    def counted(*args: Any, **kwargs: Any) -> Any:
        made.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(webapp.web.views.timeline, "_timeline_row", counted)
    settings = Settings(db=str(tmp_path / "long.sqlite3"), max_bytes=50_000_000)
    header = (
        'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1",'
        '"function":{"name":"f","arguments":"["}}]}}]}'
    )
    bare = (
        'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"arguments":"1,"}}]}}]}'
    )
    finish = 'data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}'
    text = "\n\n".join([header, *([bare] * 100_000), finish, "data: [DONE]"]) + "\n\n"
    with TestClient(create_app(settings)) as client:
        stream_id = client.post("/api/streams", json={"text": text}).json()["id"]
        page = client.get(f"/s/{stream_id}?step=0")
        shown = rows(page.text)
        assert list(shown) == ["row-0", "run-1", "row-100001", "row-100002", "row-100003"]
        assert f"steps 1{DASH}100,000: 100,000 continuations onto #0 f" in shown["run-1"]
        assert len(made) == 4
        assert len(page.text) < 80_000  # one window of rows, plus the overview strip's columns
        made.clear()
        for step in (50_000, 99_999, 100_002):
            partial = client.get(f"/s/{stream_id}/timeline?step={step}", headers=HX).text
            assert len(rows(partial)) <= settings.timeline_window + 1
        assert len(made) <= 3 * settings.timeline_window
        made.clear()
        query = "start=1&end=121&step=0&direction=before"
        before = client.get(f"/s/{stream_id}/rows?{query}", headers=HX).text
        assert list(rows(before)) == ["run-1"]
        assert len(made) == 0


def test_badges_name_the_block_as_of_their_step(client: TestClient, store: Store) -> None:
    text = (CORPUS / "nameless-header-backfilled.sse").read_text()
    stream_id = store(text)
    page = client.get(f"/s/{stream_id}?step=1").text
    shown = rows(page)
    assert "new → #1 (no name yet)" in shown["row-1"]  # the header: named only at step 2
    assert "→ #1 get_time" in shown["row-2"]
    assert "→ #1 get_time" in shown["row-3"]
    assert "→ #0 get_weather" in shown["row-0"]
    # the detail panel of the header's step agrees with the state panel
    detail = html.unescape(page.split('id="detail"')[1].split('id="state"')[0])
    assert "→ #1 (no name yet)" in detail
    compare = client.get(f"/s/{stream_id}/compare").text
    crow = html.unescape(compare.split('id="crow-1"')[1].split('id="crow-2"')[0])
    assert "#1 (no name yet)" in crow and "get_time" not in crow
    crow = html.unescape(compare.split('id="crow-2"')[1].split('id="crow-3"')[0])
    assert "#1 get_time" in crow


def test_a_block_never_named_reads_no_name(client: TestClient, store: Store) -> None:
    stream_id = store(CONTINUATION)
    shown = rows(client.get(f"/s/{stream_id}?step=0&policy=exact-key").text)
    assert "new → #1 (no name) " in shown["row-1"] + " "


def test_numbers_are_written_with_thousands_separators(tmp_path: Path) -> None:
    text = sse(*(chunk(content=f"w{n} ") for n in range(1_300)), chunk(finish="tool_calls"))
    settings = Settings(db=str(tmp_path / "n.sqlite3"), max_bytes=500_000, timeline_window=40)
    with TestClient(create_app(settings)) as client:
        stream_id = client.post("/api/streams", json={"text": text}).json()["id"]
        _numbers_are_formatted(client, stream_id)


def _numbers_are_formatted(client: TestClient, stream_id: str) -> None:
    page = client.get(f"/s/{stream_id}?step=1234").text
    assert "step <b>1,234</b> of 1,302" in page
    assert re.search(r'<h2 id="detail-title">Step 1,234 <small>line 2,469', page)
    assert "row-1234" in rows(page) and "1,234 L2,469" in rows(page)["row-1234"]
    assert "Steps before 1,221…" in page and "Steps from 1,261…" in page
    assert "<dt>steps</dt><dd>1,303</dd>" in page
    compare = client.get(f"/s/{stream_id}/compare?start=1200").text
    assert f"rows 1,200{DASH}1,240 of 1,303" in compare
    assert '<span class="n">1,234</span>' in compare


def test_one_line_is_not_one_lines(client: TestClient, store: Store) -> None:
    body = '{"choices":[{"index":0,"delta":{"content":"hi"}}]}'
    dump = (
        "< HTTP/1.1 200 OK\n< content-type: text/event-stream\n<\n"
        f"data: {body}\n\n{{ [14 bytes data]\ndata: [DONE]\n\n"
    )
    page = client.get(f"/s/{store(dump)}").text
    assert "ignored 1 line of curl's own output" in html.unescape(page)
    assert "1 lines" not in page


def test_the_detail_panel_folds_the_chunk_to_its_delta(client: TestClient, store: Store) -> None:
    stream_id = store(CONTINUATION)
    page = client.get(f"/s/{stream_id}?step=1").text
    detail = page.split('id="detail"')[1].split('id="state"')[0]
    delta = detail.split('<pre class="json delta" tabindex="0">')[1].split("</pre>")[0]
    assert "tool_calls" in delta and "chat.completion.chunk" not in delta
    assert "choices[0].delta" in detail
    whole = detail.split('<details class="whole-chunk">')[1].split("</details>")[0]
    assert "<summary>show the whole chunk</summary>" in whole
    assert "chat.completion.chunk" in whole


def test_finding_runs_takes_time_linear_in_the_steps() -> None:
    """At n and 8n steps (runs of every length, broken by finishes and new blocks), finding
    runs is timed against one plain pass over the same steps, which is linear by construction
    and pays the same memory costs: a quadratic search would be 8 times slower relative to it
    at 8n. The best of seven runs is kept (the machine is shared); the bound, 3, leaves room
    for noise and none for a square."""

    def trace_of(n: int) -> Any:
        chunks: list[dict[str, Any]] = []
        for k in range(n // 12):
            chunks.append(chunk(frag(k, f"call_{k}", "f", "[")))
            chunks.extend(chunk(frag(args="1,")) for _ in range(k % 11))
            chunks.append(chunk(frag(args="2]"), finish="tool_calls" if k % 3 == 0 else None))
        return assemble(read(sse(*chunks)).records, Options())

    def best(work: Any) -> float:
        times = []
        for _ in range(7):
            started = time.perf_counter()
            work()
            times.append(time.perf_counter() - started)
        return min(times)

    def relative(trace: Any) -> float:
        def plain() -> None:
            for step in trace.steps:
                _ = (step.kind, step.note, step.events, [f.rule for f in step.fragments])

        return best(lambda: find_runs(trace, sorted(trace.anomalies_by_step()))) / best(plain)

    small, large = trace_of(2_000), trace_of(16_000)
    assert len(find_runs(large, []).runs) > 500
    growth = relative(large) / relative(small)
    assert growth < 3, f"relative to a plain pass, 8x the steps took {growth:.1f}x the time"
