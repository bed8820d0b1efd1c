"""A SIGKILLed worker is shown dead at once by ``perdure workers`` and a live worker on the same
host takes its runs over without waiting for their leases: the shared test clock stands still
the whole time, so only the dead process's pid can let the lease go."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

from perdure.testing import FileClock
from tests.conftest import ROOT, Gates, cli_env, entries, perdure_cmd, run_cli
from tests.crash.test_crash_resume import ALL, APP, TOTAL, show, start_run, wait_for


def workers(db_url: str) -> dict[int, str]:
    out = run_cli(db_url, "workers", "--json")
    assert out.returncode == 0, out.stderr
    return {w["pid"]: w["state"] for w in json.loads(out.stdout)}


def test_a_sigkilled_worker_is_shown_dead_and_its_runs_are_taken_over_at_once(
    db_url: str, tmp_path: Path, shared_clock: FileClock
) -> None:
    log = tmp_path / "entries.log"
    started = shared_clock.now()
    run_id = start_run(db_url)
    gates = Gates(tmp_path / "gates", "s4")
    env = cli_env(COUNTING_LOG=str(log), **gates.env("s4"))
    first = subprocess.Popen(
        perdure_cmd(db_url, "worker", "--app", APP, "--poll", "0.05"), env=env, cwd=ROOT
    )
    wait_for(lambda: entries(log)["s4"] == 1)  # s4 runs, held at its gate, lease live
    assert workers(db_url).get(first.pid) == "live"
    first.send_signal(signal.SIGKILL)
    assert first.wait(timeout=10) == -signal.SIGKILL
    assert workers(db_url)[first.pid] == "dead"
    assert show(db_url, run_id)["owner"] is not None, "the dead worker's lease still looks live"

    gates.open("s4")
    second = subprocess.run(
        perdure_cmd(db_url, "worker", "--app", APP, "--until-idle"),
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert second.returncode == 0, second.stderr
    final = show(db_url, run_id)
    assert (final["status"], final["result"]) == ("SUCCEEDED", {"total": TOTAL})
    assert final["completed_steps"] == ALL
    assert entries(log, run_id)["s4"] == 2 and entries(log, run_id)["s5"] == 1
    assert shared_clock.now() == started, "the lease never expired: time stood still"
