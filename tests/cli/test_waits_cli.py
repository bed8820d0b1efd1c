"""Waiting runs through the CLI, each command in its own process."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from datetime import timedelta
from pathlib import Path

from perdure.testing import FileClock
from tests.conftest import ROOT, cli_env, perdure_cmd, run_cli

APP = "tests.apps.waits_app"


def test_a_signal_through_the_cli_wakes_the_run_once(db_url: str) -> None:
    run_id = run_cli(db_url, "start", "order", "--app", APP).stdout.split()[1]
    waiting = run_cli(db_url, "resume", run_id, "--app", APP)
    assert "WAITING_EXTERNAL" in waiting.stdout
    early = run_cli(db_url, "resume", run_id, "--app", APP)
    assert early.returncode == 1 and "perdure signal RUN NAME" in early.stderr
    sent = run_cli(db_url, "signal", run_id, "paid", "--payload", '{"psp": "tx-9"}', "--id", "tx-9")
    assert "continues" in sent.stdout
    again = run_cli(db_url, "signal", run_id, "paid", "--payload", '{"psp": "x"}', "--id", "tx-9")
    assert "already delivered" in again.stdout
    worker = run_cli(db_url, "worker", "--app", APP, "--until-idle")
    assert worker.returncode == 0
    final = json.loads(run_cli(db_url, "show", run_id, "--json").stdout)
    assert final["status"] == "SUCCEEDED"
    assert final["result"] == {"shipped": 1, "payment": {"psp": "tx-9"}}


def test_the_refund_story_pays_once_after_approval(db_url: str) -> None:
    story = run_cli(db_url, "demo", "refund")
    assert story.returncode == 0, story.stdout + story.stderr
    assert "error[not_authorized]" in story.stdout
    assert "refunds paid     1" in story.stdout
    assert "emails sent      1" in story.stdout


def test_a_running_worker_fires_a_timer_when_the_shared_clock_reaches_it(
    db_url: str, shared_clock: FileClock, tmp_path: Path
) -> None:
    start = shared_clock.now()
    run_id = run_cli(db_url, "start", "nap", "--app", APP).stdout.split()[1]
    out = (tmp_path / "worker.out").open("w")
    worker = subprocess.Popen(
        perdure_cmd(db_url, "worker", "--app", APP, "--poll", "0.05"),
        env=cli_env(),
        cwd=ROOT,
        stdout=out,
        stderr=subprocess.STDOUT,
        text=True,
    )

    def status() -> str:
        shown: dict[str, str] = json.loads(run_cli(db_url, "show", run_id, "--json").stdout)
        return shown["status"]

    def wait_until(wanted: str) -> None:
        deadline = time.monotonic() + 60
        while status() != wanted:
            assert worker.poll() is None, (tmp_path / "worker.out").read_text()
            assert time.monotonic() < deadline, f"the run never became {wanted}"
            time.sleep(0.05)

    try:
        wait_until("WAITING_EXTERNAL")
        shared_clock.advance(3599)
        assert status() == "WAITING_EXTERNAL", "one second early, the timer has not fired"
        shared_clock.advance(1)
        wait_until("SUCCEEDED")
    finally:
        worker.send_signal(signal.SIGTERM)
        code = worker.wait(timeout=30)
        out.close()
    assert code == 0, (tmp_path / "worker.out").read_text()
    final = json.loads(run_cli(db_url, "show", run_id, "--json").stdout)
    assert final["result"] == {"woke_at": (start + timedelta(hours=1)).isoformat()}
