"""A compiled LangGraph StateGraph (tool node, interrupt) on PerdureSaver, killed with SIGKILL
mid-graph in one process, resumed from its last checkpoint in another, approved with
``Command(resume=...)`` in a third that is killed too, finished by a fourth; and the LangGraph
demo's agent (a payment after an approval) killed just after the approval and just after the
payment (``os._exit`` at crash points, SIGKILL at a gate), in each safe way of answering, with
both savers and both durability modes: never asked again, paid once. On each backend."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from perdure.demos.graph_agent import counts, payments
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


# -- a person's answer and a paying tool, killed after the answer --------------------------------


def approval_cmd(spec: dict[str, str], action: str) -> list[str]:
    return [sys.executable, "-m", "tests.apps.approval_app", json.dumps(spec), action]


def approval_step(spec: dict[str, str], action: str, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        approval_cmd(spec, action),
        env=cli_env(**env),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def asked(spec: dict[str, str], action: str) -> bool:
    proc = approval_step(spec, action)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    return bool(json.loads(out.strip().splitlines()[-1])["interrupted"])


def approval_spec(db_url: str, tmp_path: Path, **given: str) -> dict[str, str]:
    spec = {
        "url": db_url,
        "thread": "pay-1",
        "folder": str(tmp_path),
        "saver": "sync",
        "durability": "async",
        "entry": "resume",
        "approval": "tool",
        "tool": "effect",
        **given,
    }
    assert asked(spec, "start"), "the graph asks for the approval"
    return spec


def finish(spec: dict[str, str]) -> int:
    """Continue after the crash; the number of times the person was asked again."""
    again = 0
    interrupted = asked(spec, "continue")
    while interrupted and again < 3:
        again += 1
        interrupted = asked(spec, "approve")
    return again


@pytest.mark.parametrize("point", ["approved", "after_call"])
@pytest.mark.parametrize("durability", ["sync", "async"])
@pytest.mark.parametrize(
    ("saver", "entry"), [("sync", "resume"), ("sync", "held"), ("async", "plain")]
)
def test_an_answer_is_never_asked_again_and_the_tool_pays_once_after_a_crash(
    db_url: str, tmp_path: Path, saver: str, entry: str, durability: str, point: str
) -> None:
    spec = approval_spec(db_url, tmp_path, saver=saver, entry=entry, durability=durability)
    proc = approval_step(spec, "answer", PERDURE_CRASH_AT=f"{point}:pay")
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 75, err
    assert f"CRASH {point}:pay" in err
    assert finish(spec) == 0, "the person was asked again"
    assert payments(str(tmp_path / "ledger.db")) == 1
    calls = counts(str(tmp_path / "calls"))
    # asked once; the model's second call (after the tool) is the only one after the crash
    assert calls["model"] == 2, calls
    assert calls["approved"] == (1 if point == "after_call" else 2), calls


@pytest.mark.parametrize("approval", ["tool", "node"])
def test_a_sigkill_after_the_payment_leaves_one_payment_and_no_second_question(
    db_url: str, tmp_path: Path, approval: str
) -> None:
    gates = Gates(tmp_path / "gates", "after_call")  # never opened: the process is killed there
    spec = approval_spec(db_url, tmp_path, approval=approval, durability="async")
    proc = approval_step(spec, "answer", **gates.env("after_call"))
    assert proc.stderr is not None
    wait_for(lambda: payments(str(tmp_path / "ledger.db")) == 1, timeout=60)
    proc.send_signal(signal.SIGKILL)
    assert proc.wait(timeout=10) == -signal.SIGKILL
    assert finish(spec) == 0
    assert payments(str(tmp_path / "ledger.db")) == 1, "reconciled, not paid again"


def test_a_plain_tool_pays_again_where_an_effect_tool_does_not(db_url: str, tmp_path: Path) -> None:
    """What LangGraph does on its own: the node that paid runs again after the crash."""
    spec = approval_spec(db_url, tmp_path, tool="plain", entry="resume")
    proc = approval_step(spec, "answer", PERDURE_CRASH_AT="after_call:pay")
    assert proc.wait(timeout=120) == 75
    assert finish(spec) == 0, "the answer was kept (resume)"
    assert payments(str(tmp_path / "ledger.db")) == 2
