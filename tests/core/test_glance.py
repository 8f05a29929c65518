"""`Trace.glance`: a step as a timeline row shows it says what the step's `Step` says."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from tests.core.test_golden import CORPUS, _cases
from tests.core.test_properties import any_options, any_records
from webapp.core.assembler import assemble
from webapp.core.options import Options
from webapp.core.readers import read
from webapp.core.records import Record
from webapp.core.steps import Glance, Step


def glance_of(step: Step) -> Glance:
    """What `Trace.glance` must answer, read off the step's objects."""
    return Glance(
        step.step,
        step.line,
        step.kind,
        tuple((f.rule, f.block, f.appended, f.late) for f in step.fragments),
        tuple((e.type, e.contentIndex, e.reason) for e in step.events),
        step.error,
        step.assembled,
        step.finish_reason,
    )


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(any_records, any_options)
def test_a_glance_is_its_step_without_keys_reasons_or_deltas(
    stream: list[Record], options: Options
) -> None:
    trace = assemble(stream, options)
    for step in trace.steps:
        assert trace.glance(step.step) == glance_of(step)


@pytest.mark.parametrize(("name", "policy", "server_tools"), _cases())
def test_a_glance_at_every_corpus_step_is_its_step(
    name: str, policy: str, server_tools: tuple[str, ...] | None
) -> None:
    """The corpus has what random records rarely make: late fragments on the server-tools path,
    text and thinking deltas, provider errors."""
    records = read((CORPUS / f"{name}.sse").read_text(encoding="utf-8")).records
    path = "client" if server_tools is None else "server-tools"
    options = Options(policy, path, server_tools or ())  # type: ignore[arg-type]
    trace = assemble(records, options)
    for step in trace.steps:
        assert trace.glance(step.step) == glance_of(step)
