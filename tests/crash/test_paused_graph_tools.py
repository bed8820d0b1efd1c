"""A LangGraph invocation paused (SIGSTOP) just after its effect tool's intent, its thread taken
over by another invocation meanwhile, then continued: the payment is made once.

The demo's payment tool has a reconciler, so its intent is written already ``executing``; the
invocation that takes the thread over asks the provider, hears "not found" and pays. The paused
one finds, before it calls, that its hold's lease ran out by the shared test clock: no fence can
stop a call once it is sent. On each backend.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from perdure.demos.graph_agent import payments
from perdure.testing import FileClock
from tests.conftest import ROOT, cli_env


def app(db_url: str, mode: str, tmp_path: Path) -> list[str]:
    ledger, calls = str(tmp_path / "ledger.db"), str(tmp_path / "calls")
    return [sys.executable, "-m", "tests.apps.graph_pay_app", db_url, "t1", mode, ledger, calls]


def invoke(command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, env=cli_env(), cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )


def test_an_invocation_paused_after_a_tool_intent_and_taken_over_never_pays_again(
    db_url: str, tmp_path: Path, shared_clock: FileClock
) -> None:
    started = invoke(app(db_url, "start", tmp_path))
    assert started.returncode == 0, started.stderr
    assert json.loads(started.stdout.splitlines()[-1]) == {"interrupts": 1}

    paused = subprocess.Popen(
        app(db_url, "approve", tmp_path),
        env=cli_env(PERDURE_PAUSE_AT="after_intent:pay"),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _, status = os.waitpid(paused.pid, os.WUNTRACED)
    assert os.WIFSTOPPED(status), f"the invocation ended before its intent (status {status})"
    try:
        shared_clock.advance(300)  # the paused invocation's hold runs out
        other = invoke(app(db_url, "approve", tmp_path))
        assert other.returncode == 0, other.stderr
        assert payments(str(tmp_path / "ledger.db")) == 1
    finally:
        paused.send_signal(signal.SIGCONT)
    _, err = paused.communicate(timeout=60)
    assert "PAUSE after_intent:pay" in err
    assert "lease_lost" in err or "LeaseLostError" in err, err[-2000:]
    assert payments(str(tmp_path / "ledger.db")) == 1, "the paused invocation paid again"
