"""Kill `streamviz serve` with SIGKILL at random moments while clients post; lose nothing acked.

A few client threads post small SSE streams (`POST /api/streams`) to a server on loopback with
a throwaway store. The server (its whole process group) is killed with SIGKILL at a random
moment, restarted on the same store and port, and killed again, `--kills` times. Then every
stream that was acknowledged (201 with an id) is read back through `GET /api/streams/{id}/raw`
and compared byte for byte with what was sent. Prints the counts; exits 1 if any acknowledged
stream is missing or differs, 2 if the server did not start.

Run: `.venv/bin/python bench/durability.py [--kills 10] [--clients 4] [--store sqlite|postgresql]
[--db URL] [--workers 1]`.
"""

from __future__ import annotations

import argparse
import random
import sys
import threading
from dataclasses import dataclass, field

import httpx
from serving import Server, small_stream, throwaway_store


@dataclass
class Ledger:
    """What the clients sent and what the server acknowledged, shared by the threads."""

    acknowledged: dict[str, bytes] = field(default_factory=dict)
    attempts: int = 0
    unanswered: int = 0  # connection refused/reset, or no answer before the kill
    refused: int = 0  # any answer other than 201
    lock: threading.Lock = field(default_factory=threading.Lock)


def client(base: str, ledger: Ledger, stop: threading.Event, who: int, seed: int) -> None:
    """Post streams until told to stop; record each 201 with the bytes it acknowledged."""
    rng = random.Random(seed * 1000 + who)
    n = 0
    with httpx.Client(base_url=base, timeout=10.0) as http:
        while not stop.is_set():
            n += 1
            text = small_stream(rng, f"d{who}n{n}")
            try:
                answer = http.post("/api/streams", json={"text": text, "title": f"dur {who}/{n}"})
            except httpx.TransportError:
                with ledger.lock:
                    ledger.attempts += 1
                    ledger.unanswered += 1
                stop.wait(0.02)  # the server is down: do not spin while it restarts
                continue
            with ledger.lock:
                ledger.attempts += 1
                if answer.status_code == 201:
                    ledger.acknowledged[answer.json()["id"]] = text.encode()
                else:
                    ledger.refused += 1


def check(base: str, ledger: Ledger) -> tuple[int, int]:
    """(missing, differing) among the acknowledged streams, read back from the server."""
    missing = differing = 0
    with httpx.Client(base_url=base, timeout=30.0) as http:
        for stream, sent in ledger.acknowledged.items():
            answer = http.get(f"/api/streams/{stream}/raw")
            if answer.status_code == 404:
                missing += 1
                print(f"  lost: {stream}")
            elif answer.status_code != 200 or answer.content != sent:
                differing += 1
                print(f"  differs: {stream} ({answer.status_code}, {len(answer.content)} bytes)")
    return missing, differing


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=10)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--min-up", type=float, default=0.2, help="seconds up before a kill, least")
    parser.add_argument("--max-up", type=float, default=2.0, help="seconds up before a kill, most")
    parser.add_argument("--store", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--db", default=None, help="use this store instead of a throwaway one")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    ledger = Ledger()
    with throwaway_store(args.store, args.db) as db:
        server = Server(db, workers=args.workers)
        stop = threading.Event()
        threads = [
            threading.Thread(target=client, args=(server.base, ledger, stop, i, args.seed))
            for i in range(args.clients)
        ]
        try:
            server.start()
            store = args.store if not args.db else "given --db"
            print(
                f"durability: {args.kills} kills, {args.clients} clients, {server.base} "
                f"({store}, {args.workers} worker(s))"
            )
            for thread in threads:
                thread.start()
            for _ in range(args.kills):
                stop.wait(rng.uniform(args.min_up, args.max_up))
                server.kill()
                server.start()
            stop.set()
            for thread in threads:
                thread.join()
            missing, differing = check(server.base, ledger)
        except RuntimeError as error:
            print(f"durability: {error}", file=sys.stderr)
            return 2
        finally:
            stop.set()
            server.stop()
    print(f"summary: {args.kills} kills, {ledger.attempts} posts, "
          f"{len(ledger.acknowledged)} acknowledged, {ledger.unanswered} unanswered, "
          f"{ledger.refused} refused, {missing} lost, {differing} differ")  # fmt: skip
    return 0 if missing == differing == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
