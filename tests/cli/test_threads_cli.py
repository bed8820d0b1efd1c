"""``perdure thread``, ``perdure start --policy`` and ``perdure stream`` as a person meets them,
one process per command, on each backend."""

from __future__ import annotations

import json

from tests.conftest import run_cli

APP = "tests.apps.streams_app"


def test_a_busy_thread_queues_refuses_and_shows_its_runs(db_url: str) -> None:
    first = run_cli(db_url, "start", "turn", "--app", APP, "--thread", "t1", "--json")
    assert first.returncode == 0, first.stderr
    second = run_cli(db_url, "start", "turn", "--app", APP, "--thread", "t1", "--json")
    assert second.returncode == 0, second.stderr
    ids = [json.loads(out.stdout)["run_id"] for out in (first, second)]

    refused = run_cli(db_url, "start", "turn", "--app", APP, "--thread", "t1", "--policy", "reject")
    assert refused.returncode == 1
    assert refused.stderr.startswith("error[thread_busy]: thread t1 of tenant default is busy")
    assert len(refused.stderr.strip().splitlines()) == 1

    shown = run_cli(db_url, "thread", "show", "t1", "--json")
    assert json.loads(shown.stdout) == {
        "thread_id": "t1",
        "policy": "enqueue",
        "active": ids[0],
        "queued": [ids[1]],
        "inbox": 0,
    }
    said = run_cli(db_url, "thread", "say", "t1", "one more thing")
    assert said.stdout.strip() == "message queued on thread t1"
    busy = run_cli(db_url, "resume", ids[1], "--app", APP)
    assert busy.returncode == 1 and f"waits for run {ids[0]}" in busy.stderr

    policy = run_cli(db_url, "thread", "policy", "t1", "reject")
    assert "policy reject" in policy.stdout
    bad = run_cli(db_url, "thread", "policy", "t1", "sometimes")
    assert bad.returncode == 1 and bad.stderr.startswith("error[invalid_input]")


def test_stream_refuses_an_unknown_message_and_bad_input_in_one_line(
    db_url: str,
) -> None:
    assert run_cli(db_url, "migrate").returncode == 0  # reads need a database
    unknown = run_cli(db_url, "stream", "no-such-message")
    assert (unknown.returncode, unknown.stdout) == (1, "")
    assert unknown.stderr.startswith("error[") and len(unknown.stderr.splitlines()) == 1
    bad = run_cli(db_url, "stream", "m", "--after", "-3")
    assert bad.returncode == 1 and bad.stderr.startswith("error[invalid_input]")
