"""The built-in examples as streams that are never stored: ids `example:KEY`.

`Service.info` and `Service.raw` answer these ids from the package, so every reading, trace
and comparison of an example goes through the same cached code as a stored stream's, and
opening an example stores nothing. Stored ids never hold a colon, so the two cannot meet.
"""

from __future__ import annotations

from functools import cache

from webapp.core.readers import decode, read
from webapp.examples import EXAMPLES, Example
from webapp.storage import StreamInfo

PREFIX = "example:"


def example_id(key: str) -> str:
    """The stream id an example is known by."""
    return PREFIX + key


def example_of(stream_id: str) -> Example | None:
    """The example a stream id names, or None (not an example id, or no such example)."""
    if not stream_id.startswith(PREFIX):
        return None
    return EXAMPLES.get(stream_id[len(PREFIX) :])


@cache
def example_info(key: str) -> StreamInfo:
    """An example's record, as a stored stream's would be (created: the empty string)."""
    example = EXAMPLES[key]
    data = example.data()
    return StreamInfo(
        id=example_id(key),
        title=f"Example: {example.title}",
        created="",
        size=len(data),
        format=read(decode(data), "auto").format,
        input_format="auto",
        redactions=(),
    )
