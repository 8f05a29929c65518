"""What a stream holds, as the library shows and searches it: model, tools, calls, codes.

Taken from its trace view under the default options once, when it is stored (the same view
its first page shows): the terms the search finds it by (`webapp.storage.search`), the
numbers its library row shows, and the title it gets when it was given none
(`webapp.core.words.title_from`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from webapp.core.anomalies import severity_of
from webapp.core.jsvalue import truthy
from webapp.core.records import ReadResult
from webapp.core.words import title_from
from webapp.web.backend.traceview import TraceView

TOOLS_SHOWN = 8
"""Tool names a library row keeps at most."""


def declared_tools(found: ReadResult) -> Iterator[str]:
    """The names of the tools a request declared (a HAR's or a cassette's)."""
    for tool in found.tools:
        function = tool.get("function")
        name = function.get("name") if isinstance(function, dict) else tool.get("name")
        if isinstance(name, str) and name:
            yield name


def model_of(view: TraceView) -> str | None:
    """The model the request names (a HAR's), else the first chunk's."""
    found = view.source.found.model
    if isinstance(found, str) and found:
        return found
    contract = view.trace.contract
    model = contract.model if contract is not None else None
    return model if isinstance(model, str) and model else None


def called_tools(view: TraceView) -> list[str]:
    """The names of the tools the stream calls, in the order they opened, once each."""
    names: list[str] = []
    for block in view.trace.blocks:
        name = block.name
        if isinstance(name, str) and name and name not in names:
            names.append(name)
            if len(names) > 64:
                break
    return names


def terms(view: TraceView) -> dict[str, list[object]]:
    """What the search finds the stream by, per kind (`webapp.storage.search.KINDS`)."""
    trace = view.trace
    contract = trace.contract
    model = model_of(view)
    return {
        "model": [model] if model else [],
        "tool": [*called_tools(view), *declared_tools(view.source.found)],
        "call": [block.id for block in trace.blocks[:200]],
        "anomaly": sorted({anomaly.code for anomaly in trace.anomalies}),
        "quirk": sorted(contract.codes) if contract is not None else [],
    }


def title(view: TraceView, fallback: str) -> str:
    """ "gpt-4o: get_weather, book_flight": the model and the tools called (else declared)."""
    tools = called_tools(view) or list(declared_tools(view.source.found))
    return title_from(model_of(view), tools, fallback)


def stats(view: TraceView) -> dict[str, Any]:
    """A library row's numbers: chunks, named calls, errors, warnings; the model and tools."""
    trace = view.trace
    severities = [severity_of(anomaly.code) for anomaly in trace.anomalies]
    model = model_of(view)
    return {
        "chunks": trace.chunk_count,
        "calls": sum(1 for block in trace.blocks if truthy(block.name)),
        "errors": severities.count("error"),
        "warnings": len(severities) - severities.count("error"),
        "model": model,
        "tools": called_tools(view)[:TOOLS_SHOWN],
        "quirks": sorted(trace.contract.codes) if trace.contract is not None else [],
    }
