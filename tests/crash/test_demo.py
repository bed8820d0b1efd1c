"""The temperature demo's contract, end to end through the CLI in separate processes."""

from __future__ import annotations

import json

from tests.conftest import run_cli

THREAD = ["--thread", "recovery-demo-1"]


def test_the_demo_crashes_before_reply_and_resumes_only_reply(db_url: str) -> None:
    crashed = run_cli(db_url, "demo", "start", *THREAD, "--crash-before-reply")
    assert crashed.returncode == 75
    assert crashed.stdout.splitlines() == [
        "ENTER plan",
        "ENTER tool (simulated read)",
        "ENTER reply",
        "CRASH before reply, exit=75 (no cleanup)",
    ]

    text = run_cli(db_url, "demo", "status", *THREAD)
    assert text.returncode == 0, text.stderr
    assert "next step  reply" in text.stdout
    assert "messages   3" in text.stdout

    status = json.loads(run_cli(db_url, "demo", "status", *THREAD, "--json").stdout)
    assert status["status"] == "RUNNING"
    assert status["next_step"] == "reply"
    user, call, result = status["messages"]
    assert user["role"] == "user" and "temperature" in user["content"]
    assert call["role"] == "assistant"
    assert call["tool_calls"][0]["id"] == "call-7"
    assert result == {
        "seq": 3,
        "role": "tool",
        "content": "23.5°C",
        "tool_call_id": call["tool_calls"][0]["id"],
    }

    resumed = run_cli(db_url, "demo", "resume", *THREAD)
    assert resumed.returncode == 0, resumed.stderr
    lines = resumed.stdout.splitlines()
    assert lines[0] == "ENTER reply"
    assert "ENTER plan" not in resumed.stdout and "ENTER tool" not in resumed.stdout
    assert "SUCCEEDED" in lines[1]
    final = json.loads(run_cli(db_url, "demo", "status", *THREAD, "--json").stdout)
    assert final["status"] == "SUCCEEDED"
    assert len(final["messages"]) == 4
    assert "23.5°C" in final["messages"][3]["content"]

    again = run_cli(db_url, "demo", "resume", *THREAD)
    assert again.returncode == 0
    assert "ENTER" not in again.stdout
    assert "is finished (SUCCEEDED); nothing to resume" in again.stdout


def test_the_whole_story_runs_against_a_fresh_database(db_url: str) -> None:
    story = run_cli(db_url, "demo")
    assert story.returncode == 0, story.stdout + story.stderr
    assert story.stdout.count("ENTER plan") == 1
    assert story.stdout.count("ENTER reply") == 2
    assert "The run survived the crash." in story.stdout
