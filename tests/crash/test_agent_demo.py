"""``perdure demo agent`` end to end through the CLI in separate processes: killed mid-stream,
then after its email; one email, no model call paid twice, the saving printed."""

from __future__ import annotations

import json

from tests.conftest import run_cli


def test_the_agent_is_killed_twice_sends_one_email_and_pays_no_call_twice(db_url: str) -> None:
    first = run_cli(db_url, "demo", "agent", "start", "--crash-mid-stream")
    assert first.returncode == 75, first.stdout + first.stderr
    assert "CRASH mid-stream" in first.stdout
    assert "SEND" not in first.stdout

    second = run_cli(db_url, "demo", "agent", "resume", "--crash-before-commit")
    assert second.returncode == 75, second.stdout + second.stderr
    assert "ENTER plan" not in second.stdout, "plan's boundary was committed"
    assert second.stdout.count("SEND email") == 1

    third = run_cli(db_url, "demo", "agent", "resume")
    assert third.returncode == 0, third.stdout + third.stderr
    assert "SEND" not in third.stdout, "the email is confirmed: never sent again"
    assert "replayed from its record: not paid" in third.stdout
    assert "SUCCEEDED" in third.stdout
    assert "saved by replaying recorded calls: " in third.stdout

    status = json.loads(run_cli(db_url, "demo", "agent", "status", "--json").stdout)
    assert status["status"] == "SUCCEEDED"
    assert status["emails_sent"] == 1
    assert [(e["target"], e["name"], e["status"]) for e in status["effects"]] == [
        ("model", "plan/model.1", "confirmed"),
        ("model", "write/model.1", "confirmed"),
        ("tool", "write/tool.call-email-1", "confirmed"),
        ("model", "finish/model.1", "confirmed"),
    ]
    assert status["result"]["saved_tokens"] > 0


def test_the_agent_story_runs_against_a_fresh_database(db_url: str) -> None:
    story = run_cli(db_url, "demo", "agent")
    assert story.returncode == 0, story.stdout + story.stderr
    assert "The agent survived both crashes." in story.stdout
