"""The Vercel AI SDK run as its users run it: a Node script of tests/capture against a base
URL, its findings read from what it prints (JSON)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from webapp.lenses.runner import NODE_DIR

STREAM_SCRIPT = Path(__file__).with_name("vercel.mjs")
"""streamText with tools: the calls, the bytes received, the stream's id."""


def run_ai_sdk(base_url: str, api_key: str = "unused", script: Path = STREAM_SCRIPT) -> Any:
    """What `script` printed, run by Node with the AI SDK against `base_url` (a failure,
    never a skip, without Node.js or the SDK)."""
    node = shutil.which("node")
    if node is None or not (NODE_DIR / "node_modules" / "ai").is_dir():
        pytest.fail("the Vercel AI SDK test needs Node.js and `make clients` (webapp/lenses/node)")
    env = {**os.environ, "BASE_URL": base_url, "API_KEY": api_key}
    done = subprocess.run(
        [node, "--input-type=module", "-"], input=script.read_bytes(), cwd=NODE_DIR, env=env,
        capture_output=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()
    return json.loads(done.stdout)
