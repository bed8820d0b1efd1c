"""``perdure worker --respawn``: a worker process killed mid-step is forked again from the warm
supervisor, and the new one takes the dead one's run over at once (its lease is an hour: only
the dead-owner takeover lets the test finish), resuming from the last committed step."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

from tests.conftest import ROOT, cli_env, entries, perdure_cmd, read_until, run_cli

APP = "tests.apps.respawn_app"


def test_a_killed_worker_is_forked_again_and_its_run_resumes_at_once(
    db_url: str, tmp_path: Path
) -> None:
    log, marker = tmp_path / "entries.log", tmp_path / "killed-once"
    env = {**cli_env(), "COUNTING_LOG": str(log), "RESPAWN_MARKER": str(marker)}
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
    lines = read_until(proc, "was killed by SIGKILL; starting another", f"run {run_id} ")
    assert marker.exists()
    workers = [line.split()[1] for line in lines if line.startswith("worker ") and " x1 " in line]
    assert len(workers) == 2 and workers[0] != workers[1], "a second worker process took over"
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
