"""Fake lenses: tiny Python programs that answer, hang, crash, print or are missing."""

from __future__ import annotations

import json
import sys

from webapp.lenses.pins import BY_CLIENT, Pin
from webapp.lenses.runner import Lens

CALL = {"id": "call_1", "name": "get_weather", "arguments": '{"city":"Paris"}'}


def program(code: str, client: str = "openai-python") -> Lens:
    """A lens that runs `code` with `python -c`, under the pin of `client`."""
    return Lens(BY_CLIENT[client], (sys.executable, "-c", code))


def answering(reply: dict[str, object], client: str = "openai-python") -> Lens:
    """A lens that reads its request and gives every stream the same reply."""
    code = (
        "import json, sys\n"
        "n = len(json.load(sys.stdin)['streams'])\n"
        f"reply = json.loads({json.dumps(json.dumps(reply))})\n"
        "print('a library printing on stdout')\n"
        "print(json.dumps({'results': [reply] * n}))\n"
    )
    return program(code, client)


HANGS = "import time\nwhile True: time.sleep(1)\n"
CRASHES = "import sys\nsys.stderr.write('Segmentation fault (pretend)\\n')\nsys.exit(139)\n"
GARBLES = "print('not json at all')\n"
GREEDY = "blocks = [bytearray(1 << 20) for _ in range(4096)]\n"


def missing(client: str = "litellm") -> Lens:
    pin: Pin = BY_CLIENT[client]
    return Lens(pin, ("false",), None, f"{pin.package} is not installed")
