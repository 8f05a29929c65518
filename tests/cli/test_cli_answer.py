"""A non-stream answer given to `check`, `trace` or `report` is said to be one, with its own
calls: no stream's verdict is made of it. Before, `check` printed "intended: no tool call" for
an answer holding one, and report.md said "Nobody broke the contract ... every client reads
the stream as it means" of a body no stream's assembly reads."""

from __future__ import annotations

from tests.cli.clikit import Invoke, Write
from tests.streamanswer import answer_text


def test_check_trace_and_report_show_an_answers_calls(invoke: Invoke, write: Write) -> None:
    path = write(answer_text(("call_9", "get_weather", '{"city":"Paris"}')), "answer.json")
    for command in ("check", "trace"):
        said = invoke(command, path)
        assert said.exit_code == 0, said.output
        assert (
            'answer: a non-stream chat.completion, no stream: 1 call: get_weather {"city":"Paris"}'
            in said.stdout
        )
        assert "intended:" not in said.stdout and "quirks:" not in said.stdout
    report = invoke("report", path).stdout
    assert "**Verdict:** this is a non-stream `chat.completion` answer, not a stream" in report
    assert '"call_9" get_weather {"city":"Paris"}' in report
    assert "Whose fault" not in report and "## Quirks" not in report


def test_a_stream_keeps_its_verdict(invoke: Invoke, write: Write) -> None:
    from tests.streamkit import chunk, frag, sse

    path = write(sse(chunk(frag(0, "c1", "f", '{"a": 1}')), chunk(finish="tool_calls")), "s.sse")
    said = invoke("check", path).stdout
    assert "answer:" not in said and 'intended: f {"a": 1}' in said
    assert "**Whose fault:**" in invoke("report", path).stdout
