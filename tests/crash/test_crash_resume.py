"""Real processes killed mid-run (SIGKILL, os._exit at crash points), resumed by new ones."""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import ROOT, Gates, cli_env, entries, perdure_cmd, run_cli

APP = "tests.apps.counting"
ALL = [f"s{i}" for i in range(1, 11)]
TOTAL = sum(range(1, 11))


def start_run(db_url: str, durability: str = "sync") -> str:
    out = run_cli(db_url, "start", "counting", "--app", APP, "--durability", durability)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()[1]


def show(db_url: str, run_id: str) -> dict:  # type: ignore[type-arg]
    out = run_cli(db_url, "show", run_id, "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def wait_for(predicate, timeout: float = 20.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError("condition not reached in time")


def once_each(names: list[str]) -> Counter[str]:
    return Counter(names)


def test_sigkill_mid_step_resumes_at_that_step_and_never_reruns_committed_ones(
    db_url: str, tmp_path: Path
) -> None:
    log = tmp_path / "entries.log"
    run_id = start_run(db_url)
    gates = Gates(tmp_path / "gates", "s5")  # never opened: s5 waits until the kill
    env = cli_env(COUNTING_LOG=str(log), **gates.env("s5"))
    proc = subprocess.Popen(perdure_cmd(db_url, "resume", run_id, "--app", APP), env=env, cwd=ROOT)
    wait_for(lambda: entries(log)["s5"] == 1)
    proc.send_signal(signal.SIGKILL)
    assert proc.wait(timeout=10) == -signal.SIGKILL

    after_kill = show(db_url, run_id)
    assert after_kill["status"] == "RUNNING"
    assert after_kill["next_step"] == "s5"
    assert after_kill["completed_steps"] == ALL[:4]

    out = run_cli(db_url, "resume", run_id, "--app", APP, env=cli_env(COUNTING_LOG=str(log)))
    assert out.returncode == 0, out.stderr
    final = show(db_url, run_id)
    assert final["status"] == "SUCCEEDED"
    assert final["result"] == {"total": TOTAL}
    assert final["completed_steps"] == ALL
    assert entries(log) == once_each(ALL) + Counter({"s5": 1})


@pytest.mark.parametrize(
    ("point", "reentered"),
    [("before_commit:s5", {"s5"}), ("after_commit:s5", set())],
)
def test_a_crash_on_either_side_of_a_commit_resumes_at_the_right_step(
    db_url: str, tmp_path: Path, point: str, reentered: set[str]
) -> None:
    log = tmp_path / "entries.log"
    run_id = start_run(db_url)
    crashed = run_cli(
        db_url,
        "resume",
        run_id,
        "--app",
        APP,
        env=cli_env(COUNTING_LOG=str(log), PERDURE_CRASH_AT=point),
    )
    assert crashed.returncode == 75
    assert f"CRASH {point}" in crashed.stderr
    resumed = run_cli(db_url, "resume", run_id, "--app", APP, env=cli_env(COUNTING_LOG=str(log)))
    assert resumed.returncode == 0, resumed.stderr
    assert show(db_url, run_id)["result"] == {"total": TOTAL}
    assert entries(log) == once_each(ALL) + Counter(reentered)


@pytest.mark.parametrize("mode", ["sync", "async", "exit"])
def test_each_durability_mode_loses_at_most_its_rpo(db_url: str, tmp_path: Path, mode: str) -> None:
    log = tmp_path / "entries.log"
    run_id = start_run(db_url, mode)
    crashed = run_cli(
        db_url,
        "resume",
        run_id,
        "--app",
        APP,
        env=cli_env(COUNTING_LOG=str(log), PERDURE_CRASH_AT="after_commit:s6"),
    )
    assert crashed.returncode == 75
    durable = show(db_url, run_id)["completed_steps"]
    assert durable == ALL[: len(durable)], "what survived is a prefix of the run"
    if mode == "sync":
        assert durable == ALL[:6], "sync loses nothing a step completed"
    elif mode == "exit":
        assert durable == [], "exit loses the whole segment"
    else:
        assert len(durable) <= 6
    resumed = run_cli(db_url, "resume", run_id, "--app", APP, env=cli_env(COUNTING_LOG=str(log)))
    assert resumed.returncode == 0, resumed.stderr
    final = show(db_url, run_id)
    assert (final["status"], final["result"], final["completed_steps"]) == (
        "SUCCEEDED",
        {"total": TOTAL},
        ALL,
    )
    lost = ALL[len(durable) : 6]
    assert entries(log) == once_each(ALL) + Counter(lost), "exactly the lost steps ran again"


def test_sigterm_finishes_the_current_step_and_releases_the_lease(
    db_url: str, tmp_path: Path
) -> None:
    log = tmp_path / "entries.log"
    run_id = start_run(db_url)
    gates = Gates(tmp_path / "gates", "s3")
    env = cli_env(COUNTING_LOG=str(log), **gates.env("s3"))
    proc = subprocess.Popen(
        perdure_cmd(db_url, "worker", "--app", APP, "--poll", "0.05"),
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(x) for x in proc.stdout or ()], daemon=True)
    reader.start()
    wait_for(lambda: entries(log)["s3"] == 1)  # s3 is running and held at its gate
    proc.send_signal(signal.SIGTERM)
    seen = []
    while not any(line.startswith("draining") for line in seen):
        seen.append(lines.get(timeout=30))
    gates.open("s3")  # the drain was requested while s3 ran: now let it finish
    assert proc.wait(timeout=60) == 0
    reader.join(timeout=10)
    seen += list(lines.queue)
    assert any("released" in line for line in seen), seen
    stopped = show(db_url, run_id)
    assert stopped["completed_steps"] == ALL[:3], "the running step finished and committed"
    assert (stopped["status"], stopped["next_step"], stopped["owner"]) == ("RUNNING", "s4", None)
    assert entries(log) == once_each(ALL[:3])


def test_two_worker_processes_share_runs_and_advance_each_exactly_once(
    db_url: str, tmp_path: Path
) -> None:
    log = tmp_path / "entries.log"
    run_ids = [start_run(db_url) for _ in range(8)]
    env = cli_env(COUNTING_LOG=str(log))
    procs = [
        subprocess.Popen(
            perdure_cmd(db_url, "worker", "--app", APP, "--until-idle"),
            env=env,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
        )
        for _ in range(2)
    ]
    assert [p.wait(timeout=60) for p in procs] == [0, 0]
    for run_id in run_ids:
        final = show(db_url, run_id)
        assert final["status"] == "SUCCEEDED"
        assert final["completed_steps"] == ALL
        assert entries(log, run_id) == once_each(ALL)
