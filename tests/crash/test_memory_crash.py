"""Memory commits with its step: a process killed just before a boundary leaves neither the
step's state nor its memory (nor the vectors of an indexed item); the step run again in a new
process writes the memory once."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from tests.apps.memory_app import USER
from tests.conftest import cli_env, entries, run_cli

APP = "tests.apps.memory_app"


def test_a_kill_before_the_commit_writes_no_memory_and_the_resumed_step_writes_it_once(
    db_url: str, tmp_path: Path
) -> None:
    log = tmp_path / "entries.log"
    started = run_cli(db_url, "start", "remember", "--app", APP)
    assert started.returncode == 0, started.stderr
    run_id = started.stdout.split()[1]
    crashed = run_cli(
        db_url,
        "resume",
        run_id,
        "--app",
        APP,
        env=cli_env(COUNTING_LOG=str(log), PERDURE_CRASH_AT="before_commit:note"),
    )
    assert crashed.returncode == 75, crashed.stderr
    assert "CRASH before_commit:note" in crashed.stderr
    missing = run_cli(db_url, "memory", "show", "/".join(USER), "visits")
    assert missing.returncode == 1 and "error[memory_not_found]" in missing.stderr
    listed = run_cli(db_url, "memory", "list", "user", "--json")
    assert (listed.returncode, listed.stdout.strip()) == (0, ""), "nor the indexed fact"
    shown = run_cli(db_url, "show", run_id, "--json")
    assert json.loads(shown.stdout)["completed_steps"] == [], "neither state nor memory"

    resumed = run_cli(db_url, "resume", run_id, "--app", APP, env=cli_env(COUNTING_LOG=str(log)))
    assert resumed.returncode == 0, resumed.stderr
    shown = run_cli(db_url, "show", run_id, "--json")
    assert json.loads(shown.stdout)["result"] == {
        "state": 1,
        "memory": 1,
        "version": 1,
        "scored": ["fact"],
    }
    assert entries(log) == Counter({"note": 2})
    item = run_cli(db_url, "memory", "show", "/".join(USER), "visits", "--json")
    assert json.loads(item.stdout)["version"] == 1, "written once"
