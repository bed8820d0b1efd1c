"""A worker SIGKILLed while a parent's three children and one of its two parallel branches are in
their calls: after a new worker takes over, each child runs to completion once, each branch's
effect is confirmed once (the branch confirmed before the kill is not called again), and the
parent's combined result equals the no-crash reference. Then: the children of one parent are
executed by two worker processes, and `perdure show` / `perdure runs --parent` list them."""

from __future__ import annotations

import fcntl
import json
import signal
import subprocess
from collections import Counter
from pathlib import Path

from perdure.testing import FileClock
from tests.conftest import ROOT, cli_env, perdure_cmd, run_cli
from tests.crash.test_crash_resume import wait_for

APP = "tests.apps.fanout_app"


def ledger(folder: Path) -> list[list[str]]:
    path = folder / "ledger"
    return [line.split() for line in path.read_text().splitlines()] if path.exists() else []


def start(db_url: str, folder: Path, gated: bool) -> str:
    args = ["start", "supervisor", "--app", APP, "--input", json.dumps({"gated": gated})]
    out = run_cli(db_url, *args, env=cli_env(FANOUT_DIR=str(folder)))
    assert out.returncode == 0, out.stderr
    return out.stdout.split()[1]


def drain(db_url: str, folder: Path, concurrency: int = 8) -> None:
    done = subprocess.run(
        perdure_cmd(db_url, "worker", "--app", APP, "--until-idle", "--concurrency", "8"),
        env=cli_env(FANOUT_DIR=str(folder)),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def show(db_url: str, run_id: str) -> dict:  # type: ignore[type-arg]
    out = run_cli(db_url, "show", run_id, "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def test_a_sigkill_with_children_and_branches_in_flight_resumes_each_exactly_once(
    db_url: str, tmp_path: Path, shared_clock: FileClock
) -> None:
    reference_dir = tmp_path / "reference"
    reference_dir.mkdir()
    reference = start(db_url, reference_dir, gated=False)
    drain(db_url, reference_dir)
    expected = show(db_url, reference)
    assert expected["status"] == "SUCCEEDED", expected

    folder = tmp_path / "crash"
    folder.mkdir()
    gate = open(folder / "gate", "a")  # noqa: SIM115 - held until the gate opens
    fcntl.flock(gate, fcntl.LOCK_EX)
    run_id = start(db_url, folder, gated=True)
    worker = subprocess.Popen(
        perdure_cmd(db_url, "worker", "--app", APP, "--concurrency", "8", "--poll", "0.05"),
        env=cli_env(FANOUT_DIR=str(folder)),
        cwd=ROOT,
    )
    try:
        # in flight: the three children's searches and branch b; branch a is confirmed
        def in_flight() -> bool:
            rows = ledger(folder)
            started = {r[2] for r in rows if r[0] == "start"}
            return {"search:alpha", "search:beta", "search:gamma", "kb:b"} <= started and any(
                r[0] == "done" and r[2] == "kb:a" for r in rows
            )

        wait_for(in_flight, timeout=60)
    finally:
        worker.send_signal(signal.SIGKILL)
        assert worker.wait(timeout=10) == -signal.SIGKILL
    assert show(db_url, run_id)["status"] == "RUNNING"
    gate.close()  # the gate opens: a new worker takes the dead worker's runs over at once
    drain(db_url, folder)

    final = show(db_url, run_id)
    assert final["status"] == "SUCCEEDED", final
    assert final["result"] == expected["result"]
    made = Counter(r[2] for r in ledger(folder) if r[0] == "done")
    assert made == Counter(
        {"search:alpha": 1, "search:beta": 1, "search:gamma": 1, "kb:a": 1, "kb:b": 1}
    )
    assert len([r for r in ledger(folder) if r[0] == "start" and r[2] == "kb:a"]) == 1
    assert sorted(c["key"] for c in final["children"]) == ["alpha", "beta", "gamma"]
    assert {c["status"] for c in final["children"]} == {"SUCCEEDED"}
    branches = {b["branch"]: b["status"] for b in final["branches"]}
    assert branches == {"a": "confirmed", "b": "confirmed"}
    for child in final["children"]:
        effects = show(db_url, child["run_id"])["effects"]
        assert [e["status"] for e in effects] == ["confirmed"]

    listed = run_cli(db_url, "runs", "--parent", run_id, "--json")
    assert listed.returncode == 0, listed.stderr
    assert [r["child_key"] for r in json.loads(listed.stdout)] == ["alpha", "beta", "gamma"]
    text = run_cli(db_url, "show", run_id).stdout
    assert "children (3):" in text and "branches (2):" in text


def test_the_children_of_one_parent_are_executed_by_two_worker_processes(
    db_url: str, tmp_path: Path, shared_clock: FileClock
) -> None:
    gate = open(tmp_path / "gate", "a")  # noqa: SIM115 - held until both workers hold a child
    fcntl.flock(gate, fcntl.LOCK_EX)
    run_id = start(db_url, tmp_path, gated=True)
    env = cli_env(FANOUT_DIR=str(tmp_path))
    cmd = perdure_cmd(db_url, "worker", "--app", APP, "--concurrency", "2", "--poll", "0.05")
    workers = [subprocess.Popen(cmd, env=env, cwd=ROOT) for _ in range(2)]
    try:
        # each worker holds two runs at most, so the parent and three children need both
        def spread() -> bool:
            started = [r for r in ledger(tmp_path) if r[0] == "start" and r[2].startswith("s")]
            return len(started) == 3

        wait_for(spread, timeout=60)
        gate.close()
        wait_for(lambda: show(db_url, run_id)["status"] == "SUCCEEDED", timeout=60)
    finally:
        for w in workers:
            w.send_signal(signal.SIGTERM)
        for w in workers:
            w.wait(timeout=30)
    pids = {r[3] for r in ledger(tmp_path) if r[0] == "done" and r[2].startswith("search:")}
    worker_pids = {str(w.pid) for w in workers}
    assert pids <= worker_pids and len(pids) == 2, (pids, worker_pids)
