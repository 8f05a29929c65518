"""What the web app is told when it starts: where the store is, and its limits.

`streamviz serve` builds one from its options. With several workers, each worker process
builds its own from `STREAMVIZ_*` environment variables (`to_env` / `from_env`), because
uvicorn starts workers from an import string, not from an object.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

ENV_PREFIX = "STREAMVIZ_"
MB = 1024 * 1024
DEFAULT_MAX_BYTES = 64 * MB
"""The default upload limit: a 100,000-chunk stream of realistic chunks fits."""


@dataclass(frozen=True, slots=True)
class Settings:
    """The web app's configuration."""

    db: str
    """The store: a SQLite file path, `sqlite:///PATH`, or `postgresql://...`."""
    max_bytes: int = DEFAULT_MAX_BYTES
    """The largest stream accepted, in bytes; larger input gets a 413."""
    cache_bytes: int = 512 * MB
    """What the caches of readings, traces and comparisons may hold together, in bytes."""
    max_uploads: int = 4
    """How many uploads one worker checks and stores at once (once their bodies are in); more
    get a 503."""
    body_timeout: float = 120.0
    """Seconds a request's body may take to arrive whole; a slower one gets a 408."""
    max_notes_per_stream: int = 200
    """The most notes one stream may hold; one more is refused (a 422 in words)."""
    max_notes_per_step: int = 20
    """The most notes one step of a stream may hold."""
    timeline_window: int = 60
    """How many timeline rows one window shows, and how many each scroll loads: a laptop's
    screen shows about 22, and a page centres its step with a third of the rows above it, so
    the first page draws a screen and more either side; the rest loads as it scrolls into
    view. (120 until round four: a long stream's page drew five screens no one had asked for,
    `bench/README.md`, "Round four".)"""
    allow_origins: tuple[str, ...] = ()
    """Other sites' origins (`https://a.example`) whose pages may post to this server."""
    embed_origins: tuple[str, ...] = ()
    """Origins (`https://wiki.example`) whose pages may frame the embedded view (`/embed/...`);
    none by default, and no other page may be framed at all."""
    public_url: str = ""
    """The server's address as its users reach it (`https://streamviz.example`), for absolute
    links in reports; "" when unknown. Its host is answered, and when it is https the owner
    cookie is Secure and responses carry HSTS."""
    allowed_hosts: tuple[str, ...] = ()
    """`Host` names answered besides localhost, the loopback addresses and the public URL's
    host (`streamviz.lan`, `*.example.com`, `.example.com`, `*` for any); others get a 400."""
    list_streams: bool = False
    """The library lists every stream (a team instance behind its own access control); else
    only those the browser created."""
    retention_days: int = 0
    """Streams older than this many days are removed (0: kept forever)."""
    minimise_seconds: int = 60
    """A minimise job stops after this many seconds with the smallest stream found so far."""
    minimise_jobs: int = 2
    """How many minimise jobs one worker runs at once; more get a 503."""
    export_steps: int = 1000
    """The most steps a stream's self-contained HTML file (`export.html`) holds in full."""
    upstreams: tuple[str, ...] = ()
    """The recording proxy's upstreams, `NAME=URL` each (`/proxy/NAME/...`); none: no proxy."""
    keep_requests: bool = False
    """The proxy stores request bodies (prompts) with their streams."""
    twin: bool = False
    """The proxy sends each captured streamed request once more with `"stream": false` after
    its stream ended and keeps the answer beside it (`webapp.proxy.twin`): twice the cost."""
    proxy_timeout: float = 600.0
    """Seconds an upstream may stay silent, before its headers or between two pieces."""
    proxy_connect_timeout: float = 10.0
    """Seconds to connect to an upstream."""
    proxy_queue_chunks: int = 16
    """Pieces of a response waiting for a slow client before the upstream is no longer read."""
    capture_batch_bytes: int = 64 * 1024
    """A captured stream's bytes are stored in batches of at most this many bytes..."""
    capture_batch_ms: int = 100
    """... or every this many milliseconds while they arrive."""
    capture_sweep_s: float = 2.0
    """Seconds between a worker's looks for the live captures of a worker that stopped."""
    proxy_drain_s: float = 1.0
    """How long an upstream is read on after its client left having been sent every piece, to
    see whether the body ends there (`webapp.proxy.forward.Limits.drain_s`)."""
    list_captures: bool = True
    """With `upstreams`, the library lists every stream the proxy captured (a proxy is its
    user's own instance), live ones first, besides the streams this browser stored."""
    stall_ms: int = 1000
    """A gap of more than this many milliseconds before a step is a stall (marked on pages)."""
    live_poll_ms: int = 1000
    """How often a live stream's page asks for what has arrived since."""
    live_share: float = 0.25
    """At most this share of a worker thread's time goes to re-making one live stream's view
    as it grows (`webapp.web.backend.capture.live`): a large one is shown less often."""
    lens_processes: int = 2
    """How many client-lens processes one worker runs at once; other streams wait in line."""
    lens_waiting: int = 16
    """How many streams may wait in one worker's line for the lenses; one more is refused."""
    lens_timeout: float = 60.0
    """Seconds one client lens may take on a stream."""
    lens_memory_mb: int = 1024
    """The memory cap of one client-lens process, in MiB."""
    lens_install_log: str = ""
    """The log of a client-lens install running beside the server (`make run` starts one);
    the clients page shows its progress. "" when none."""

    def to_env(self) -> dict[str, str]:
        """The settings as `STREAMVIZ_*` environment variables."""
        env: dict[str, str] = {}
        for field in fields(self):
            value = getattr(self, field.name)
            text = " ".join(value) if isinstance(value, tuple) else str(value)
            env[ENV_PREFIX + field.name.upper()] = text
        return env

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Settings from `STREAMVIZ_*` variables (`STREAMVIZ_DB` is required)."""
        source = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for field in fields(cls):
            name = ENV_PREFIX + field.name.upper()
            if name not in source:
                continue
            text = source[name]
            if field.type == "int":
                values[field.name] = int(text)
            elif field.type == "float":
                values[field.name] = float(text)
            elif field.type == "bool":
                values[field.name] = text == "True"
            elif field.type.startswith("tuple"):
                values[field.name] = tuple(text.split())
            else:
                values[field.name] = text
        if "db" not in values:
            raise KeyError(f"{ENV_PREFIX}DB is not set: it names the store")
        return cls(**values)
