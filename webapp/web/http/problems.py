"""Problem responses: what went wrong, in words, as the API's JSON `{"detail": ...}`; and JSON
written the way the CLI writes it (compact UTF-8, lone surrogates escaped)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel

from webapp.core.jsoncheck import dumps


class Problem(BaseModel):
    """What went wrong, in words."""

    detail: str


class CliJSONResponse(JSONResponse):
    """JSON as the CLI writes it: compact UTF-8, lone surrogates escaped."""

    def render(self, content: Any) -> bytes:
        """The content as `webapp.core.jsoncheck.dumps` writes it."""
        return dumps(content)


def json_response(content: Any, status: int = 200) -> Response:
    """`content` as JSON the way the CLI writes it."""
    return CliJSONResponse(content, status_code=status)


def problem(status: int, detail: object, headers: Mapping[str, str] | None = None) -> Response:
    """`{"detail": DETAIL}` (an error's words) with `status`, and `headers` (Retry-After, ...)."""
    response = json_response(Problem(detail=str(detail)).model_dump(), status)
    response.headers.update(headers or {})
    return response
