"""A long argument's parse marks (about 40 parses of its whole text, seconds at a million
chunks) are found beside the first page, in the keeper's thread, not in the first step request
that shows the block's state."""

from __future__ import annotations

import json
from pathlib import Path

from fastapi.testclient import TestClient

from tests.web.webkit import HX
from webapp.core.options import Options
from webapp.settings import Settings
from webapp.web.app import create_app
from webapp.web.backend.trace.arguments import LONG, _first

PIECE = "abcdefghij" * 10


def long_stream(pieces: int) -> str:
    head = {"index": 0, "id": "call_1", "function": {"name": "note", "arguments": '{"a":"'}}
    lines = [{"choices": [{"index": 0, "delta": {"tool_calls": [head]}}]}]
    more = {"index": 0, "function": {"arguments": PIECE}}
    lines += [{"choices": [{"index": 0, "delta": {"tool_calls": [more]}}]}] * pieces
    end = {"index": 0, "function": {"arguments": '"}'}}
    lines.append({"choices": [{"index": 0, "delta": {"tool_calls": [end]}}]})
    return "".join(f"data: {json.dumps(line)}\n\n" for line in lines) + "data: [DONE]\n\n"


def test_the_first_page_s_view_has_its_long_marks_found_before_any_step(tmp_path: Path) -> None:
    pieces = LONG // len(PIECE) + 10
    settings = Settings(db=str(tmp_path / "s.sqlite3"), max_bytes=4 * 1024 * 1024)
    app = create_app(settings)
    with TestClient(app, base_url="http://localhost") as client:
        stream_id = client.post("/api/streams", json={"text": long_stream(pieces)}).json()["id"]
        assert client.get(f"/s/{stream_id}").status_code == 200
        service = app.state.service
        service.settle()  # the keeper's thread is done
        view = service.cached_view(stream_id, Options())
        assert view is not None
        [block] = view.long_blocks()
        assert view.long_text(block)._marks is not None  # no step asked for it
        step = client.get(f"/s/{stream_id}?step={pieces // 2}", headers=HX)
        assert step.status_code == 200


def test_the_search_for_a_mark_finds_the_least_count_and_parses_little_near_the_end() -> None:
    for low in range(0, 4):
        for high in range(low - 1, 40):
            for answer in range(low, high + 2):
                asked: list[int] = []

                def holds(n: int, answer: int = answer, asked: list[int] = asked) -> bool:
                    asked.append(n)
                    return n >= answer

                assert _first(low, high, holds) == answer
                if high - low > 16 and answer == high:
                    assert len(asked) <= 3  # the last piece completes it: 3 probes, not 6+
