"""``perdure demo pydantic-ai`` and ``perdure demo openai-agents`` through the CLI, each chapter
in a new process, on each backend: the run waits for the approval, dies right after the tool's
call and again before its boundary, and finishes with one email and two model requests; the
framework on its own, with the same crashes, sends three emails and makes three requests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli

DEMOS = ["pydantic-ai", "openai-agents"]


@pytest.mark.parametrize("demo", DEMOS)
def test_the_approved_email_goes_out_once_and_no_request_is_made_twice(
    db_url: str, demo: str
) -> None:
    def chapter(*args: str) -> tuple[int, str]:
        done = run_cli(db_url, "demo", demo, *args)
        return done.returncode, done.stdout + done.stderr

    code, out = chapter("start")
    assert (code, "WAITING_APPROVAL" in out) == (0, True), out
    code, out = chapter("approve")
    assert code == 0, out
    code, out = chapter("resume", "--crash-after-tool")
    assert code == 75, out
    assert out.count("SEND email") == 1 and "MODEL request" not in out
    code, out = chapter("resume", "--crash-before-commit")
    assert code == 75, out
    assert "RECONCILE: found mail-1" in out and "SEND" not in out
    assert out.count("MODEL request 2") == 1
    code, out = chapter("resume")
    assert code == 0, out
    assert "SUCCEEDED" in out and "MODEL request" not in out and "SEND" not in out

    code, out = chapter("status", "--json")
    assert code == 0, out
    status = json.loads(out)
    assert status["status"] == "SUCCEEDED"
    assert (status["model_requests"], status["tool_calls"]) == (2, 1)
    assert status["recorded_model_calls"] == 2


@pytest.mark.parametrize("demo", DEMOS)
def test_the_whole_story_prints_the_counts_beside_the_framework_alone(
    demo: str, tmp_path: Path
) -> None:
    told = run_cli(f"sqlite:///{tmp_path / 'unused.db'}", "demo", demo, timeout=180)
    assert told.returncode == 0, told.stdout + told.stderr
    table = [line for line in told.stdout.splitlines() if line.startswith(("model", "tool"))]
    rows = {line[:22].strip(): line[22:].split() for line in table[-2:]}
    assert rows == {"model requests": ["2", "3"], "tool calls (emails)": ["1", "3"]}
    assert "The approved email went out once" in told.stdout
