"""The Markdown report: its sections, links, and that nothing from the stream can break out."""

from __future__ import annotations

import re

from tests.streamkit import chunk, frag, records
from tests.triage.streams import TWO_HEADERS
from webapp.core.assembler import assemble
from webapp.core.options import Options
from webapp.core.readers import read
from webapp.core.readers.writer import to_sse
from webapp.lenses.matrix import build
from webapp.lenses.results import Call, LensResult
from webapp.triage.report import Links, Note, cell, fence, render, verdict


def _report(values: list[dict], **extra: object) -> str:
    source = read(to_sse(records(values)))
    mine = assemble(source.records)
    other = assemble(source.records, Options(policy="exact-key"))
    return render(source, mine, other, title="two | headers", **extra)  # type: ignore[arg-type]


def test_the_sections_in_order() -> None:
    text = _report(TWO_HEADERS)
    heads = re.findall(r"(?m)^#+ .*$", text)
    assert heads == [
        "# two \\| headers",
        "## Quirks",
        "## What the stream means",
        "## Anomalies",
        "## Offending chunks",
        "## Final calls",
        "### adr-0019",
        "### exact-key",
        "## Where to file",
        "### The provider",
        "## Notes",
    ]
    assert "- **Input:** sse, 6 records" in text
    assert "No notes." in text


def test_the_verdict_counts_and_names_the_first_error_with_its_step() -> None:
    trace = assemble(read(to_sse(records(TWO_HEADERS))).records)
    line = verdict(trace)
    assert line.startswith("2 errors, 1 warning: a continuation went to block #1 book_flight")
    assert "get_weather" in line and line.endswith("(step 2)")
    clean = assemble(records([chunk(frag(0, "a", "f", "{}")), chunk(finish="tool_calls")]))
    assert verdict(clean) == "no anomalies under adr-0019: 1 call assembled cleanly"


def test_steps_link_to_the_page_only_with_a_public_url() -> None:
    plain = _report(TWO_HEADERS)
    assert "](" not in plain
    assert "| error | ambiguous-continuation | 2 | 5 | b1 |" in plain
    linked = _report(TWO_HEADERS, links=Links("https://sv.example/", "ab/c"))
    assert "| error | ambiguous-continuation | [2](https://sv.example/s/ab%2Fc?step=2) |" in linked


def test_offending_chunks_and_both_policies_final_calls() -> None:
    text = _report(TWO_HEADERS)
    assert 'Step 2 (line 5):\n\n```json\n{"id":"chatcmpl-1"' in text
    assert "exact-key: 3 blocks, 1 phantom call" in text
    assert "b2 (no name)" in text
    assert 'upstream\'s client delivers: {"city":"Paris"}' in text
    assert "the arguments are not valid JSON" in text


def test_offending_chunks_say_none_of_a_stream_without_anomalies() -> None:
    """Only a stream whose anomalies are all at its end has them "about the stream as a
    whole"; one without any has no offending chunk, and the report says no more."""
    text = _report([chunk(frag(0, "a", "f", "{}")), chunk(finish="tool_calls")])
    section = text.split("## Offending chunks\n\n", 1)[1].split("\n\n", 1)[0]
    assert section == "None."
    unfinished = _report([chunk(frag(0, "a", "f", '{"x'))])  # its anomalies at the end step
    section = unfinished.split("## Offending chunks\n\n", 1)[1].split("\n\n", 1)[0]
    assert section == "None: the anomalies are about the stream as a whole (its end)."


def test_notes_are_listed_by_step_and_escaped() -> None:
    notes = [Note(3, "", "later"), Note(2, "ana <b>", "look | <script>x</script>")]
    text = _report(TWO_HEADERS, notes=notes)
    section = text.split("## Notes\n\n", 1)[1]
    assert section.splitlines() == [
        "- Step 2, ana \\<b\\>: look \\| \\<script\\>x\\</script\\>",
        "- Step 3: later",
    ]


def test_cells_cannot_break_the_table_or_start_html() -> None:
    assert cell("a | b\nc <img> [x](y) `z`") == "a \\| b c \\<img\\> \\[x\\](y) \\`z\\`"


def test_fences_outlast_any_backtick_run_inside() -> None:
    text = "a ```` b ``"
    fenced = fence(text)
    assert fenced.startswith("`````\n") and fenced.endswith("\n`````")
    assert fence("plain").startswith("```\n")


def _outside_fences(text: str) -> str:
    """The lines not inside fenced code, read as CommonMark does (a fence closes only with a
    line of at least as many backticks and nothing else)."""
    out, fence_len = [], 0
    for line in text.splitlines():
        run = len(line) - len(line.lstrip("`"))
        if fence_len == 0 and run >= 3:
            fence_len = run
        elif fence_len and run >= fence_len and not line.strip("`"):
            fence_len = 0
        elif fence_len == 0:
            out.append(line)
    return "\n".join(out)


def test_a_stream_whose_text_holds_fences_and_pipes_stays_inside_its_block() -> None:
    hostile = "```\n# Injected | heading\n```"
    values = [chunk(frag(0, "a", "f|g", hostile)), chunk(finish="tool_calls")]
    text = _report(values)
    assert "Injected" in text
    assert not re.search(r"(?m)^#+ Injected", _outside_fences(text))
    assert "# Injected" not in _outside_fences(text).replace("\\# Injected", "")
    assert "f|g" not in _outside_fences(text)


def test_many_offending_steps_are_capped() -> None:
    values = [chunk(frag(0, "a", "f", "")), chunk(frag(1, "b", "g", ""))]
    values += [chunk(frag(args="x")) for _ in range(20)]
    text = _report(values)
    assert text.count("```json") == 8
    assert "... and 12 more steps with anomalies." in text


def test_the_clients_matrix_is_included_when_there_is_one() -> None:
    calls = (Call("call_1", "get_weather", '{"city": "Paris"}'),)
    columns = [
        LensResult("openai-python", "3.57.0", "error", error="TypeError: no | index"),
        LensResult("vercel-ai", "7.0.173", "ok", calls),
        LensResult("adr-0019", "", "ok", calls),
        LensResult("exact-key", "", "ok", (Call("", "", "{}"),)),
    ]
    matrix = build(columns, None)
    with_matrix = _report(TWO_HEADERS, clients=matrix)
    assert "## Every client's view" in with_matrix
    assert "| call | openai-python 3.57.0 | vercel-ai 7.0.173 |" in with_matrix
    assert "raised: TypeError: no \\| index" in with_matrix  # a pipe cannot break the table
    assert "## Every client's view" not in _report(TWO_HEADERS)
