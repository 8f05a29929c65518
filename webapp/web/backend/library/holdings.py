"""What a stream holds, as the library shows and searches it: model, tools, calls, codes.

Taken from its trace under the default options once, when it is stored (from the view its
first page shows) or, for a capture, when it ends (from the trace alone): the terms the
search finds it by (`webapp.storage.search`), the numbers its library row shows, and the
title it gets when it was given none (`webapp.core.words.title_from`).

The values in the calls' arguments (`Edinburgh`, a ticker: what teammates remember) are read
from each call's final arguments text token by token, the way JSON is written but without
needing it whole: a stream's arguments are often what is broken, cut short or run together,
and their values should find it still. Its strings that are no keys, and its numbers, are
kept; the scan reads each character once.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from webapp.core.anomalies import severity_of
from webapp.core.jsvalue import truthy
from webapp.core.records import ReadResult
from webapp.core.trace import Trace
from webapp.core.words import title_from

TOOLS_SHOWN = 8
"""Tool names a library row keeps at most."""
CALLS_READ = 64
"""The values of the first this many calls' arguments are searched."""
ARGUMENT_CHARS = 16 * 1024
"""Of a longer arguments text only the start is read for its values."""
VALUES_KEPT = 512
"""Values taken per stream at most (`webapp.storage.search` keeps fewer words still)."""
_TOKEN = re.compile(
    r'"(?:[^"\\]|\\.)*+(?:"|\\?\Z)|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|[^"\d-]+|.', re.S
)
"""A string (to its closing quote, else to the end), a number, or anything else: every
character starts a token, so the scan never reads a character twice."""
_KEY_AFTER = re.compile(r"\s*:")


def declared_tools(found: ReadResult) -> Iterator[str]:
    """The names of the tools a request declared (a HAR's or a cassette's)."""
    for tool in found.tools:
        function = tool.get("function")
        name = function.get("name") if isinstance(function, dict) else tool.get("name")
        if isinstance(name, str) and name:
            yield name


def model_of(trace: Trace, found: ReadResult) -> str | None:
    """The model the request names (a HAR's), else the first chunk's."""
    asked = found.model
    if isinstance(asked, str) and asked:
        return asked
    contract = trace.contract
    model = contract.model if contract is not None else None
    return model if isinstance(model, str) and model else None


def called_tools(trace: Trace) -> list[str]:
    """The names of the tools the stream calls, in the order they opened, once each."""
    names: list[str] = []
    for block in trace.blocks:
        name = block.name
        if isinstance(name, str) and name and name not in names:
            names.append(name)
            if len(names) > 64:
                break
    return names


def leaves(text: str) -> Iterator[str]:
    """The strings that are no object keys, and the numbers, in JSON text (whole or not)."""
    for token in _TOKEN.finditer(text):
        found = token.group()
        if found[0] == '"':
            if _KEY_AFTER.match(text, token.end()) is None:
                yield _unquoted(found)
        elif found[-1].isdigit():
            yield found


def _unquoted(literal: str) -> str:
    """A JSON string literal's text (one cut short closed first; a bad escape kept as sent)."""
    closed = literal if len(literal) > 1 and literal.endswith('"') else literal + '"'
    try:
        value = json.loads(closed)
    except ValueError:
        return literal.strip('"')
    return value if isinstance(value, str) else literal.strip('"')


def _start(pieces: list[str], most: int) -> str:
    """The first `most` characters of the joined pieces, joining no more of them than that."""
    taken: list[str] = []
    size = 0
    for piece in pieces:
        taken.append(piece)
        size += len(piece)
        if size >= most:
            break
    return "".join(taken)[:most]


def argument_values(trace: Trace) -> list[str]:
    """The values in the first calls' final arguments (a freeform call's input whole)."""
    found: list[str] = []
    calls = (block for block in trace.blocks if block.kind == "toolCall")
    for _, block in zip(range(CALLS_READ), calls, strict=False):
        if block.custom_input is not None:
            found.append(_start(block.custom_input, ARGUMENT_CHARS))
        else:
            found.extend(leaves(_start(block.pieces, ARGUMENT_CHARS)))
        if len(found) >= VALUES_KEPT:
            break
    return found[:VALUES_KEPT]


def terms(trace: Trace, found: ReadResult) -> dict[str, list[object]]:
    """What the search finds the stream by, per kind (`webapp.storage.search.KINDS`)."""
    contract = trace.contract
    model = model_of(trace, found)
    return {
        "model": [model] if model else [],
        "tool": [*called_tools(trace), *declared_tools(found)],
        "call": [block.id for block in trace.blocks[:200]],
        "anomaly": sorted({anomaly.code for anomaly in trace.anomalies}),
        "quirk": sorted(contract.codes) if contract is not None else [],
        "value": [*argument_values(trace)],
    }


def title(trace: Trace, found: ReadResult, fallback: str) -> str:
    """ "gpt-4o: get_weather, book_flight": the model and the tools called (else declared)."""
    tools = called_tools(trace) or list(declared_tools(found))
    return title_from(model_of(trace, found), tools, fallback)


def stats(trace: Trace, found: ReadResult) -> dict[str, Any]:
    """A library row's numbers: chunks, named calls, errors, warnings; the model and tools;
    `end`, why the stream's end is not in its bytes (None when it is: the anomalies and quirks
    are then of the whole stream, not only of what was recorded)."""
    severities = [severity_of(anomaly.code) for anomaly in trace.anomalies]
    model = model_of(trace, found)
    contract = trace.contract
    return {
        "chunks": trace.chunk_count,
        "calls": sum(1 for block in trace.blocks if truthy(block.name)),
        "errors": severities.count("error"),
        "warnings": len(severities) - severities.count("error"),
        "model": model,
        "tools": called_tools(trace)[:TOOLS_SHOWN],
        "quirks": sorted(contract.codes) if contract is not None else [],
        "end": contract.end if contract is not None else None,
    }


def current(kept: dict[str, Any] | None) -> bool:
    """Whether a row's kept numbers were made by this version: those made before the end of
    a paste was judged (they have no `end`) may count anomalies of an end it does not hold."""
    return kept is not None and "end" in kept
