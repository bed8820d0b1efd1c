"""Attempts counted across crashes: a step that a killed process was running is run again by
the process that takes the run over, as attempt 2 (then 3), in the worker's logs, in ``show``
while it waits, and in ``history`` once it committed."""

from __future__ import annotations

import json
from pathlib import Path

from perdure.testing import FileClock
from tests.conftest import cli_env, run_cli

APP = "tests.apps.counting"


def test_a_step_run_again_after_each_crash_reports_its_attempt(
    db_url: str, tmp_path: Path, shared_clock: FileClock
) -> None:
    env = cli_env(COUNTING_LOG=str(tmp_path / "entries.log"))
    run_id = run_cli(db_url, "start", "counting", "--app", APP).stdout.split()[1]
    for _ in range(2):  # s5 runs and its process dies before the boundary, twice
        crash = {**env, "PERDURE_CRASH_AT": "before_commit:s5"}
        crashed = run_cli(db_url, "resume", run_id, "--app", APP, env=crash)
        assert crashed.returncode == 75, crashed.stderr
    shown = run_cli(db_url, "show", run_id)
    assert "next step  s5 (attempt 2: 1 cut short by a crash)" in shown.stdout, shown.stdout
    shared_clock.advance(3600)  # the dead process's lease expires: any worker takes the run over
    worker = run_cli(
        db_url,
        "worker",
        "--app",
        APP,
        "--until-idle",
        "--log-format",
        "json",
        "--log-level",
        "info",
        env=env,
    )
    assert worker.returncode == 0, worker.stderr
    lines = [json.loads(line) for line in worker.stderr.splitlines() if line.startswith("{")]
    attempts = {r["step"]: r["attempt"] for r in lines if r.get("step") and "attempt" in r}
    assert attempts["s5"] == 3 and attempts["s6"] == 1, attempts
    history = run_cli(db_url, "history", run_id, "--json")
    steps = {s["step"]: s["attempt"] for s in json.loads(history.stdout)["steps"] if s["step"]}
    assert steps["s5"] == 3 and steps["s4"] == 1 and steps["s6"] == 1, steps
    text = run_cli(db_url, "history", run_id).stdout
    (line,) = [line for line in text.splitlines() if line.split()[1:2] == ["s5"]]
    assert "took 0.000s  attempt 3  messages" in line, line
