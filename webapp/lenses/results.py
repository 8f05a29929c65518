"""What a lens reports: the calls a client hands the application, or the error it raised."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Status = Literal["ok", "error", "unavailable", "skipped"]
"""`skipped`: not run, because the stream is not what the client reads (another API's own
stream), `error` says why; `unavailable`: not installed."""
Limit = Literal["memory"]


@dataclass(frozen=True, slots=True)
class Call:
    """One tool call as a client holds it; `arguments` is its text or its parse as JSON."""

    id: str | None
    name: str | None
    arguments: str | None
    invalid: str | None = None
    """The client's own complaint about this call (LangChain's invalid_tool_calls, Vercel's
    invalid tool-call parts), when it kept the call but flagged it."""

    def to_json(self) -> dict[str, Any]:
        """The call as the JSON the CLI prints (`invalid` only when set)."""
        out: dict[str, Any] = {"id": self.id, "name": self.name, "arguments": self.arguments}
        if self.invalid is not None:
            out["invalid"] = self.invalid
        return out


@dataclass(frozen=True, slots=True)
class LensResult:
    """One client's view of one stream."""

    client: str
    version: str
    status: Status
    calls: tuple[Call, ...] = ()
    error: str | None = None
    install: str | None = None
    """For `unavailable`: the one command that installs the lens (None for `skipped`)."""
    seconds: float | None = field(default=None, compare=False)
    limit: Limit | None = None
    """For `error`: the lens stopped at a limit streamviz sets ("memory": its memory cap), so
    the error is not the library's."""

    def to_json(self) -> dict[str, Any]:
        """The `{"client", "version", "status", "calls", "error", "install"}` object, and
        `"limit"` when the lens stopped at one."""
        out: dict[str, Any] = {
            "client": self.client,
            "version": self.version,
            "status": self.status,
            "calls": [call.to_json() for call in self.calls],
            "error": self.error,
            "install": self.install,
        }
        if self.limit is not None:
            out["limit"] = self.limit
        return out

    @classmethod
    def from_json(cls, value: Any) -> LensResult:
        """`to_json` read back (a result kept in the store); raises ValueError."""
        if not isinstance(value, dict):
            raise ValueError(f"a result must be an object, not {type(value).__name__}")
        status, limit = value.get("status"), value.get("limit")
        client, version = value.get("client"), value.get("version")
        if status not in ("ok", "error", "unavailable", "skipped") or limit not in (None, "memory"):
            raise ValueError(f"unknown status {status!r} or limit {limit!r}")
        if not isinstance(client, str) or not isinstance(version, str):
            raise ValueError("a result names its client and version")
        calls = value.get("calls") or []
        if not isinstance(calls, list):
            raise ValueError("calls must be a list")
        return cls(client, version, status, tuple(call_from_json(call) for call in calls),
                   _text(value.get("error")), _text(value.get("install")), None, limit)  # fmt: skip


def call_from_json(value: Any) -> Call:
    """A call from a lens's reply; anything unexpected becomes text."""
    if not isinstance(value, dict):
        raise ValueError(f"a call must be an object, not {type(value).__name__}")
    return Call(
        id=_text(value.get("id")),
        name=_text(value.get("name")),
        arguments=_text(value.get("arguments")),
        invalid=_text(value.get("invalid")),
    )


def result_from_json(client: str, version: str, value: Any) -> LensResult:
    """A result from a lens's reply (`{"status", "calls", "error"}`); raises ValueError."""
    if not isinstance(value, dict):
        raise ValueError(f"a result must be an object, not {type(value).__name__}")
    status = value.get("status")
    if status not in ("ok", "error"):
        raise ValueError(f"unknown status {status!r}")
    calls = value.get("calls") or []
    if not isinstance(calls, list):
        raise ValueError("calls must be a list")
    return LensResult(
        client,
        version,
        "ok" if status == "ok" else "error",
        tuple(call_from_json(call) for call in calls),
        _text(value.get("error")),
    )


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return str(value)
