"""A cassette's bodies kept encoded: read as the streams they hold (real gzip cassettes from
magentic's suite among them), and written out decoded (`decoded_cassette`) so that masking reads
text, the result reading as the cassette did."""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.core.readers.test_reader_properties import CHUNKS
from tests.streamkit import sse
from webapp.core.readers import read, read_bytes
from webapp.core.readers.cassette import decoded_cassette, to_cassette
from webapp.core.readers.timing import Arrivals
from webapp.core.records import ReaderError, ReadResult

CASSETTES = Path(__file__).resolve().parents[2] / "corpus" / "cassettes"
REAL = Path(__file__).resolve().parents[2] / "corpus" / "real"
BODY = (REAL / "gemini-openai-compat-noindex-emptyid-stop.sse").read_text()
"""The body of the first real cassette, gunzipped by hand for issue 19."""


def raw_deflate(data: bytes) -> bytes:
    packer = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return packer.compress(data) + packer.flush()


def cassette(body: object, coding: str | None = None, **extra: Any) -> str:
    headers: dict[str, list[str]] = {"Content-Type": ["text/event-stream"]}
    if coding is not None:
        headers["Content-Encoding"] = [coding]
    interaction = {
        "request": {
            "body": json.dumps({"model": "gpt-4o", "stream": True}),
            "method": "POST",
            "uri": "https://api.openai.com/v1/chat/completions",
        },
        "response": {"body": {"string": body}, "headers": headers, "status": {"code": 200}},
        **extra,
    }
    return yaml.safe_dump({"interactions": [interaction], "version": 1}, sort_keys=False)


def same_reading(found: ReadResult, expected: ReadResult) -> None:
    assert tuple(found.records) == tuple(expected.records)
    assert (found.model, found.tools) == (expected.model, expected.tools)


@pytest.mark.parametrize("path", sorted(CASSETTES.glob("*.yaml")), ids=lambda path: path.name)
def test_a_real_gzip_cassette_reads_as_the_stream_it_holds(path: Path) -> None:
    text = path.read_text()
    assert "!!binary" in text and "Content-Encoding:\n      - gzip" in text
    packed = yaml.safe_load(text)["interactions"][0]["response"]["body"]["string"]
    body = zlib.decompress(packed, 47).decode()
    for found in (read(text), read(text, "cassette"), read_bytes(path.read_bytes())):
        assert tuple(found.records) == tuple(read(body).records)
        assert found.model == "gemini-2.0-flash" and found.tools
        assert "its response body was kept gzip-encoded, and was inflated" in found.notes


def test_the_real_cassette_gives_the_body_gunzipped_by_hand_for_the_corpus() -> None:
    text = (CASSETTES / "gemini-openai-compat-gzip-list-of-int.yaml").read_text()
    assert tuple(read(text).records) == tuple(read(BODY).records)


@pytest.mark.parametrize(
    ("coding", "packed"),
    [
        ("gzip", gzip.compress(BODY.encode())),
        ("x-gzip", gzip.compress(BODY.encode())),
        ("GZIP", gzip.compress(BODY.encode())),
        ("deflate", zlib.compress(BODY.encode())),  # deflate as HTTP means it: zlib-wrapped
        ("deflate", raw_deflate(BODY.encode())),  # and as some servers send it: raw
        ("gzip", gzip.compress(BODY[:40].encode()) + gzip.compress(BODY[40:].encode())),
        ("gzip", gzip.compress(BODY.encode()) + b"\x00" * 8),  # padded
        ("deflate, gzip", gzip.compress(zlib.compress(BODY.encode()))),  # undone last first
        ("identity", BODY.encode()),
        (None, BODY.encode()),  # bytes YAML wrote as !!binary, kept as they came
    ],
    ids=["gzip", "x-gzip", "GZIP", "deflate", "raw deflate", "two members", "padded",
         "deflate then gzip", "identity", "none"],
)  # fmt: skip
def test_every_coding_streamviz_inflates(coding: str | None, packed: bytes) -> None:
    text = cassette(packed, coding)
    assert "!!binary" in text
    same_reading(read(text), read(cassette(BODY)))
    opened = decoded_cassette(text)
    assert opened is not None and "!!binary" not in opened
    assert "Content-Encoding" not in opened
    same_reading(read(opened), read(text))


@pytest.mark.parametrize(
    ("coding", "packed", "said"),
    [
        ("br", b"\x1b\x00", "interaction 1 kept its body br-encoded, which streamviz cannot"),
        ("zstd", b"(\xb5/\xfd", "kept its body zstd-encoded, which streamviz cannot decode"),
        ("gzip", b"not gzip at all", "kept its body gzip-encoded, and it does not inflate"),
        ("gzip", gzip.compress(BODY.encode())[:-30], "the compressed data ends early"),
    ],
    ids=["br", "zstd", "junk", "cut short"],
)  # fmt: skip
def test_a_body_that_does_not_decode_is_refused_by_name(
    coding: str, packed: bytes, said: str
) -> None:
    with pytest.raises(ReaderError, match=said):
        read(cassette(packed, coding))
    assert decoded_cassette(cassette(packed, coding)) is None  # left as it is


def test_a_body_that_does_not_decode_costs_only_its_own_interaction() -> None:
    good = yaml.safe_load(cassette(gzip.compress(BODY.encode()), "gzip"))["interactions"][0]
    bad = yaml.safe_load(cassette(b"\x1b\x00", "br"))["interactions"][0]
    text = yaml.safe_dump({"interactions": [bad, good], "version": 1})
    found = read(text)
    same_reading(found, read(cassette(BODY)))
    assert found.meta["entry"] == 2
    assert any(note.startswith("not read: interaction 1 kept its body br") for note in found.notes)
    with pytest.raises(ReaderError, match="interaction 1 kept its body br-encoded"):
        read(text, har_entry=1)
    opened = decoded_cassette(text)
    assert opened is not None and opened.count("!!binary") == 1  # the br body, as it was
    same_reading(read(opened), found)


def test_a_text_body_is_read_as_it_is_whatever_its_header_says() -> None:
    """A body gunzipped by hand with its header left: text cannot hold gzip data (every gzip
    stream has a byte over 0x7f in its header), so the text is the body."""
    same_reading(read(cassette(BODY, "gzip")), read(cassette(BODY)))
    assert decoded_cassette(cassette(BODY, "gzip")) is None
    assert decoded_cassette(cassette(BODY)) is None
    assert decoded_cassette(json.dumps(yaml.safe_load(cassette(BODY)))) is None


def test_decoded_cassette_keeps_the_rest_and_fixes_the_headers() -> None:
    data = BODY.encode()
    arrivals = Arrivals((len(data),), (12.0,))
    packed = cassette(
        gzip.compress(data),
        "gzip",
        streamviz_timing={"unit": "ms", **arrivals.to_json()},
    ).replace("status:", "headers_extra: 1\n    status:", 0)
    document = yaml.safe_load(packed)
    document["interactions"][0]["response"]["headers"]["Content-Length"] = ["999"]
    packed = yaml.safe_dump(document, sort_keys=False)
    opened = decoded_cassette(packed)
    assert opened is not None
    again = yaml.safe_load(opened)
    response = again["interactions"][0]["response"]
    assert response["body"]["string"] == BODY
    assert response["headers"] == {"Content-Type": ["text/event-stream"],
                                   "Content-Length": [str(len(data))]}  # fmt: skip
    assert again["version"] == 1 and again["interactions"][0]["request"]["method"] == "POST"
    assert read(opened).meta["arrivals"] == read(packed).meta["arrivals"] == [12.0, 12.0]


def test_a_written_cassette_is_not_decoded_again() -> None:
    assert decoded_cassette(to_cassette(BODY)) is None


_BODIES = st.builds(lambda chunks, done: sse(*chunks, done=done), CHUNKS, st.booleans())
_PACKERS = st.sampled_from(
    [
        ("gzip", gzip.compress),
        ("deflate", zlib.compress),
        ("deflate", raw_deflate),
        (None, lambda data: data),
    ]
)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=60)
@given(_BODIES | st.text(max_size=200), _PACKERS)
def test_any_body_reads_the_same_kept_encoded_as_kept_as_text(
    body: str, packer: tuple[str | None, Any]
) -> None:
    """The reader round-trips what vcrpy writes, encoded or not; `decoded_cassette` keeps the
    reading."""
    coding, pack = packer
    data = body.encode("utf-8", "surrogatepass")
    plain = _outcome(cassette(data.decode("utf-8", "replace")))
    packed_text = cassette(pack(data), coding)
    assert _outcome(packed_text) == plain
    opened = decoded_cassette(packed_text)
    assert opened is not None and _outcome(opened) == plain


def _outcome(text: str) -> tuple[str, Any]:
    try:
        found = read(text)
    except ReaderError as error:
        return "refused", str(error)
    return "read", (tuple(found.records), found.model, found.meta.get("entry"))
