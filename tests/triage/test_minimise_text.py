"""The default repro keeps the bug's story: every example and real recording, minimised until
its fingerprint, keeps the fingerprint and each call's argument text as whole pieces of the
input's (`{"x": 7}` never becomes `{"":7}`); a clean one has nothing to keep.

`whole_pieces` is this test's own reading of "whole pieces", written apart from the
minimiser's (`webapp.triage.pieces`) so that one does not vouch for the other:

- the repro's text of a call is the input's text of that call; or
- the input's text is JSON: the repro's is too, the same value with some members of its
  objects and items of its arrays left out (whole, in order; one at least of each that had
  any; what is kept compared as JSON);
- else the repro's pieces (the strings its fragments appended) are some of the input's, in
  order, and so are its JSON tokens (a whole string, number, literal or mark).

A repro's calls are matched to the input's in order, by name (adr-0019's blocks, the policy the
fingerprint is kept under).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pytest

from tests.streamkit import chunk, frag, records
from webapp.core.assembler import assemble
from webapp.core.blocks import Block
from webapp.core.options import Options
from webapp.core.readers import read
from webapp.core.readers.writer import to_sse
from webapp.triage.fingerprint import fingerprint
from webapp.triage.minimise import minimise
from webapp.triage.pieces import cut, tree
from webapp.triage.predicates import keeps_fingerprint

ROOT = Path(__file__).resolve().parents[2]
STREAMS = sorted(
    [
        *(ROOT / "webapp" / "examples").glob("*.sse"),
        *(ROOT / "tests" / "corpus" / "real").glob("*.sse"),
        *(ROOT / "bench" / "recordings").glob("*.sse"),
    ]
)
CLEAN = {
    "examples/clean.sse",
    "examples/index-no-id.sse",
    "examples/interleaved.sse",
    "real/openai-gpt4o-parallel-obfuscation.sse",
    "real/azure-deepseek-v4pro-hex-id-text.sse",
    "real/azure-gpt5mini-prompt-filter-tool.sse",
    "real/crusoe-llama33-token-ids-text.sse",
    "real/deepseek-reasoner-reasoning-tool.sse",
    "real/groq-kimi-k2-parallel-wholecalls.sse",
    "real/groq-llama33-wholecall.sse",
    "real/llamacpp-gptoss20b-reasoning-tool.sse",
    "real/mistral-magistral-content-array-text.sse",
    "real/openrouter-claude45sonnet-signature-text.sse",
    "real/openrouter-grok4-encrypted-reasoning-text.sse",
    "real/vercel-gateway-claude-sonnet4-signature-tool.sse",
    "real/vercel-gateway-gemini3pro-encrypted-tool.sse",
    "real/xai-grok3mini-reasoning-wholecall.sse",
    "real/xai-grok4fast-parallel-wholecalls.sse",
    "real/xai-grokcodefast-reasoning-wholecall.sse",
    "real/zai-glm47flash-reasoning-wholecall.sse",
    "recordings/openai-gpt4o-long-arguments.sse",
    "recordings/vercel-gateway-gpt5-reasoning-tool.sse",
}
"""No quirk, no anomaly, both policies intact: nothing to keep."""
T = TypeVar("T")
_TOKEN = re.compile(r'"(?:\\.|[^"\\])*"?|[-+.\w]+|\S')


def _name(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


def _in_order(some: Sequence[T], of: Sequence[T], fits: Callable[[T, T], bool]) -> bool:
    at = 0
    for item in some:
        while at < len(of) and not fits(item, of[at]):
            at += 1
        if at == len(of):
            return False
        at += 1
    return True


class _Members(list[tuple[str, Any]]):
    pass


def _json(text: str) -> Any:
    try:
        return json.loads(text, object_pairs_hook=_Members)
    except ValueError:
        return ValueError


def _left_out(repro: Any, original: Any) -> bool:
    """`repro` is `original` with members and items left out, one at least of each kept."""
    if isinstance(original, _Members):
        return (
            isinstance(repro, _Members)
            and (len(repro) > 0 or not original)
            and _in_order(repro, original, lambda r, o: r[0] == o[0] and _left_out(r[1], o[1]))
        )
    if isinstance(original, list):
        return (
            isinstance(repro, list)
            and (len(repro) > 0 or not original)
            and _in_order(repro, original, _left_out)
        )
    return type(repro) is type(original) and repro == original


def whole_pieces(original: Block, repro: Block) -> bool:
    """The repro's argument text of a call is made of whole pieces of the input's."""
    if repro.text == original.text:
        return True
    before = _json(original.text)
    if before is not ValueError:
        return _left_out(_json(repro.text), before)
    same: Callable[[Any, Any], bool] = lambda a, b: a == b  # noqa: E731
    return _in_order(repro.pieces, original.pieces, same) and _in_order(
        _TOKEN.findall(repro.text), _TOKEN.findall(original.text), same
    )


def calls_kept(original: Sequence[Block], repro: Sequence[Block]) -> bool:
    """Each call of the repro is one of the input's, in order, by name, in whole pieces."""
    return _in_order(repro, original, lambda r, o: r.name == o.name and whole_pieces(o, r))


@pytest.mark.parametrize("path", STREAMS, ids=_name)
def test_the_default_repro_keeps_the_fingerprint_and_the_argument_text(path: Path) -> None:
    source = read(path.read_text(encoding="utf-8"), "sse").records
    until = keeps_fingerprint(source, Options())
    if _name(path) in CLEAN:
        assert "holds no bug to keep" in until.nothing
        return
    assert not until.nothing
    result = minimise(source, until.predicate)
    again = read(to_sse(result.records), "sse").records  # as the CLI prints it
    assert fingerprint(again) == fingerprint(source)
    original, repro = assemble(source).blocks, assemble(again).blocks
    shown = [(block.name, block.text) for block in repro]
    assert calls_kept(original, repro), shown
    assert len(result.records) <= len(source)


def test_every_clean_stream_is_in_the_table() -> None:
    assert {_name(path) for path in STREAMS} >= CLEAN


@pytest.mark.parametrize(
    ("original", "repro", "kept"),
    [
        ('{"x": 7}', '{"":7}', False),  # what ddmin over characters made
        ('{"x": 7}', '{"x": 7}', True),
        ('{"city": "Paris", "unit": "C"}', '{"city": "Paris"}', True),
        ('{"city": "Paris", "unit": "C"}', '{"unit":"C"}', True),
        ('{"city": "Paris", "unit": "C"}', "{}", False),  # one member at least
        ('{"city": "Paris", "unit": "C"}', '{"city":"C"}', False),  # a value from elsewhere
        ('{"a": 2, "b": 3}', '{"b": 3, "a": 2}', False),  # out of order
        ('{"a": 2}', '{"a": 2.0}', False),
        ('{"a": [{"b": 1, "c": 2}, {"d": 3}]}', '{"a": [{"c": 2}]}', True),
        ('{"a": [{"b": 1, "c": 2}, {"d": 3}]}', '{"a": []}', False),
        ('{"a": [{"b": 1, "c": 2}, {"d": 3}]}', '{"a": [{"d": 3}, {"c": 2}]}', False),
    ],
)
def test_whole_pieces_of_one_fragment(original: str, repro: str, kept: bool) -> None:
    assert whole_pieces(_block(original), _block(repro)) is kept


def test_whole_pieces_of_broken_text_are_its_fragments() -> None:
    broken = _block('{"q": ', '"ab"', "}}")
    assert whole_pieces(broken, _block('{"q": ', "}}"))
    assert not whole_pieces(broken, _block('{"q": ', '"b"', "}}"))  # not a piece of it
    assert not whole_pieces(broken, _block('{"q": ', "}", "}"))  # nor are these


def test_members_and_items_are_cut_whole_out_of_the_fragments_that_carry_them() -> None:
    pieces = ['{"city":', '"Paris",', '"unit":"C"}']
    text = "".join(pieces)
    root = tree(text)
    assert root is not None and len(root.items) == 2
    lengths = [len(piece) for piece in pieces]
    assert cut(text, root, {root.start: [0]}, lengths) == ['{"city":', '"Paris"', "}"]
    assert cut(text, root, {root.start: [1]}, lengths) == ["{", "", '"unit":"C"}']
    pieces = ['{"a": [1, ', '{"b": 2, "c": 3}]', "}"]
    text = "".join(pieces)
    root = tree(text)
    assert root is not None
    inner = root.items[0].value
    nested = {root.start: [0], inner.start: [1], inner.items[1].value.start: [1]}
    assert cut(text, root, nested, [len(piece) for piece in pieces]) == [
        '{"a": [',
        '{"c": 3}]',
        "}",
    ]
    assert "".join(cut(text, root, {}, [len(text)])) == text
    assert tree('{"a": 1} x') is None and tree("") is None and tree('{"a" 1}') is None
    assert tree("[" * 100 + "]" * 100) is None  # deeper than DEEPEST: not pruned


def test_a_call_streamed_token_by_token_loses_whole_members_only() -> None:
    # The tokens as kimi-k2.5 sends them: dropping the `a` chunk would leave {"":2,...}.
    tokens = ['{"', "a", '":', " ", "2", ",", ' "', "b", '":', " ", "3", "}"]
    values = [chunk(frag(0, "call_1", "add", "")), *(chunk(frag(0, args=t)) for t in tokens)]
    values.append(chunk(finish="stop"))  # stop-with-calls: the quirk to keep
    stream = records(values)
    until = keeps_fingerprint(stream, Options())
    result = minimise(stream, until.predicate)
    assert until.predicate(result.records)
    (block,) = assemble(result.records).blocks
    assert json.loads(block.text) in ({"a": 2}, {"b": 3})
    texts = [(block.name, block.text) for block in assemble(result.records).blocks]
    shrunk = minimise(stream, until.predicate, shrink_text=True)  # the opt-in way
    assert [b.text for b in assemble(shrunk.records).blocks] != [t for _, t in texts]


def _block(*pieces: str) -> Block:
    block = Block("toolCall", 0, 0)
    for piece in pieces:
        block.append(0, piece)
    return block
