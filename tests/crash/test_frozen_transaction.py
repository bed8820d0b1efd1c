"""A worker frozen (SIGSTOP) inside an open PostgreSQL transaction lets go of its run.

The worker parks itself (``PERDURE_PARK_IN_TX``, store/postgres/park.py) right after the guarded
run update of its final boundary, inside the boundary's transaction, holding the run's row lock:
a paused VM at the worst moment. The server ends that session after the bound on a transaction's
wait for its client (``PERDURE_IDLE_TRANSACTION_SECONDS``, real time, kept short here), so once
the shared test clock moves past the lease another worker takes the run over and finishes it;
the frozen worker, continued (SIGCONT), has its late commit refused and reports the run lost.
The lease expires by the shared test clock, never by waiting.
"""

from __future__ import annotations

import signal
from collections import Counter
from pathlib import Path

import pytest

from perdure.store.url import open_store
from perdure.testing import FileClock
from tests.conftest import entries, run_cli
from tests.fleet.test_fleet import (
    ALL_COUNTING,
    COUNTING_APP,
    TENANT,
    Fleet,
    pg_rows,
    show,
    wait_for,
)
from tests.waypoints import Waypoint

LEASE = 6.0
IDLE_TRANSACTION = "1"
SESSIONS = (
    "SELECT pid, state, wait_event, state_change, left(query, 40) FROM pg_stat_activity"
    " WHERE datname = current_database()"
)


@pytest.fixture
def db_url(pg_url: str) -> str:
    """Only PostgreSQL: SQLite has one writer, whose lock a frozen process keeps by design."""
    return pg_url


def stopped(pid: int) -> bool:
    """True when the process is stopped (state ``T`` in /proc)."""
    text = Path(f"/proc/{pid}/stat").read_text()
    return text.rpartition(")")[2].split()[0] == "T"


def test_a_worker_frozen_inside_a_boundary_transaction_has_its_run_taken_over(
    db_url: str, tmp_path: Path, shared_clock: FileClock
) -> None:
    log = tmp_path / "entries.log"
    folder = tmp_path / "fleet"
    folder.mkdir()
    out = run_cli(db_url, "start", "counting", "--app", COUNTING_APP)
    assert out.returncode == 0, out.stderr
    run_id = out.stdout.split()[1]
    env = {"COUNTING_LOG": str(log), "PERDURE_IDLE_TRANSACTION_SECONDS": IDLE_TRANSACTION}
    fleet = Fleet(db_url, COUNTING_APP, folder, lease=LEASE, env=env)
    store = open_store(db_url)
    try:
        with Waypoint(tmp_path / "parked") as parked:
            frozen = fleet.spawn(
                PERDURE_PARK_IN_TX="advance_run", PERDURE_PARK_MARK=str(parked.path)
            )
            parked.wait(frozen.proc)  # inside s10's boundary transaction, the run's row locked
        wait_for(lambda: stopped(frozen.pid), 30, "the worker did not stop itself")
        assert entries(log, run_id)["s10"] == 1

        shared_clock.advance(LEASE + 1)  # the frozen worker's lease ran out, by the test clock
        successor = fleet.spawn()
        wait_for(
            lambda: store.get_run(TENANT, run_id).status == "SUCCEEDED",
            30,
            lambda: (
                f"the run was not taken over: {store.get_run(TENANT, run_id)}\n{fleet.logs()}"
                + f"\nsessions: {pg_rows(db_url, SESSIONS)}"
            ),
        )
        frozen.proc.send_signal(signal.SIGCONT)
        wait_for(lambda: f"run {run_id} lost" in frozen.stdout(), 30, fleet.logs)
        steps = store.steps(TENANT, run_id)
        events = store.events(TENANT, run_id)
    finally:
        store.close()
        codes = fleet.stop()

    assert codes == {frozen.pid: 0, successor.pid: 0}, fleet.logs()
    assert "Traceback" not in frozen.stderr() + successor.stderr(), fleet.logs()
    assert f"run {run_id} ended" in successor.stdout()
    assert f"run {run_id} ended" not in frozen.stdout()
    final = show(db_url, run_id)
    assert (final["status"], final["result"]) == ("SUCCEEDED", {"total": 55})
    assert entries(log, run_id) == Counter(ALL_COUNTING) + Counter(["s10"])
    claims = [e.fence for e in events if e.type == "claimed"]
    assert len(claims) == 2
    assert [s.fence for s in steps] == [claims[0]] * 9 + [claims[1]]
    assert [e.type for e in events].count("late_commit") == 1
