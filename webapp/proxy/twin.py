"""The non-stream twin (`serve --twin`): a captured streamed request sent once more with
`"stream": false` once its stream has ended, the answer kept beside the capture.

The twin goes to the same URL with the same headers as the stream's request (its length
aside, which httpx sets anew), through the forwarder's own client (no redirect followed, so
never to another host), after the stream's end was recorded: it never delays or slows the
stream's client, and it doubles the upstream's cost, which is why it is off by default. Its
body is the stream's request with `"stream": false` and without `stream_options` (which
OpenAI refuses without a stream); a request that was not a JSON object asking for a stream,
or that was too long to keep (`Limits.request_bytes`), gets no twin. The answer is recorded as
a capture of its own (format "json", `Facts.twin_of` naming the stream), whatever its status:
a twin that fails is kept with its status and error body (status 0 when no answer came, its
detail saying why), and is never retried.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from concurrent.futures import Executor
from dataclasses import replace
from typing import Any

import httpx
import orjson

from webapp.proxy.forward import Limits, Recorder, in_words, request_facts, title_of, to_the_end
from webapp.storage.capture import Facts, Part
from webapp.storage.store import ENDINGS

log = logging.getLogger(__name__)
DROPPED = frozenset({b"content-length"})
"""Request headers not sent again as they were: the twin's body has a length of its own."""


def twin_body(body: bytes | None) -> bytes | None:
    """The stream's request body as the twin sends it (`"stream": false`, no
    `stream_options`), or None when it gets no twin (not a JSON object that asks for a
    stream)."""
    try:
        value: Any = orjson.loads(body) if body else None
    except orjson.JSONDecodeError:
        return None
    if not isinstance(value, dict) or value.get("stream") is not True:
        return None
    value = {key: item for key, item in value.items() if key != "stream_options"}
    value["stream"] = False
    return orjson.dumps(value)


class Twins:
    """The twins being sent, each a task of its own (kept here so none is collected early)."""

    def __init__(self, recorder: Recorder, limits: Limits, writers: Executor) -> None:
        self.recorder = recorder
        self.limits = limits
        self.writers = writers
        self.tasks: set[asyncio.Task[None]] = set()

    def start(
        self,
        client: httpx.AsyncClient,
        stream_id: str,
        facts: Facts,
        url: str,
        headers: Sequence[tuple[bytes, bytes]],
        body: bytes | None,
    ) -> bool:
        """Send the twin of stream `stream_id` (whose request had these facts, URL, headers
        and body) in the background; False when the request gets no twin."""
        sent = twin_body(body)
        if sent is None:
            return False
        kept = [(key, value) for key, value in headers if key.lower() not in DROPPED]
        request = client.build_request(facts.method, url, headers=kept, content=sent)
        task = asyncio.ensure_future(self._send(client, request, stream_id, facts))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return True

    async def aclose(self) -> None:
        """Stop the twins still being sent (unrecorded: the server is stopping)."""
        for task in list(self.tasks):
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)

    async def _send(
        self, client: httpx.AsyncClient, request: httpx.Request, stream_id: str, facts: Facts
    ) -> None:
        started = time.perf_counter()
        data, state, detail = b"", ENDINGS["complete"], ""
        status, content_type, headers_ms = 0, "", None
        try:
            response = await client.send(request, stream=True)
            try:
                headers_ms = (time.perf_counter() - started) * 1000
                status = response.status_code
                content_type = response.headers.get("content-type", "")[:200]
                data, state, detail = await self._read(response)
            finally:
                await response.aclose()
        except httpx.HTTPError as error:
            state, detail = ENDINGS["upstream"], f"the twin got no answer: {in_words(error)}"
        ms = (time.perf_counter() - started) * 1000
        model, _, tools = request_facts(request.content)
        twin = replace(
            facts, status=status, content_type=content_type, model=model[:200] or facts.model,
            streamed=False, tools=tools or facts.tools, request=None, request_masked=None,
            headers_ms=headers_ms, twin_of=stream_id,
        )  # fmt: skip
        try:
            await to_the_end(asyncio.get_running_loop().run_in_executor(
                self.writers, self._record, twin, data, ms, state, detail))  # fmt: skip
        except Exception as error:  # the store gone, the stream deleted meanwhile
            log.warning("the non-stream twin of stream %s was not recorded (%s)", stream_id, error)

    async def _read(self, response: httpx.Response) -> tuple[bytes, str, str]:
        """The answer's bytes (at most `stored_bytes`), how its body ended, and why."""
        pieces: list[bytes] = []
        size = 0
        try:
            async for piece in response.aiter_raw():
                if size + len(piece) > self.limits.stored_bytes:
                    more = f"stored the first {size:,} bytes (--max-bytes)"
                    return b"".join(pieces), ENDINGS["truncated"], more
                pieces.append(piece)
                size += len(piece)
        except httpx.HTTPError as error:
            return b"".join(pieces), ENDINGS["upstream"], in_words(error)
        return b"".join(pieces), ENDINGS["complete"], ""

    def _record(self, facts: Facts, data: bytes, ms: float, state: str, detail: str) -> None:
        sink = self.recorder.open(facts, f"non-stream twin: {title_of(facts)}", "json")
        if data:
            sink.write(0, Part(data, (len(data),), (ms,)))
        sink.end(state, detail)
