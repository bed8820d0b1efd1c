"""A worker paused around an effect's intent (SIGSTOP: every thread of it frozen, its heartbeat
too), its run taken over meanwhile, then continued: the effect is applied once.

The light applies every command it receives (no deduplication), so a second call would show as
a second command. The paused worker's lease has run out by the shared test clock when it is
continued: it must find so before it calls, because no fence can stop a call once it is sent,
and the worker that took the run over has reconciled and made the call already.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from perdure.demos.light import SmartLight
from perdure.testing import FileClock
from tests.conftest import ROOT, cli_env, perdure_cmd, run_cli

APP = "tests.apps.effects_app"


def _paused_resume(db_url: str, run_id: str, point: str) -> subprocess.Popen[str]:
    """``perdure resume RUN`` in a process that stops itself at ``point``; returned once it
    has stopped (waited for with ``waitpid``, no clock involved)."""
    proc = subprocess.Popen(
        perdure_cmd(db_url, "resume", run_id, "--app", APP),
        env=cli_env(PERDURE_PAUSE_AT=point),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _, status = os.waitpid(proc.pid, os.WUNTRACED)
    assert os.WIFSTOPPED(status), f"the worker ended before {point} (status {status})"
    return proc


@pytest.mark.parametrize("point", ["before_intent:dim", "after_intent:dim", "after_intent:notify"])
def test_a_worker_paused_at_an_intent_and_taken_over_never_calls_again(
    db_url: str, tmp_path: Path, shared_clock: FileClock, point: str
) -> None:
    lights = {"a": str(tmp_path / "a.db"), "b": str(tmp_path / "b.db")}
    start = run_cli(db_url, "start", "two_effects", "--app", APP, "--input", json.dumps(lights))
    assert start.returncode == 0, start.stderr
    run_id = start.stdout.split()[1]

    paused = _paused_resume(db_url, run_id, point)
    try:
        shared_clock.advance(300)  # the paused worker's lease runs out
        other = run_cli(db_url, "resume", run_id, "--app", APP)
        assert other.returncode == 0, other.stderr
        assert json.loads(run_cli(db_url, "show", run_id, "--json").stdout)["status"] == (
            "SUCCEEDED"
        )
    finally:
        paused.send_signal(signal.SIGCONT)
    out, err = paused.communicate(timeout=60)
    assert f"PAUSE {point}" in err
    assert "Traceback" not in err, err

    a = SmartLight(tmp_path / "a.db").status()
    b = SmartLight(tmp_path / "b.db", initial=0).status()
    assert (a["commands"], b["commands"]) == (1, 1), (point, out, err)
    final = json.loads(run_cli(db_url, "show", run_id, "--json").stdout)
    assert final["status"] == "SUCCEEDED", "the late worker changed nothing"
