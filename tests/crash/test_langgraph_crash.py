"""A compiled LangGraph StateGraph (tool node, interrupt) on PerdureSaver, killed with SIGKILL
mid-graph in one process, resumed from its last checkpoint in another, approved with
``Command(resume=...)`` in a third that is killed too, finished by a fourth; on each backend."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

from tests.backends import damage_graph
from tests.conftest import ROOT, Gates, cli_env, entries, run_cli
from tests.crash.test_crash_resume import wait_for


def graph_cmd(db_url: str, thread: str, mode: str) -> list[str]:
    return [sys.executable, "-m", "tests.apps.graph_app", db_url, thread, mode]


def invoke(db_url: str, thread: str, mode: str, log: Path) -> dict:  # type: ignore[type-arg]
    out = subprocess.run(
        graph_cmd(db_url, thread, mode),
        env=cli_env(COUNTING_LOG=str(log)),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def thread_run(db_url: str) -> dict:  # type: ignore[type-arg]
    out = run_cli(db_url, "runs", "--workflow", "langgraph", "--json")
    assert out.returncode == 0, out.stderr
    (run,) = json.loads(out.stdout)
    return run  # type: ignore[no-any-return]


def test_a_graph_killed_mid_run_resumes_from_its_checkpoint_and_finishes_after_approval(
    db_url: str, tmp_path: Path
) -> None:
    log = tmp_path / "entries.log"
    gates = Gates(tmp_path / "gates", "check", "final")  # never opened: nodes wait for the kill
    proc = subprocess.Popen(
        graph_cmd(db_url, "t-1", "start"),
        env=cli_env(COUNTING_LOG=str(log), **gates.env("check")),
        cwd=ROOT,
    )
    wait_for(lambda: entries(log)["check"] == 1, timeout=60)
    proc.send_signal(signal.SIGKILL)
    assert proc.wait(timeout=10) == -signal.SIGKILL
    assert entries(log) == Counter({"agent": 2, "tool_add": 1, "check": 1})

    # a new process continues from the last checkpoint: the tool is not called again, and the
    # dead process's hold is taken over at once
    paused = invoke(db_url, "t-1", "continue", log)
    assert paused["interrupts"] == [{"question": "send the sum?", "sum": "the sum is 5"}]
    assert paused["approved"] is None
    assert entries(log) == Counter({"agent": 2, "tool_add": 1, "check": 2, "approve": 1})
    run = thread_run(db_url)
    assert (run["thread_id"], run["status"], run["next_step"]) == ("t-1", "RUNNING", "interrupted")
    shown = run_cli(db_url, "show", run["run_id"], "--events", "50")
    assert shown.returncode == 0, shown.stderr
    assert "graph_interrupt" in shown.stdout and "send the sum?" in shown.stdout
    assert "graph_checkpoint" in shown.stdout

    # the approval, Command(resume=...), is killed too, after the approved step committed
    approving = subprocess.Popen(
        graph_cmd(db_url, "t-1", "resume=yes"),
        env=cli_env(COUNTING_LOG=str(log), **gates.env("final")),
        cwd=ROOT,
    )
    wait_for(lambda: entries(log)["final"] == 1, timeout=60)
    approving.send_signal(signal.SIGKILL)
    assert approving.wait(timeout=10) == -signal.SIGKILL

    done = invoke(db_url, "t-1", "continue", log)
    assert done["approved"] == "yes"
    assert done["messages"] == ["add 2 and 3", "", "5", "the sum is 5", "done, approved=yes"]
    assert entries(log) == Counter(
        {"agent": 2, "tool_add": 1, "check": 2, "approve": 2, "final": 2}
    ), "nothing committed ran again: the approval is not asked twice, the tool not called twice"
    assert thread_run(db_url)["next_step"] == "graph"


def test_an_unreadable_checkpoint_fails_the_invocation_and_lists_the_thread_as_quarantined(
    db_url: str, tmp_path: Path
) -> None:
    log = tmp_path / "entries.log"
    assert invoke(db_url, "t-2", "start", log)["interrupts"]
    damage_graph(db_url, "graph_blobs", "t-2", b"\xc1 not msgpack")
    out = subprocess.run(
        graph_cmd(db_url, "t-2", "resume=yes"),
        env=cli_env(COUNTING_LOG=str(log)),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode != 0 and "GraphCheckpointUnreadableError" in out.stderr
    assert entries(log)["final"] == 0, "the graph did not start over"
    listed = run_cli(db_url, "runs", "--quarantined")
    assert listed.returncode == 0, listed.stderr
    (row,) = [line for line in listed.stdout.splitlines() if "langgraph" in line]
    assert "QUARANTINED" in row and "t-2" in row and "checkpoint_unreadable" in row
