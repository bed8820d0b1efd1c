"""A PostgreSQL restart in the middle of a worker's run: everything completes, nothing twice.

The test starts a throwaway cluster of its own (initdb + pg_ctl on a free port, as the postgres
user), so restarting it disturbs no other test.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from perdure.demos.light import SmartLight
from tests.conftest import (
    ROOT,
    Gates,
    cli_env,
    entries,
    perdure_cmd,
    read_until,
    run_cli,
    start_worker,
)
from tests.waypoints import Waypoint

BIN = next(iter(sorted(Path("/usr/lib/postgresql").glob("*/bin"))), None)
APP = "tests.apps.counting"
OUTAGE_APP = "tests.apps.outage_app"
ALL = [f"s{i}" for i in range(1, 11)]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _as_postgres(*cmd: str) -> None:
    prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    subprocess.run([*prefix, *cmd], check=True, capture_output=True, timeout=120)


@pytest.fixture
def cluster() -> Iterator[tuple[str, Path, int]]:
    if BIN is None or not os.environ.get("PERDURE_TEST_PG_DSN"):
        pytest.skip("PostgreSQL server binaries and PERDURE_TEST_PG_DSN are needed")
    folder = Path(tempfile.mkdtemp(prefix="perdure-outage-"))
    data = folder / "data"
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres")
    port = _free_port()
    # --no-sync: the throwaway cluster's files need not reach the disk before it starts (its
    # restarts are of the server process, not of the machine, so nothing it tests needs it)
    _as_postgres(
        str(BIN / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "--no-sync"
    )
    ctl = [str(BIN / "pg_ctl"), "-D", str(data), "-w", "-o", f"-p {port} -k {folder}"]
    _as_postgres(*ctl, "-l", str(folder / "log"), "start")
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres", data, port
    finally:
        _as_postgres(str(BIN / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop")
        shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def _connections_ended(url: str) -> Iterator[None]:
    """While open, end every other connection to the database every few milliseconds."""
    import psycopg

    stop = threading.Event()

    def end_them() -> None:
        with psycopg.connect(url, autocommit=True) as conn:
            while not stop.is_set():
                conn.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE pid <> pg_backend_pid() AND datname = current_database()"
                )
                stop.wait(0.005)

    ender = threading.Thread(target=end_them, daemon=True)
    ender.start()
    try:
        yield
    finally:
        stop.set()
        ender.join(timeout=30)


def test_a_database_restart_mid_run_loses_nothing_and_repeats_nothing(
    cluster: tuple[str, Path, int], tmp_path: Path
) -> None:
    url, data, port = cluster
    log = tmp_path / "entries.log"
    runs = [run_cli(url, "start", "counting", "--app", APP).stdout.split()[1] for _ in range(12)]
    gates = Gates(tmp_path / "gates", "s5")
    env = cli_env(COUNTING_LOG=str(log), **gates.env("s5"))
    worker = subprocess.Popen(
        perdure_cmd(url, "worker", "--app", APP, "--concurrency", "3", "--poll", "0.05"),
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while entries(log)["s5"] < 3 and time.monotonic() < deadline:
            time.sleep(0.05)  # observing the worker, bounded: every run in flight is at s5
        ctl = [str(BIN / "pg_ctl"), "-D", str(data), "-w", "-m", "fast"]
        log_file = str(data.parent / "log")
        before_restart = sum(entries(log).values())
        gates.open("s5")  # three commits of s5 now race the restart below
        _as_postgres(*ctl, "-o", f"-p {port} -k {data.parent}", "-l", log_file, "restart")
        assert before_restart < len(runs) * len(ALL), "the restart came in the middle of the work"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            out = run_cli(url, "runs", "--json", "--limit", "100")
            statuses = [r["status"] for r in json.loads(out.stdout)] if out.returncode == 0 else []
            if statuses and all(s == "SUCCEEDED" for s in statuses):
                break
            time.sleep(0.2)
    finally:
        gates.open_all()
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=60)

    for run_id in runs:
        shown = json.loads(run_cli(url, "show", run_id, "--json").stdout)
        assert shown["status"] == "SUCCEEDED", shown
        assert shown["result"] == {"total": 55}
        assert shown["completed_steps"] == ALL, "each step committed once, in order"
    per_run = [entries(log, r) for r in runs]
    for counted in per_run:
        assert set(counted) == set(ALL)
        assert max(counted.values()) <= 2, "a step runs again only if its commit was lost"


def test_an_effect_whose_outcome_meets_a_database_outage_records_it_once_the_database_is_back(
    cluster: tuple[str, Path, int], tmp_path: Path
) -> None:
    """The call is made while the database is up; its outcome is written while every
    connection to it is being ended (what a restart or a failover does to them):
    the write rides out the outage (as a boundary does) instead of stopping the execution,
    so the run finishes with the effect confirmed, the light called once, nobody asked."""
    url, _, _ = cluster
    light = tmp_path / "light.db"
    started = run_cli(
        url, "start", "charging", "--app", OUTAGE_APP, "--input", json.dumps({"light": str(light)})
    )
    run_id = started.stdout.split()[1]
    gates = Gates(tmp_path / "gates", "charge")
    in_flight = Waypoint(gates.folder / "charge.reached")
    worker = start_worker(url, OUTAGE_APP, "--poll", "0.05", env=cli_env(**gates.env("charge")))
    try:
        in_flight.wait(worker)  # the call is in flight
        with _connections_ended(url):  # every connection of the worker dies, again and again
            gates.open("charge")  # the call reaches the light; its outcome meets the outage
            met = read_until(worker, "could not reach the database", stderr=True)[-1]
            assert f"the move of effect default/charging/{run_id}/" in met, met
            assert met.rstrip().split(" to ")[1].startswith("confirmed"), met
        # the outage is over: the same write lands, the step commits, the run ends
        read_until(worker, f"run {run_id} ")
        shown = json.loads(run_cli(url, "show", run_id, "--json").stdout)
    finally:
        gates.open_all()
        in_flight.close()
        worker.send_signal(signal.SIGTERM)
        worker.communicate(timeout=60)
    assert shown.get("status") == "SUCCEEDED", shown
    (effect,) = shown["effects"]  # type: ignore[misc]
    assert effect["status"] == "confirmed" and effect["attempts"] == 1
    assert SmartLight(light).status()["commands"] == 1


def _bookings(ledger: Path) -> dict[str, int]:
    """How many commands the ledger applied, per booking key."""
    import sqlite3

    with contextlib.closing(sqlite3.connect(ledger)) as conn:
        rows = conn.execute("SELECT op_id, count(*) FROM commands GROUP BY op_id").fetchall()
    return {str(key): int(n) for key, n in rows}


def test_two_workers_through_restarts_and_a_stopped_server_book_each_run_once(
    cluster: tuple[str, Path, int], tmp_path: Path
) -> None:
    """The outage drill: two workers with short leases work through runs whose third step
    books into a ledger that applies every command it receives, while the server is restarted
    fast, restarted immediately (no shutdown checkpoint, connections cut), then stopped for a
    few seconds, longer than a lease, and started. Leases run out during the outage, so the
    workers take each other's runs over when it ends, while their own writes ride it out under
    fences that moved on: every run still books exactly once. The booking takes 0.3 s, longer
    than the margin a worker keeps before its lease runs out, so a call can still be in flight
    when its run is taken over: its deadline makes the taker wait for it instead of booking again
    (without one, that is the documented limit of a provider that does not deduplicate)."""
    url, data, port = cluster
    ledger = tmp_path / "ledger.db"
    SmartLight(ledger, initial=50)  # its tables exist before any worker books
    total = 40
    runs = [
        run_cli(
            url,
            "start",
            "booking",
            "--app",
            OUTAGE_APP,
            "--input",
            json.dumps({"ledger": str(ledger)}),
        ).stdout.split()[1]
        for _ in range(total)
    ]
    args = ("--concurrency", "4", "--poll", "0.02", "--lease", "2")
    env = cli_env(BOOKING_SECONDS="0.3", BOOKING_DEADLINE="4")
    workers = [start_worker(url, OUTAGE_APP, *args, env=env) for _ in range(2)]
    ctl = [str(BIN / "pg_ctl"), "-D", str(data), "-w"]
    where = ["-o", f"-p {port} -k {data.parent}", "-l", str(data.parent / "log")]
    try:
        deadline = time.monotonic() + 60
        while len(_bookings(ledger)) < 4 and time.monotonic() < deadline:
            time.sleep(0.02)  # bounded: the drill starts once the workers are booking
        _as_postgres(*ctl, "-m", "fast", *where, "restart")
        _as_postgres(*ctl, "-m", "immediate", *where, "restart")
        _as_postgres(*ctl, "-m", "immediate", "stop")
        time.sleep(3)  # the server is down for longer than a lease: real time, as an outage is
        _as_postgres(*ctl, *where, "start")
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            out = run_cli(url, "runs", "--json", "--limit", "1000")
            done = list(json.loads(out.stdout)) if out.returncode == 0 else []
            if len(done) == total and all(r["status"] == "SUCCEEDED" for r in done):
                break
            time.sleep(0.2)
    finally:
        for worker in workers:
            worker.send_signal(signal.SIGTERM)
        for worker in workers:
            worker.communicate(timeout=60)
    statuses = {
        r["run_id"]: r["status"]
        for r in json.loads(run_cli(url, "runs", "--json", "--limit", "1000").stdout)
    }
    assert sorted(statuses) == sorted(runs)
    assert set(statuses.values()) == {"SUCCEEDED"}, statuses
    booked = _bookings(ledger)
    assert len(booked) == total, "every run booked"
    assert {k: n for k, n in booked.items() if n != 1} == {}, "no booking was applied twice"
