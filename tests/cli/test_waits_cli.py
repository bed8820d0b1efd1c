"""Waiting runs through the CLI, each command in its own process."""

from __future__ import annotations

import json

from tests.conftest import run_cli

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
