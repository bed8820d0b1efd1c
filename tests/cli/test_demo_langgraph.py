"""``perdure demo langgraph``: the agent pays after an approval, is killed just after paying, and
a new process continues it — with perdure, asked once and paid once; as plain LangGraph, paid
twice. Each command in its own process, on each backend; and the whole story."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import run_cli


def test_each_command_in_a_new_process_asks_once_and_pays_once(db_url: str) -> None:
    def demo(*args: str) -> str:
        out = run_cli(db_url, "demo", "langgraph", *args, timeout=120)
        assert out.returncode == (75 if "--crash-after-payment" in args else 0), out.stderr
        return out.stdout

    assert "asks a person: Pay 420 EUR to ACME GmbH?" in demo("start")
    demo("approve", "--crash-after-payment")
    assert 'Done: {"paid": true, "receipt": "payment-1"}' in demo("resume")
    assert demo("status") == "model calls 2, asked for approval 1, payments 1\n"
    demo("start", "--plain")
    demo("approve", "--crash-after-payment", "--plain")
    demo("resume", "--plain")
    assert "payments 2" in demo("status", "--plain")


def test_the_story_compares_perdure_with_plain_langgraph(tmp_path: Path) -> None:
    out = run_cli(f"sqlite:///{tmp_path / 'unused.db'}", "demo", "langgraph", timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    rows = {
        line[:20].strip(): line[20:].split()
        for line in out.stdout.splitlines()
        if line.startswith(("perdure.langgraph ", "plain LangGraph "))
    }
    assert rows["perdure.langgraph"] == ["2", "1", "1"]
    assert rows["plain LangGraph"][0] == "2" and rows["plain LangGraph"][2] == "2"
