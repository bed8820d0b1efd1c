"""``perdure worker --respawn``: a worker process killed mid-step is replaced by the standby the
warm supervisor forked beside it, which takes the dead one's run over at once (its lease is an
hour: only the dead-owner takeover lets the test finish), resuming from the last committed step.
The standby claims nothing and is not a worker of the database until it is made active."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

from tests.conftest import ROOT, Gates, cli_env, entries, perdure_cmd, read_until, run_cli
from tests.waypoints import Waypoint

APP = "tests.apps.respawn_app"


def test_a_killed_worker_is_replaced_by_the_standby_and_its_run_resumes_at_once(
    db_url: str, tmp_path: Path
) -> None:
    log, marker = tmp_path / "entries.log", tmp_path / "killed-once"
    gates = Gates(tmp_path / "gates", "fragile")
    env = {**cli_env(), "COUNTING_LOG": str(log), "RESPAWN_MARKER": str(marker)}
    env.update(gates.env("fragile"), RESPAWN_WAYPOINT=str(tmp_path / "at-fragile"))
    at_fragile = Waypoint(tmp_path / "at-fragile")
    started = run_cli(db_url, "start", "respawn", "--app", APP, env=env)
    assert started.returncode == 0, started.stderr
    run_id = started.stdout.split()[1]
    proc = subprocess.Popen(
        perdure_cmd(db_url, "worker", "--app", APP, "--respawn", "--lease", "3600"),
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        at_fragile.wait(proc)  # the worker holds the run, at its step
        lines = read_until(proc, "standby worker process", "worker ")
        standby = next(line.split()[3] for line in lines if line.startswith("standby "))
        first = [line.split()[1] for line in lines if line.startswith("worker ")]
        assert len(first) == 1 and not first[0].endswith(f":{standby}")
        listed = run_cli(db_url, "workers", "--json")
        assert listed.stdout.count('"owner"') == 1, "the standby is no worker of the database yet"
        assert first[0] in listed.stdout
    finally:
        gates.open_all()  # the worker goes on, and kills itself
        at_fragile.close()
    lines = read_until(proc, "was killed by SIGKILL; the standby takes over", f"run {run_id} ")
    assert marker.exists()
    workers = [line.split()[1] for line in lines if line.startswith("worker ") and " x1 " in line]
    assert len(workers) == 1 and workers[0].endswith(f":{standby}"), "the standby took over"
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "worker stopped after" in out
    assert entries(log, run_id) == {"fragile": 2, "finish": 1}
    shown = run_cli(db_url, "show", run_id, "--json")
    assert '"status":"SUCCEEDED"' in shown.stdout.replace(" ", ""), shown.stdout


def test_a_worker_that_fails_before_it_is_ready_is_not_started_again(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'not-a-dir' / 'x' / 'perdure.db'}"
    (tmp_path / "not-a-dir").write_text("a file where a folder should be")
    out = run_cli(url, "worker", "--app", APP, "--respawn")
    assert out.returncode == 1, out
    assert "error[" in out.stderr and "Traceback" not in out.stderr, out.stderr
    assert "before it was ready; not started again" in out.stdout
    assert out.stdout.count("before it was ready") == 1
