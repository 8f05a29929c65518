"""A mask is found for every secret it can be, and nothing else raises.

`sk-` and dashes matched the key pattern, and every keyed hash gave the value back: "no free
mask after 100 keyed hashes" (an AssertionError, a 500 on every upload's preview).
"""

from __future__ import annotations

import pytest

from webapp.core.redact.content import scan

KEY = b"content-masks-k"


@pytest.mark.parametrize("text", ["sk-" + "-" * 20, "xoxb-" + "-" * 12, "sk-proj-" + "_" * 20])
def test_a_key_with_nothing_to_mask_is_no_finding(text: str) -> None:
    assert scan(text, KEY) == []


def test_when_every_mask_of_a_shape_is_taken_the_rest_stay_unmasked() -> None:
    # One digit to hash: ten masks at most, and none may be the value itself.
    many = " ".join(f"sk-{digit}{'-' * 16}" for digit in "0123456789" * 2)
    masks = [finding.mask for finding in scan(many, KEY)]
    assert len(set(masks)) <= 10 and len(masks) <= 20
    for finding in scan(many, KEY):
        assert many[finding.start : finding.end] != finding.mask


def test_each_distinct_secret_gets_its_own_mask() -> None:
    text = " ".join(f"u{i:05d}@example.com" for i in range(2000))
    masks = [finding.mask for finding in scan(text, KEY)]
    assert len(masks) == 2000 == len(set(masks))
