"""A side-effecting tool receives its effect's idempotency key and its reconciler finds the
call by it: three identical runs, each killed after the outbox sent its message and before the
outcome was recorded, send three messages (the outbox deduplicates nothing) and each run
records its own receipt."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from tests.conftest import cli_env, run_cli

APP = "tests.apps.mail_app"


def test_three_identical_runs_killed_after_sending_record_their_own_receipts(
    db_url: str, tmp_path: Path
) -> None:
    outbox = tmp_path / "outbox.db"
    runs = []
    for _ in range(3):
        started = run_cli(
            db_url, "start", "mail", "--app", APP, "--input", json.dumps({"outbox": str(outbox)})
        )
        assert started.returncode == 0, started.stderr
        run_id = started.stdout.split()[1]
        died = run_cli(
            db_url,
            "resume",
            run_id,
            "--app",
            APP,
            env=cli_env(PERDURE_CRASH_AT="after_call:tool.call_1"),
        )
        assert died.returncode == 75, died.stderr
        assert run_cli(db_url, "resume", run_id, "--app", APP).returncode == 0
        runs.append(run_id)
    with sqlite3.connect(outbox) as conn:
        sent = dict(conn.execute("SELECT key, id FROM sent").fetchall())
    assert len(sent) == 3, "each run sent once, and was not sent again after its crash"
    receipts = []
    for run_id in runs:
        shown = json.loads(run_cli(db_url, "show", run_id, "--json").stdout)
        assert shown["status"] == "SUCCEEDED"
        (effect,) = shown["effects"]
        receipt = json.loads(shown["result"]["receipt"])["message_id"]
        assert sent[effect["key"]] == receipt, "the receipt of this run's own message"
        receipts.append(receipt)
    assert len(set(receipts)) == 3
