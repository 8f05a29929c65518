"""The load and durability scripts run, stop by themselves, and print their summary (SQLite)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _run(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, str(ROOT / "bench" / script), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
    )


def test_load_script_runs_and_reports_every_kind() -> None:
    done = _run("load.py", "--clients", "2", "--seconds", "2", "--store", "sqlite")
    assert done.returncode == 0, done.stdout + done.stderr
    for kind in ("post", "page", "step", "trace", "all"):
        assert any(line.startswith(kind + " ") for line in done.stdout.splitlines()), kind
    assert "summary:" in done.stdout
    assert " 0 busy 503, 0 other 5xx, 0 without answer" in done.stdout


def test_load_script_keeps_streams_going_through_the_proxy_while_steps_are_served() -> None:
    done = _run(
        "load.py", "--clients", "2", "--seconds", "2", "--store", "sqlite",
        "--proxy-streams", "2", "--proxy-chunks", "50",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    line = next(line for line in done.stdout.splitlines() if line.startswith("proxy:"))
    relayed = int(line.split("proxy: ", 1)[1].split(" streams read whole", 1)[0])
    assert relayed >= 2 and ", 0 failed or short;" in line and " 0 over 1 s" in line, line


def test_durability_script_loses_nothing_acknowledged() -> None:
    done = _run("durability.py", "--kills", "2", "--clients", "2", "--max-up", "1.0")
    assert done.returncode == 0, done.stdout + done.stderr
    summary = next(line for line in done.stdout.splitlines() if line.startswith("summary:"))
    assert "2 kills" in summary
    assert " 0 lost, 0 differ" in summary
    assert " 0 acknowledged" not in summary


def test_memory_script_reports_peaks_and_stalls() -> None:
    done = _run("memory.py", "--fragments", "1000", "--every", "0.2", "--cache-mb", "16")
    assert done.returncode == 0, done.stdout + done.stderr
    for phase in ("large stream stored", "16 misses, one key", "16 misses, 16 keys"):
        line = next(line for line in done.stdout.splitlines() if line.startswith(phase))
        assert " peak " in line and " MB" in line, line
    assert "--cache-mb 16" in done.stdout
    assert "over 1 s" in done.stdout
    assert "summary: ok" in done.stdout


def test_load_script_counts_busy_refusals_apart_from_failures(
    capsys: pytest.CaptureFixture[str],
) -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import load
    finally:
        sys.path.remove(str(ROOT / "bench"))
    run = load.Run(ids=[], steps={})
    run.tallies["post"].seconds += [0.01, 0.02, 0.03]
    run.tallies["post"].busy = 2
    assert load.report(run, 1.0) is True
    assert load.report(run, 1.0, strict=True) is False
    assert "refused, busy: 2 posts got 503 with Retry-After" in capsys.readouterr().out
    run.tallies["page"].server_errors = 1
    assert load.report(run, 1.0) is False


def test_proxy_script_reports_latency_throughput_and_memory() -> None:
    done = _run("proxy.py", "--chunks", "40", "--latency-runs", "1", "--streams", "2",
                "--burst", "200", "--rounds", "2", "--no-fail")  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "latency added by the proxy: p50 " in done.stdout
    assert "throughput proxy  2 at once: per stream min " in done.stdout
    assert "summary: added p95 " in done.stdout and "server RSS: " in done.stdout


def test_webtrace_script_runs_and_reports_every_goal() -> None:
    done = _run(
        "webtrace.py", "--chunks", "2000", "--steps", "5", "--early", "2", "--window", "1",
        "--no-fail",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    goals = (
        "upload via form until its page /",
        "jumps p95 full",
        "jumps p95 partial",
        "jumps p95, worst window / 20-chunk beside",
        "most RSS sampled during the jumps",
        "reopen after a restart",
        "restarted: p95 step",
    )
    for goal in goals:
        line = next(line for line in done.stdout.splitlines() if line.startswith(goal))
        assert " goal " in line, line


def test_webtrace_script_asks_the_long_stream_alone_when_told() -> None:
    done = _run(
        "webtrace.py", "--chunks", "2000", "--steps", "5", "--early", "2", "--window", "1",
        "--alone", "--no-restart", "--kinds", "partial", "--no-fail",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert any(line.startswith("jumps p95 partial / quiet small's, all") for line in lines)
    assert any(line.startswith("jumps p95, worst window / quiet small's") for line in lines)
    assert not any("beside" in line for line in lines if " goal " in line)


def test_webtrace_script_keeps_the_earlier_measure() -> None:
    done = _run(
        "webtrace.py", "--chunks", "2000", "--steps", "5", "--early", "2", "--window", "1",
        "--via", "api", "--interleaved", "--no-restart", "--input", "parallel", "--no-fail",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    for goal in ("upload via api until its page /", "interleaved: worst p95"):
        line = next(line for line in done.stdout.splitlines() if line.startswith(goal))
        assert " goal " in line, line


def test_side_by_side_script_reports_every_target_and_checks_bytes() -> None:
    done = _run("sidebyside.py", "--no-mitm", "--burst", "400", "--least", "0",
                "--concurrency", "1", "3", "--rounds", "2", "--chunks", "20",
                "--latency-runs", "1")  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    table = [line for line in done.stdout.splitlines() if line.startswith("| ")]
    rows = {line.split(" | ")[0]: line for line in table}
    assert "| target" in rows and "| direct" in rows
    streamviz = rows["| streamviz"].split(" | ")
    assert len(streamviz) == 10, (
        streamviz
    )  # CPU, loop's CPU, chunks/s at 1 and 3; latency, RSS, bytes
    assert float(streamviz[1]) >= 0 and float(streamviz[2]) > 0  # CPU us per chunk (in ticks)
    assert float(streamviz[2]) >= float(streamviz[4])  # the process's, the loop thread's
    assert len(streamviz[8].split()) == 2  # RSS after each of the two rounds
    assert streamviz[9] == "yes |"
