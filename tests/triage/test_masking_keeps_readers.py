"""Content masking never touches what the readers need: every format tells the same story.

Default masking (the API's `redact: auto`, the home form's preview with every box ticked) used
to mask a HAR body exported as base64 (`content.encoding: "base64"`, as browsers save binary or
compressed bodies) as one long "base64 secret": 311 of 311 such streams lost every fragment.
The property compares the trace of each input format with and without masking.
"""

from __future__ import annotations

import base64
import json
import string
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.streamkit import ABSENT, WRITERS, chunk, frag, har, sse
from webapp.core.assembler import assemble
from webapp.core.options import Options
from webapp.core.readers import read
from webapp.core.redact import redact
from webapp.core.redact.content import redact_content, scan
from webapp.core.redact.har import encoded_bodies
from webapp.core.trace import Trace

KEY = b"masking-keeps-it"
SECRET_VALUES = [
    "sk-proj-Ab3dEfGh1jKlMn0pQrStUvWx",
    "AIzaSyD4bCdEfGhIjKlMnOpQrStUvWxYz012345",
    "alice.smith+work@example.co.uk",
    "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "QWxhZGRpbjpvcGVuIHNlc2FtZQ0KQWxhZGRpbjpvcGVuIHNlc2FtZQ0K",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
]


def har_base64(*chunks: Any) -> str:
    """A HAR whose response body is exported as base64, as Chrome saves compressed bodies."""
    value = json.loads(har(*chunks))
    content = value["log"]["entries"][0]["response"]["content"]
    content["text"] = base64.b64encode(content["text"].encode("utf-8")).decode("ascii")
    content["encoding"] = "base64"
    return json.dumps(value, indent=2)


def http_dump(*chunks: Any) -> str:
    """`curl -v` output: its own lines, the request (with a key), the status, then the body."""
    head = (
        "* Connected to api.example.com (1.2.3.4) port 443\n"
        "> POST /v1/chat/completions HTTP/2\n"
        "> Authorization: Bearer sk-proj-Zz9yXw8vUt7sRq6pOn5mLk4j\n"
        "< HTTP/2 200\n"
        "< content-type: text/event-stream\n"
        "<\n"
    )
    return head + sse(*chunks)


FORMATS = {**WRITERS, "har-base64": har_base64, "http": http_dump}

secret_values = st.sampled_from(SECRET_VALUES)
plain = st.text(string.ascii_letters + string.digits + " {}:,\"'\\+/=", max_size=8)
texts = st.one_of(plain, secret_values, st.tuples(plain, secret_values, plain).map(" ".join))
fragments = st.builds(
    frag,
    index=st.sampled_from([ABSENT, 0, 1]),
    id=st.one_of(st.sampled_from([ABSENT, "", "call_1", "call_2"]), secret_values),
    name=st.one_of(st.just(ABSENT), st.sampled_from(["get_weather", "book"]), secret_values),
    args=st.one_of(st.just(ABSENT), texts, st.sampled_from(['{"a": "', '"}', "{}"])),
)
bodies = st.lists(
    st.tuples(st.lists(fragments, max_size=3), st.one_of(st.just(ABSENT), texts)),
    min_size=1,
    max_size=5,
)


def _shape(trace: Trace) -> dict[str, Any]:
    """What masking must not change: each fragment's rule and block, the blocks, the anomalies."""
    return {
        "rules": [[(f.rule, f.block) for f in step.fragments] for step in trace.steps],
        "kinds": [step.kind for step in trace.steps],
        "anomalies": [(a.code, a.step, a.block) for a in trace.anomalies],
        "blocks": [
            (b.number, len(b.text), len(str(b.id)), len(str(b.name)), type(b.delivered.arguments))
            for b in trace.blocks
        ],
        "stop": trace.stop_reason,
    }


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bodies, st.sampled_from(sorted(FORMATS)), st.sampled_from(["adr-0019", "exact-key"]))
def test_masking_changes_no_rule_block_or_anomaly_in_any_format(
    body: list[tuple[list[dict[str, Any]], Any]], fmt: str, policy: str
) -> None:
    values = [chunk(*calls, content=content, model="m") for calls, content in body]
    values.append(chunk(finish="tool_calls", model="m"))
    text = redact(FORMATS[fmt](*values)).text  # the header pass runs first either way
    masked, _ = redact_content(text, KEY)
    before, after = read(text), read(masked)
    assert (before.format, len(before.records)) == (after.format, len(after.records))
    assert [r.kind for r in before.records] == [r.kind for r in after.records]
    options = Options(policy=policy)  # type: ignore[arg-type]
    assert _shape(assemble(after.records, options)) == _shape(assemble(before.records, options))


def test_a_base64_body_is_left_whole_and_the_stream_keeps_its_fragments() -> None:
    values = [chunk(frag(0, "call_1", "get_weather", '{"city": "Paris"}')), chunk(finish="stop")]
    text = har_base64(*values)
    (body,) = encoded_bodies(text)
    assert json.loads(text[body[0] : body[1]]).startswith("ZGF0YTog")  # "data: " in base64
    assert scan(text, KEY) == []
    masked, findings = redact_content(text, KEY)
    assert masked == text and findings == []
    assert [r.kind for r in read(masked).records] == ["chunk", "chunk", "done"]


def test_secrets_elsewhere_in_a_base64_har_are_still_masked() -> None:
    value = json.loads(har_base64(chunk(frag(0, "call_1", "f", "{}")), chunk(finish="stop")))
    value["log"]["entries"][0]["request"]["postData"]["text"] = json.dumps(
        {"model": "m", "messages": [{"role": "user", "content": f"key {SECRET_VALUES[0]}"}]}
    )
    text = json.dumps(value)
    masked, findings = redact_content(text, KEY)
    assert [f.kind for f in findings] == ["API key"]
    assert SECRET_VALUES[0] not in masked
    assert len(read(masked).records) == 3


def test_an_encoding_member_elsewhere_protects_nothing_outside_a_har() -> None:
    secret = SECRET_VALUES[4]
    text = sse({"encoding": "base64", "text": secret, "choices": []})
    assert [f.kind for f in scan(text, KEY)] == ["base64 secret"]
