"""``perdure history``, ``show --at``, ``savepoint``, ``fork``, ``gc`` and ``delete`` as a
person meets them: one process per command, on each backend."""

from __future__ import annotations

import json
from pathlib import Path

from tests.apps import artifacts_app as app
from tests.conftest import cli_env, run_cli

APP = "tests.apps.artifacts_app"


def test_history_show_at_fork_gc_and_delete_from_the_command_line(
    db_url: str, tmp_path: Path
) -> None:
    env = cli_env(PERDURE_ARTIFACTS=str(tmp_path / "objects"))
    ledger = str(tmp_path / "ledger.txt")
    started = run_cli(
        db_url,
        "start",
        "pay",
        "--app",
        APP,
        "--input",
        json.dumps({"ledger": ledger}),
        "--thread",
        "conv",
        "--wait",
        "--json",
        env=env,
    )
    assert started.returncode == 0, started.stderr
    run_id = json.loads(started.stdout)["run_id"]

    shown = run_cli(db_url, "history", run_id, env=env)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0].split()[:2] == ["0", "(start)"]
    assert "charge" in lines[2] and "changed: note" in lines[2] and "savepoint: paid" in lines[2]

    at = run_cli(db_url, "show", run_id, "--at", "1", "--json", env=env)
    assert at.returncode == 0, at.stderr
    assert json.loads(at.stdout)["state"]["note"] == "plan 10"

    marked = run_cli(db_url, "savepoint", run_id, "planned", "--at", "1", "--as", "bob", env=env)
    assert marked.returncode == 0 and "at step 1 by bob" in marked.stdout

    forked = run_cli(db_url, "fork", run_id, "--savepoint", "paid", "--app", APP, env=env)
    assert forked.returncode == 0, forked.stderr
    fork_id = forked.stdout.split()[3]
    resumed = run_cli(db_url, "resume", fork_id, "--app", APP, env=env)
    assert resumed.returncode == 0, resumed.stderr
    assert [c.split()[0] for c in app.calls(ledger)] == ["charge", "notify", "notify"]
    fork_history = run_cli(db_url, "history", fork_id, "--json", env=env)
    assert json.loads(fork_history.stdout)["forked_from"]["source_run_id"] == run_id

    swept = run_cli(db_url, "gc", "--older-than", "0", "--orphan-grace", "0", "--json", env=env)
    assert swept.returncode == 0, swept.stderr
    # the original has savepoints that never expire; the fork (which began after "paid") has none
    assert json.loads(swept.stdout)["runs"] == 1
    assert run_cli(db_url, "show", fork_id, env=env).returncode == 1

    erased = run_cli(db_url, "delete", "--thread", "conv", "--as", "dpo", env=env)
    assert erased.returncode == 0, erased.stderr
    assert erased.stdout.startswith("erased thread conv: ") and "1 runs" in erased.stdout
    gone = run_cli(db_url, "show", run_id, env=env)
    assert gone.returncode == 1 and "run_not_found" in gone.stderr


def test_bad_history_input_is_one_line_and_exit_one(db_url: str, tmp_path: Path) -> None:
    env = cli_env(PERDURE_ARTIFACTS=str(tmp_path / "objects"))
    started = run_cli(
        db_url,
        "start",
        "pay",
        "--app",
        APP,
        "--input",
        json.dumps({"ledger": str(tmp_path / "l.txt")}),
        "--wait",
        "--json",
        env=env,
    )
    run_id = json.loads(started.stdout)["run_id"]
    for args in (
        ("show", run_id, "--at", "99"),
        ("show", run_id, "--at", "-1"),
        ("fork", run_id, "--app", APP),
        ("fork", run_id, "--app", APP, "--at", "1", "--patch-state", "[1]"),
        ("gc", "--older-than", "banana"),
        ("gc", "--keep", "nonsense"),
        ("gc", "--batch", "0"),
        ("delete",),
        ("delete", "--thread", "x\x01y", "--run", "r"),
        ("savepoint", run_id, "x" * 300),
    ):
        done = run_cli(db_url, *args, env=env)
        assert done.returncode == 1, (args, done.stdout, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1 and "error[" in done.stderr, args
        assert "Traceback" not in done.stderr


def test_a_bad_artifact_setting_is_one_line_and_exit_one(db_url: str) -> None:
    assert run_cli(db_url, "migrate").returncode == 0
    for extra in ({"PERDURE_ARTIFACTS": "ftp://nowhere/x"}, {"PERDURE_OFFLOAD_BYTES": "lots"}):
        done = run_cli(db_url, "gc", "--older-than", "0", env=cli_env(**extra))
        assert done.returncode == 1, (extra, done.stdout)
        assert done.stderr.startswith("error[invalid_config]") and "Traceback" not in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1


def test_gc_archive_and_restore_from_the_command_line(db_url: str, tmp_path: Path) -> None:
    env = cli_env(PERDURE_ARTIFACTS=str(tmp_path / "objects"))
    started = run_cli(db_url, "start", "big", "--app", APP, "--wait", "--json", env=env)
    assert started.returncode == 0, started.stderr
    run_id = json.loads(started.stdout)["run_id"]
    swept = run_cli(db_url, "gc", "--older-than", "0", "--orphan-grace", "0", "--archive", env=env)
    assert swept.returncode == 0 and "1 runs deleted" in swept.stdout, swept.stderr
    assert run_cli(db_url, "show", run_id, env=env).returncode == 1
    assert run_cli(db_url, "restore", "--list", env=env).stdout.split() == [run_id]
    back = run_cli(db_url, "restore", run_id, env=env)
    assert back.returncode == 0 and f"restored run {run_id} (SUCCEEDED, 2 steps)" in back.stdout
    shown = run_cli(db_url, "show", run_id, "--at", "1", "--json", env=env)
    assert len(json.loads(shown.stdout)["state"]["blob"]) == app.BIG_STATE
    again = run_cli(db_url, "restore", run_id, env=env)
    assert again.returncode == 1 and again.stderr.startswith("error[run_not_found]")


def test_history_shows_when_each_step_ran_how_long_and_its_messages_effects_and_tokens(
    db_url: str,
) -> None:
    app = "perdure.demos.agent"
    run_id = run_cli(db_url, "start", "research", "--app", app).stdout.split()[1]
    assert run_cli(db_url, "resume", run_id, "--app", app).returncode == 0
    lines = run_cli(db_url, "history", run_id).stdout.splitlines()
    plan = next(line for line in lines if "  plan " in line)
    assert " took " in plan and "effects 1" in plan
    assert "tokens 0" not in plan, "the model call's tokens are counted"
    steps = json.loads(run_cli(db_url, "history", run_id, "--json").stdout)["steps"]
    planned = next(s for s in steps if s["step"] == "plan")
    assert planned["effects"] == 1 and planned["tokens"] > 0 and planned["seconds"] >= 0
    assert sum(s["messages"] for s in steps) >= 1
