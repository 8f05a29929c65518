"""report.md's wording: articles, one "(step N)", JSON values in a fixture's difference."""

from __future__ import annotations

import re
from pathlib import Path

import webapp.examples
from webapp.core.assembler import assemble
from webapp.core.options import Options
from webapp.core.readers import read
from webapp.core.words import article
from webapp.triage.expect import Difference
from webapp.triage.predicates import parse_until
from webapp.triage.report import verdict


def test_articles() -> None:
    assert article("ambiguous-continuation") == "an ambiguous-continuation"
    assert article("phantom-call") == "a phantom-call"
    until = parse_until("anomaly:ambiguous-continuation", Options())
    assert until.words.startswith("an ambiguous-continuation anomaly"), until.words


def test_a_difference_shows_json_values() -> None:
    said = Difference("steps[1].fragments[0].id", None, "call_1", 1).describe()
    assert said == 'step 1: steps[1].fragments[0].id: expected null, got "call_1"'
    assert "expected true, got 3" in Difference("x", True, 3, None).describe()


def test_the_verdict_names_its_step_once() -> None:
    folder = Path(webapp.examples.__file__).parent
    for path in sorted(folder.glob("*.sse")):
        records = read(path.read_text()).records
        for policy in ("adr-0019", "exact-key"):
            said = verdict(assemble(records, Options(policy=policy)))
            step = re.search(r"\(step (\d+)\)$", said)
            if step is not None:  # "... at step 3 (step 3)" said it twice
                assert said.count(f"step {step.group(1)}") == 1, (path.name, said)
