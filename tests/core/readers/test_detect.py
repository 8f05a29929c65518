"""Auto-detection, the formats' names, decoding bytes, and what an unreadable input is told."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from webapp.core.readers import FORMATS, decode, read
from webapp.core.readers.cassette import looks_like_cassette
from webapp.core.records import ReaderError

CHUNK = {"choices": [{"index": 0, "delta": {"content": "hi"}}]}
SSE = f"data: {json.dumps(CHUNK)}\n\ndata: [DONE]\n\n"
HAR = json.dumps(
    {
        "log": {
            "entries": [
                {
                    "request": {"method": "POST", "url": "https://x/v1/chat/completions"},
                    "response": {
                        "status": 200,
                        "content": {"mimeType": "text/event-stream", "text": SSE},
                    },
                }
            ]
        }
    }
)


def test_formats_are_the_six_named() -> None:
    assert FORMATS == ("sse", "json", "jsonl", "har", "repr", "cassette")


@pytest.mark.parametrize(
    ("text", "fmt"),
    [
        (SSE, "sse"),
        (": comment first\nevent: message\n" + SSE, "sse"),
        (HAR, "har"),
        ("HTTP/1.1 200 OK\n\n" + SSE, "sse"),
        (json.dumps([CHUNK, CHUNK]), "json"),
        (json.dumps(CHUNK) + "\n" + json.dumps(CHUNK) + "\n", "jsonl"),
        (json.dumps(CHUNK, indent=2) + "\n" + json.dumps(CHUNK, indent=2), "json"),
        ("ChoiceDelta(content='hi', role=None)\n", "repr"),
        ('{"content": "hi"}', "json"),
    ],
)
def test_auto_detection(text: str, fmt: str) -> None:
    assert read(text).format == fmt


def test_sse_wins_over_a_repr_looking_line_and_json() -> None:
    text = SSE + "ChoiceDelta(content='x')\n" + json.dumps(CHUNK) + "\n"
    assert read(text).format == "sse"


def test_unrecognised_input_names_every_format_tried_and_the_first_line() -> None:
    with pytest.raises(ReaderError) as caught:
        read("\n\n  hello world  \nsecond line\n")
    message = str(caught.value)
    assert message.startswith("not a stream streamviz can read: tried ")
    for tried in ("HAR", "HTTP dump", "SSE", "openai-python repr", "JSON/JSON Lines"):
        assert tried in message
    assert "line 3: Expecting value: line 1 column 1" in message
    assert message.endswith('the input starts with "hello world" on line 3')


def test_a_long_first_line_is_shortened_in_the_message() -> None:
    with pytest.raises(ReaderError) as caught:
        read("x" * 500)
    assert len(str(caught.value)) < 500
    assert "…" in str(caught.value)


@pytest.mark.parametrize("text", ["", "   \n\t\r\n", "\ufeff", "\ufeff \n"])
def test_empty_input(text: str) -> None:
    with pytest.raises(ReaderError, match=r"^the input is empty$"):
        read(text)


def test_unknown_format_name() -> None:
    with pytest.raises(ReaderError, match="unknown format 'xml'"):
        read(SSE, "xml")


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_explicit_format_refuses_plain_text(fmt: str) -> None:
    with pytest.raises(ReaderError):
        read("just some words\n", fmt)


def test_decode_utf8_with_and_without_bom() -> None:
    assert decode("data: é\n".encode()) == "data: é\n"
    assert decode(b"\xef\xbb\xbfdata: x") == "data: x"


def test_decode_utf16_with_bom_as_windows_powershell_writes() -> None:
    assert decode("\ufeffdata: é\r\n".encode("utf-16-le")) == "data: é\r\n"
    assert decode("\ufeffdata: é\r\n".encode("utf-16-be")) == "data: é\r\n"


def test_bad_bytes_become_replacement_characters_and_a_note() -> None:
    text = decode(b'data: {"choices": [], "x": "\xff"}\n\n')
    assert "\ufffd" in text
    result = read(text)
    assert result.records[0].value == {"choices": [], "x": "\ufffd"}
    assert any("U+FFFD" in note for note in result.notes)
    assert not any("U+FFFD" in note for note in read(SSE).notes)


def test_gc_is_enabled_again_after_reading() -> None:
    import gc

    read(SSE)
    assert gc.isenabled()
    with pytest.raises(ReaderError):
        read("nope")
    assert gc.isenabled()


def test_readers_and_redaction_import_no_web_code() -> None:
    code = (
        "import sys, webapp.core.readers, webapp.core.redact\n"
        "bad = {'fastapi', 'starlette', 'jinja2'} & set(sys.modules)\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_indented_data_lines_get_a_hint() -> None:
    with pytest.raises(ReaderError, match=r'spaces before "data:"'):
        read('    data: {"choices": []}\n\n    data: [DONE]\n')


_CASSETTE_LINE = re.compile(r"(?m)^interactions:(?:[ \t]|$)")


@given(
    st.lists(
        st.sampled_from(
            ["interactions:", "interactions", "\n", "\r", " ", "\t", "x", ":", "data: {}"]
        ),
        max_size=12,
    ).map("".join)
)
def test_a_cassette_is_known_by_a_line_that_starts_with_interactions(text: str) -> None:
    """`looks_like_cassette` finds the line with `str.find` (a multiline `^` search took 0.3 s
    of CPU on a 36 MB stream): it answers as that search does."""
    assert looks_like_cassette(text) == (_CASSETTE_LINE.search(text) is not None)
