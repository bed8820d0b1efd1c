"""The pre-deploy check and quarantine handling through the CLI, one process per command."""

from __future__ import annotations

import json

from tests.conftest import run_cli


def test_check_before_a_deploy_reports_and_fails_on_quarantine(db_url: str) -> None:
    a = run_cli(
        db_url,
        "start",
        "profile",
        "--app",
        "tests.apps.versions_v1",
        "--input",
        '{"name": "Ada Lovelace"}',
    ).stdout.split()[1]
    b = run_cli(
        db_url,
        "start",
        "profile",
        "--app",
        "tests.apps.versions_v1",
        "--input",
        '{"name": "Kurt Goedel"}',
        "--release",
        "model=dead-model",
    ).stdout.split()[1]
    ok = run_cli(db_url, "check", "--app", "tests.apps.versions_v1")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "2 live runs: 2 run as they are, 0 migrate, 0 would be quarantined" in ok.stdout

    blocked = run_cli(db_url, "check", "--app", "tests.apps.versions_v3")
    assert blocked.returncode == 1
    rows = {
        r["run_id"]: r
        for r in json.loads(
            run_cli(db_url, "check", "--app", "tests.apps.versions_v3", "--json").stdout
        )
    }
    assert rows[a]["verdict"] == "migrate"
    assert (rows[b]["verdict"], rows[b]["reason"]) == ("quarantine", "retired_dependency")
    unchanged = json.loads(run_cli(db_url, "show", a, "--json").stdout)
    assert unchanged["state_version"] == 0, "the check wrote nothing"

    worker = run_cli(db_url, "worker", "--app", "tests.apps.versions_v3", "--until-idle")
    assert worker.returncode == 0, worker.stderr
    listed = run_cli(db_url, "runs", "--quarantined")
    assert b in listed.stdout and "retired_dependency" in listed.stdout
    shown = run_cli(db_url, "show", b)
    assert "why        retired_dependency" in shown.stdout
    failed = run_cli(db_url, "fail", b, "--reason", "model retired", "--as", "ops")
    assert "FAILED" in failed.stdout
