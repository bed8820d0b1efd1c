"""CLI behaviour a person meets: clear one-line errors, listing, showing, cancelling."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perdure.store import migrate
from tests.conftest import run_cli

APP = "tests.apps.counting"


def test_an_unknown_run_is_one_line_with_a_fix(db_url: str) -> None:
    assert run_cli(db_url, "migrate").returncode == 0  # reads need a database
    out = run_cli(db_url, "show", "no-such-run")
    assert out.returncode == 1
    assert out.stderr.strip().count("\n") == 0
    assert out.stderr.startswith("error[run_not_found]:")
    assert "fix:" in out.stderr


def test_bad_input_json_names_the_option(db_url: str) -> None:
    out = run_cli(db_url, "start", "counting", "--app", APP, "--input", "{nope")
    assert out.returncode == 1
    assert "error[invalid_input]: --input is not valid JSON" in out.stderr
    assert json.loads(run_cli(db_url, "runs", "--json").stdout) == [], "nothing was created"


def test_a_missing_app_says_how_to_load_one(db_url: str) -> None:
    out = run_cli(db_url, "start", "counting")
    assert out.returncode == 1
    assert "error[invalid_config]: no workflows are loaded" in out.stderr
    assert "--app MODULE" in out.stderr


def test_an_unknown_status_filter_lists_the_valid_ones(db_url: str) -> None:
    assert run_cli(db_url, "migrate").returncode == 0  # reads need a database
    out = run_cli(db_url, "runs", "--status", "DONE")
    assert out.returncode == 1
    assert "SUCCEEDED" in out.stderr


def test_an_unreachable_postgres_url_is_one_line_with_a_fix() -> None:
    out = run_cli("postgresql://perdure:s3cret@127.0.0.1:1/perdure", "runs")
    assert out.returncode == 1
    assert out.stderr.startswith("error[store_error]: cannot connect to PostgreSQL at 127.0.0.1:1")
    assert out.stderr.strip().count("\n") == 0
    assert "fix: check that PostgreSQL is running" in out.stderr
    assert "s3cret" not in out.stderr


def test_start_runs_show_and_cancel(db_url: str) -> None:
    started = run_cli(
        db_url,
        "start",
        "counting",
        "--app",
        APP,
        "--idempotency-key",
        "k1",
        "--release",
        "code=abc123",
        "--release",
        "model=fake-1",
    )
    assert started.returncode == 0, started.stderr
    run_id = started.stdout.split()[1]
    again = run_cli(db_url, "start", "counting", "--app", APP, "--idempotency-key", "k1")
    assert again.stdout.split()[1] == run_id

    listed = run_cli(db_url, "runs", "--status", "pending")
    assert run_id in listed.stdout
    shown = json.loads(run_cli(db_url, "show", run_id, "--json").stdout)
    assert shown["release"]["code"] == "abc123"
    assert shown["release"]["model"] == "fake-1"
    assert shown["next_step"] == "s1"

    cancelled = run_cli(db_url, "cancel", run_id, "--reason", "test")
    assert cancelled.returncode == 0
    assert "CANCELLED" in cancelled.stdout
    assert "already ended CANCELLED" in run_cli(db_url, "cancel", run_id).stdout
    resumed = run_cli(db_url, "resume", run_id, "--app", APP)
    assert "is finished (CANCELLED)" in resumed.stdout


def test_migrate_reports_the_schema_version(db_url: str) -> None:
    known = migrate.discover("sqlite")
    first = run_cli(db_url, "migrate")
    assert "applied " + ", ".join(f"{m.version:04d}_{m.name}" for m in known) in first.stdout
    second = run_cli(db_url, "migrate")
    assert "schema is up to date" in second.stdout
    assert f"schema version {known[-1].version}" in second.stdout


def test_workers_lists_a_live_worker_and_its_drain(db_url: str) -> None:
    import signal
    import subprocess
    import time

    from tests.conftest import ROOT, cli_env, perdure_cmd

    proc = subprocess.Popen(
        perdure_cmd(db_url, "worker", "--app", APP, "--concurrency", "3", "--poll", "0.05"),
        env=cli_env(),
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        live: list[dict[str, object]] = []
        while time.monotonic() < deadline and not live:
            out = run_cli(db_url, "workers", "--json")
            live = [w for w in json.loads(out.stdout or "[]") if w["pid"] == proc.pid]
            time.sleep(0.1)
        assert live and live[0]["concurrency"] == 3 and live[0]["stopped_at"] is None
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    (gone,) = [
        w for w in json.loads(run_cli(db_url, "workers", "--json").stdout) if w["pid"] == proc.pid
    ]
    assert gone["stopped_at"] is not None
    assert "stopped" in run_cli(db_url, "workers").stdout


@pytest.mark.parametrize(
    "command",
    [
        ["runs"],
        ["show", "r1"],
        ["effects"],
        ["history", "r1"],
        ["thread", "show", "t1"],
        ["stream", "m1"],
        ["watch", "r1"],
        ["approvals"],
        ["workers"],
    ],
)
def test_a_read_on_a_mistyped_sqlite_path_says_so_and_creates_nothing(
    tmp_path: Path, command: list[str]
) -> None:
    missing = tmp_path / "typo" / "x.db"
    done = run_cli(f"sqlite:///{missing}", *command)
    assert done.returncode == 1
    (line,) = done.stderr.strip().splitlines()
    assert (
        line.startswith("error[store_unavailable]: no database at ") and "perdure migrate" in line
    )
    assert not missing.exists() and not missing.parent.exists()


def test_workflows_lists_what_an_app_declares(db_url: str) -> None:
    listed = run_cli(db_url, "workflows", "--app", "tests.apps.cancel_app")
    assert listed.returncode == 0, listed.stderr
    assert "booking  version 1  state schema 1  start book" in listed.stdout
    assert "  book -> confirm" in listed.stdout and "compensators: unbook" in listed.stdout
    shown = json.loads(run_cli(db_url, "workflows", "--app", APP, "--json").stdout)
    (counting,) = shown
    assert counting["name"] == "counting" and counting["start"] == "s1"
    assert counting["steps"][0] == {"name": "s1", "next": ["s2"], "retry": None}


def test_an_app_that_needs_a_missing_extra_names_the_extra(db_url: str) -> None:
    out = run_cli(db_url, "workflows", "--app", "tests.apps.needs_extra_app")
    assert out.returncode == 1
    assert "error[invalid_config]: app module 'tests.apps.needs_extra_app' needs anthropic" in (
        out.stderr
    )
    assert "pip install 'perdure[anthropic]'" in out.stderr


def test_show_says_when_and_why_a_waiting_retry_runs(db_url: str) -> None:
    app = "tests.apps.server_app"
    run_id = run_cli(db_url, "start", "flaky", "--app", app).stdout.split()[1]
    run_cli(db_url, "resume", run_id, "--app", app)  # the first attempt fails and sleeps
    shown = run_cli(db_url, "show", run_id)
    assert shown.returncode == 0, shown.stderr
    assert "then runs wobble again" in shown.stdout
    assert "because the service is warming up: TransientError" in shown.stdout
    assert "(failed attempts so far: 1)" in shown.stdout


def test_start_wait_on_a_failing_run_says_why(db_url: str) -> None:
    out = run_cli(db_url, "start", "charge", "--app", "tests.apps.server_app", "--wait")
    assert out.returncode == 3, out.stderr  # the run needs a person
    assert "NEEDS_ATTENTION" in out.stdout
    assert "  because ambiguous_effect at step pay" in out.stdout


def test_the_worker_prints_each_run_s_final_status(db_url: str) -> None:
    app = "tests.apps.server_app"
    ok = run_cli(db_url, "start", "plain", "--app", app).stdout.split()[1]
    bad = run_cli(db_url, "start", "charge", "--app", app).stdout.split()[1]
    worker = run_cli(db_url, "worker", "--app", app, "--until-idle")
    assert worker.returncode == 0, worker.stderr
    assert f"run {ok} ended SUCCEEDED" in worker.stdout, worker.stdout
    assert f"run {bad} needs_attention NEEDS_ATTENTION" in worker.stdout, worker.stdout
