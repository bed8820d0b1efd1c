"""Commands that run until stopped stop cleanly where users run them: ``runs --watch`` and
``watch`` end with exit 0 on SIGTERM and on SIGINT, also as a background job (started with
SIGINT ignored, as a shell does); a worker SIGTERMed while it still imports its app exits 0 with
one line; a process a test leaves behind is found and stopped."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests import processes
from tests.conftest import ROOT, cli_env, perdure_cmd, read_until, run_cli
from tests.waypoints import Waypoint

APP = "tests.apps.server_app"
STOPS = [pytest.param(signal.SIGTERM, id="SIGTERM"), pytest.param(signal.SIGINT, id="SIGINT")]


def as_background_job(*cmd: str) -> subprocess.Popen[str]:
    """Start ``cmd`` the way a shell starts ``cmd &``: its own session, SIGINT ignored."""
    return subprocess.Popen(
        cmd,
        env=cli_env(),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),  # noqa: PLW1509
    )


@pytest.mark.parametrize("signum", STOPS)
def test_runs_watch_in_a_background_job_stops_on_sigterm_and_sigint(
    db_url: str, signum: signal.Signals
) -> None:
    run_id = run_cli(db_url, "start", "plain", "--app", APP).stdout.split()[1]
    proc = as_background_job(*perdure_cmd(db_url, "runs", "--watch"))
    assert "PENDING" in read_until(proc, run_id)[-1]
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "Traceback" not in err


@pytest.mark.parametrize("signum", STOPS)
def test_watch_in_a_background_job_stops_on_sigterm_and_sigint(
    db_url: str, signum: signal.Signals
) -> None:
    run_id = run_cli(db_url, "start", "job", "--app", APP, "--wait").stdout.split()[1]
    proc = as_background_job(*perdure_cmd(db_url, "watch", run_id, "--poll", "0.05"))
    read_until(proc, "waiting for a decision")
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "Traceback" not in err


def test_a_worker_sigtermed_while_it_imports_its_app_exits_0_with_one_line(
    tmp_path: Path,
) -> None:
    db_url = f"sqlite:///{tmp_path / 'perdure.db'}"
    gate = tmp_path / "gate"
    with open(gate, "a") as held, Waypoint(Path(f"{gate}.reached")) as importing:
        fcntl.flock(held, fcntl.LOCK_EX)
        proc = subprocess.Popen(
            perdure_cmd(db_url, "worker", "--app", "tests.apps.slow_start_app"),
            env=cli_env(STARTING_GATE=str(gate)),
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        importing.wait(proc)  # the worker is importing its app
        proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)  # the gate is open: the import goes on
    assert proc.returncode == 0, (out, err)
    assert out.splitlines() == [
        "worker stopped before it served: SIGTERM came while it was starting"
    ]
    assert err == ""


def test_a_process_left_behind_is_found_even_orphaned_and_one_deaf_to_sigterm_is_killed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    owner = os.environ[processes.OWNER_VARIABLE]
    before = processes.children()
    # each waits for a signal without a timer: it tells the test it started, then pauses
    waiter = (
        "import signal, sys; open(sys.argv[1], 'w').write('ready\\n'); "
        "signal.signal(signal.SIGTERM, {}); signal.pause()"
    )
    with (
        Waypoint(tmp_path / "orphan") as orphan_started,
        Waypoint(tmp_path / "deaf") as deaf_started,
    ):
        orphaned = subprocess.run(  # its parent exits at once: the waiter is reparented
            [
                sys.executable,
                "-c",
                "import subprocess, sys; subprocess.Popen(sys.argv[1:])",
                sys.executable,
                "-c",
                waiter.format("signal.SIG_DFL"),
                str(orphan_started.path),
            ],
            check=True,
            timeout=60,
        )
        assert orphaned.returncode == 0
        deaf = subprocess.Popen(
            [sys.executable, "-c", waiter.format("signal.SIG_IGN"), str(deaf_started.path)]
        )
        orphan_started.wait()
        deaf_started.wait(deaf)
    found = processes.left_behind(owner, before)
    assert deaf.pid in found and len(found) == 2, found
    (orphan,) = found - {deaf.pid}
    (stopped,) = processes.stop([orphan])
    assert stopped.stopped_by_sigterm, "the orphan was stopped by SIGTERM"
    monkeypatch.setattr(processes, "GRACE_SECONDS", 0.0)  # the deaf one is not waited for
    (killed,) = processes.stop([deaf.pid])
    assert not killed.stopped_by_sigterm, "SIGTERM did not stop it: killed"
    assert deaf.wait(timeout=10) == -signal.SIGKILL
    assert processes.left_behind(owner, before) == set()
