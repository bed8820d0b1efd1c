"""A worker continued after a freeze beats before it claims, so its new run is not taken over.

The worker is frozen (SIGSTOP) while idle, holding nothing; the shared test clock moves past the
beats it misses, so the fleet counts it dead. A run is started, the worker is continued
(SIGCONT) and claims it (held at s1 by a gate). A second worker then looks for work until none
is left: it must not take the fresh run over as a dead worker's. The lease is long (60 s of the
test clock, beats every 20 s of real time), so the continued worker's own heartbeat thread does
not beat within the test by itself; only the beat before the claim can tell the fleet it lives.
"""

from __future__ import annotations

import signal
import subprocess
from collections import Counter
from pathlib import Path

from perdure.store.url import open_store
from perdure.testing import FileClock
from tests.conftest import ROOT, Gates, cli_env, entries, perdure_cmd, run_cli
from tests.fleet.test_fleet import ALL_COUNTING, COUNTING_APP, TENANT, Fleet, show, wait_for

LEASE = 60.0


def test_a_worker_continued_after_a_freeze_keeps_the_run_it_claims_next(
    pg_url: str, tmp_path: Path, shared_clock: FileClock
) -> None:
    db_url = pg_url
    log = tmp_path / "entries.log"
    folder = tmp_path / "fleet"
    folder.mkdir()
    gates = Gates(tmp_path / "gates", "s1")
    fleet = Fleet(db_url, COUNTING_APP, folder, lease=LEASE, env={"COUNTING_LOG": str(log)})
    store = open_store(db_url)
    try:
        thawed = fleet.spawn(**gates.env("s1"))
        wait_for(lambda: "serving" in thawed.stdout(), 60, fleet.logs)
        thawed.proc.send_signal(signal.SIGSTOP)
        shared_clock.advance(LEASE)  # 3 beats missed: the fleet counts the frozen worker dead
        out = run_cli(db_url, "start", "counting", "--app", COUNTING_APP)
        assert out.returncode == 0, out.stderr
        run_id = out.stdout.split()[1]
        thawed.proc.send_signal(signal.SIGCONT)
        wait_for(lambda: entries(log, run_id)["s1"] == 1, 30, fleet.logs)

        other = subprocess.run(
            perdure_cmd(db_url, "worker", "--app", COUNTING_APP, "--until-idle"),
            env=cli_env(COUNTING_LOG=str(log)),
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert other.returncode == 0, other.stderr
        assert store.get_run(TENANT, run_id).owner == f"{store_owner(thawed.pid)}", other.stdout
        gates.open("s1")
        wait_for(lambda: store.get_run(TENANT, run_id).status == "SUCCEEDED", 30, fleet.logs)
        events = store.events(TENANT, run_id)
    finally:
        gates.open_all()
        store.close()
        codes = fleet.stop()

    assert codes == {thawed.pid: 0}, fleet.logs()
    assert f"run {run_id}" not in other.stdout, other.stdout
    assert [e.type for e in events].count("claimed") == 1
    assert entries(log, run_id) == Counter(ALL_COUNTING)
    assert show(db_url, run_id)["result"] == {"total": 55}


def store_owner(pid: int) -> str:
    """The lease owner of a worker process of this host (``host:pid``)."""
    import socket

    return f"{socket.gethostname()}:{pid}"
