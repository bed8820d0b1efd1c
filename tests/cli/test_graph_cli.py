"""``perdure graph waiting`` and ``perdure graph answer``: a person answers a LangGraph
interrupt from the shell, without the graph's code; the application's next
``graph.invoke(None, config)`` continues with the answer. On each backend."""

from __future__ import annotations

import json
from pathlib import Path

from perdure.demos.graph_agent import payments
from tests.conftest import run_cli
from tests.crash.test_langgraph_crash import approval_spec, asked


def test_an_answer_given_on_the_command_line_is_the_one_the_graph_continues_with(
    db_url: str, tmp_path: Path
) -> None:
    spec = approval_spec(db_url, tmp_path)
    shown = run_cli(db_url, "graph", "waiting", "pay-1", "--json")
    assert shown.returncode == 0, shown.stderr
    waiting = json.loads(shown.stdout)
    (interrupt,) = waiting["interrupts"]
    assert interrupt["value"]["question"] == "Pay 420 EUR to ACME GmbH?"
    assert waiting["answered"] is False

    wrong = run_cli(db_url, "graph", "answer", "pay-1", "yes", "--interrupt-id", "f" * 32)
    assert wrong.returncode == 1 and "error[not_interrupted]" in wrong.stderr
    answered = run_cli(db_url, "graph", "answer", "pay-1", "yes", "--interrupt-id", interrupt["id"])
    assert answered.returncode == 0, answered.stderr
    assert 'answer "yes" recorded' in answered.stdout
    again = run_cli(db_url, "graph", "answer", "pay-1", "yes")
    assert "recorded already" in again.stdout
    other = run_cli(db_url, "graph", "answer", "pay-1", "no")
    assert other.returncode == 1 and "error[interrupt_answered]" in other.stderr
    assert "an answer is recorded" in run_cli(db_url, "graph", "waiting", "pay-1").stdout

    assert asked(spec, "continue") is False, "the graph went on with the recorded answer"
    assert payments(str(tmp_path / "ledger.db")) == 1
    done = run_cli(db_url, "graph", "waiting", "pay-1")
    assert done.stdout == "thread pay-1 waits for no answer\n"
