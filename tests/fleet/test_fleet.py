"""Several worker processes share one database; some are SIGKILLed, one is frozen past its lease.

The fleet test starts ``perdure worker`` processes (``--concurrency`` 1 and 2) on a fresh, empty
PostgreSQL database, starts a few hundred runs whose second step makes an effect on a counter
that does not deduplicate, SIGKILLs workers (every other time one that is inside the effect's
call) and starts replacements. Every run must succeed with its effect applied exactly once, each
step committed once by one fence, and no message written twice.

The zombie test freezes a worker (SIGSTOP) in the middle of a step, moves the shared test clock
past its lease, lets a second worker take the run over, then thaws the first, either after the
successor finished the run or while the successor is still in a later step: the stale commit
must be refused by the fence and change nothing. It runs on SQLite and PostgreSQL.

Nothing here sleeps for a fixed time where a poll works; every wait is bounded. The zombie's
lease expires by the shared test clock (``shared_clock``), not by waiting.
"""

from __future__ import annotations

import json
import random
import signal
import sqlite3
import subprocess
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from perdure import Runtime
from perdure.core.model import Event, StepRecord
from perdure.store.url import open_store
from perdure.testing import FileClock
from tests.backends import BACKENDS
from tests.conftest import ROOT, Gates, cli_env, entries, fresh_db_url, perdure_cmd, run_cli

FLEET_APP = "tests.apps.fleet_app"
COUNTING_APP = "tests.apps.counting"
RUNS = 200
WORKERS = 4
KILLS = 4
LEASE = 2.0
ZOMBIE_LEASE = 30.0
STEPS = ["prepare", "apply", "record", "finish"]
ALL_COUNTING = [f"s{i}" for i in range(1, 11)]
TENANT = "default"


def wait_for(
    predicate: Callable[[], bool], timeout: float, what: Callable[[], str] | str, poll: float = 0.05
) -> None:
    """Poll ``predicate`` until it holds; fail with ``what`` (or its result) after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return
        if time.monotonic() > deadline:
            detail = what() if callable(what) else what
            raise AssertionError(f"not reached within {timeout:.0f} s: {detail}")
        time.sleep(poll)


@dataclass
class WorkerProcess:
    """One ``perdure worker`` process, its output captured in files."""

    proc: subprocess.Popen[bytes]
    out: Path
    err: Path

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stdout(self) -> str:
        return self.out.read_text(errors="replace")

    def stderr(self) -> str:
        return self.err.read_text(errors="replace")


@dataclass
class Fleet:
    """Worker processes on one database; started, killed and stopped by the test."""

    db_url: str
    app: str
    folder: Path
    lease: float
    env: dict[str, str] = field(default_factory=dict)
    workers: list[WorkerProcess] = field(default_factory=list)

    def spawn(self, concurrency: int = 1, **extra_env: str) -> WorkerProcess:
        n = len(self.workers)
        out, err = self.folder / f"worker-{n}.out", self.folder / f"worker-{n}.err"
        args = ["worker", "--app", self.app, "--lease", str(self.lease), "--poll", "0.05"]
        args += ["--concurrency", str(concurrency)]
        with out.open("wb") as o, err.open("wb") as e:
            proc = subprocess.Popen(
                perdure_cmd(self.db_url, *args),
                env=cli_env(**self.env, **extra_env),
                cwd=ROOT,
                stdout=o,
                stderr=e,
            )
        worker = WorkerProcess(proc, out, err)
        self.workers.append(worker)
        return worker

    def alive(self) -> list[WorkerProcess]:
        return [w for w in self.workers if w.proc.poll() is None]

    def kill(self, worker: WorkerProcess) -> None:
        worker.proc.send_signal(signal.SIGKILL)
        assert worker.proc.wait(timeout=10) == -signal.SIGKILL

    def stop(self) -> dict[int, int]:
        """SIGTERM every live worker (thawing frozen ones) and return each one's exit code.

        A worker spawned a moment ago is first let reach its serving line (bounded): a SIGTERM
        that comes while the interpreter itself starts, before any perdure code runs, ends any
        Python process with -15 (one that comes later, while it imports its app or opens the
        store, ends it with 0: tests/cli/test_stopping_cli.py)."""
        codes: dict[int, int] = {}
        for w in self.alive():
            w.proc.send_signal(signal.SIGCONT)
        wait_for(lambda: all("serving" in w.stdout() for w in self.alive()), 60, self.logs)
        for w in self.alive():
            w.proc.send_signal(signal.SIGCONT)
            w.proc.send_signal(signal.SIGTERM)
        for w in self.workers:
            try:
                codes[w.pid] = w.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                w.proc.kill()
                codes[w.pid] = w.proc.wait(timeout=10)
        return codes

    def logs(self) -> str:
        parts = []
        for w in self.workers:
            tail = "\n".join((w.stdout() + w.stderr()).splitlines()[-8:])
            parts.append(f"--- worker pid {w.pid} (exit {w.proc.poll()}):\n{tail}")
        return "\n".join(parts)


@pytest.fixture
def fleet_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "fleet"
    folder.mkdir()
    return folder


# -- the fleet on PostgreSQL ----------------------------------------------------------------------


def pg_rows(url: str, query: str, params: Any = None) -> list[tuple[Any, ...]]:
    import psycopg

    with psycopg.connect(url, autocommit=True, connect_timeout=10) as conn:
        return conn.execute(query, params).fetchall()


def pg_execute(url: str, statement: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True, connect_timeout=10) as conn:
        conn.execute(statement)


def status_counts(url: str) -> Counter[str]:
    rows = pg_rows(url, "SELECT status, count(*) FROM perdure.runs GROUP BY status")
    return Counter({str(status): int(n) for status, n in rows})


def in_an_effect(fleet: Fleet, marks: Path) -> list[WorkerProcess]:
    """Live workers that are inside the effect's call right now (see FLEET_MARKS)."""
    return [w for w in fleet.alive() if any(marks.glob(f"{w.pid}-*.effect"))]


def run_the_fleet(url: str, folder: Path) -> dict[str, int]:
    """Start the workers and the runs, kill workers at random (every other kill one that is
    inside an effect), start replacements, and wait until every run succeeded. Returns the
    runs (run id -> input n); the workers are stopped on return."""
    from tests.apps.fleet_app import COUNTER_DDL, fleet_job

    pg_execute(url, COUNTER_DDL)
    marks = folder / "marks"
    marks.mkdir()
    env = {"FLEET_EFFECT_PAUSE": "0.03", "FLEET_MARKS": str(marks)}
    fleet = Fleet(url, FLEET_APP, folder, LEASE, env=env)
    rng = random.Random(20240611)
    killed: set[int] = set()

    def progress() -> str:
        return f"statuses {dict(status_counts(url))}\n{fleet.logs()}"

    def succeeded_at_least(n: int) -> Callable[[], bool]:
        def check() -> bool:
            counts = status_counts(url)
            if set(counts) - {"PENDING", "RUNNING", "SUCCEEDED"}:
                raise AssertionError(f"runs left the happy path: {progress()}")
            return counts["SUCCEEDED"] >= n

        return check

    try:
        # The workers start on an empty database and migrate it while the runs are created.
        for i in range(WORKERS):
            fleet.spawn(concurrency=1 + i % 2)
        with Runtime(url, workflows=[fleet_job]) as rt:
            runs = {rt.start(fleet_job, {"n": i, "counter": url}).run_id: i for i in range(RUNS)}
        for k in range(KILLS):
            wait_for(succeeded_at_least(RUNS * (k + 1) // (KILLS + 2)), 90, progress)
            victims = fleet.alive()
            if k % 2 == 0:
                deadline = time.monotonic() + 10
                while not in_an_effect(fleet, marks) and time.monotonic() < deadline:
                    time.sleep(0.002)
                victims = in_an_effect(fleet, marks) or victims
            victim = rng.choice(victims)
            fleet.kill(victim)
            killed.add(victim.pid)
            fleet.spawn(concurrency=1 + k % 2)
        wait_for(succeeded_at_least(RUNS), 120, progress)
    finally:
        codes = fleet.stop()
    survivors = {pid: code for pid, code in codes.items() if pid not in killed}
    assert set(survivors.values()) == {0}, f"workers exited with {survivors}\n{fleet.logs()}"
    for w in fleet.workers:
        assert "Traceback" not in w.stderr(), w.stderr()
    return runs


def test_a_fleet_with_workers_killed_at_random_finishes_every_run_with_one_effect_each(
    pg_empty_url: str, fleet_folder: Path
) -> None:
    url = pg_empty_url
    runs = run_the_fleet(url, fleet_folder)
    results = assert_every_run_succeeded(url, runs)
    assert_each_effect_applied_once(url, runs, results)
    assert_each_step_committed_once(url, runs)
    assert_killed_runs_were_taken_over(url)


def assert_every_run_succeeded(url: str, runs: dict[str, int]) -> dict[str, Any]:
    found = pg_rows(url, "SELECT run_id, status, result::text FROM perdure.runs")
    assert {rid for rid, _, _ in found} == set(runs)
    assert {status for _, status, _ in found} == {"SUCCEEDED"}
    results = {rid: json.loads(result) for rid, _, result in found}
    for rid, n in runs.items():
        assert {k: results[rid][k] for k in ("n", "doubled")} == {"n": n, "doubled": 2 * n}
    return results


def assert_each_effect_applied_once(
    url: str, runs: dict[str, int], results: dict[str, Any]
) -> None:
    """The counter has exactly one row per run's effect, and the run kept that row's id."""
    effects = pg_rows(
        url, "SELECT run_id, effect_key, status, (result->>'id')::bigint FROM perdure.effects"
    )
    assert sorted(rid for rid, *_ in effects) == sorted(runs), "one effect per run"
    assert {status for _, _, status, _ in effects} == {"confirmed"}
    applied = pg_rows(
        url, "SELECT effect_key, count(*), min(id) FROM public.fleet_counter GROUP BY effect_key"
    )
    duplicated = {key: int(n) for key, n, _ in applied if n != 1}
    assert not duplicated, f"effects applied more than once: {duplicated}"
    row_of = {key: row for key, _, row in applied}
    assert set(row_of) == {key for _, key, _, _ in effects}
    for rid, key, _, row in effects:
        assert row == row_of[key] == results[rid]["row"]


def assert_each_step_committed_once(url: str, runs: dict[str, int]) -> None:
    """Each step committed once, by one fence, in order (never a later step by an older fence);
    one ``step_completed`` event per step, by that fence; no message written twice."""
    steps = pg_rows(url, "SELECT run_id, seq, name, fence FROM perdure.steps ORDER BY run_id, seq")
    by_run: dict[str, list[tuple[int, str, int]]] = {}
    for rid, seq, name, fence in steps:
        by_run.setdefault(rid, []).append((int(seq), str(name), int(fence)))
    assert set(by_run) == set(runs)
    for rid, committed in by_run.items():
        assert [(seq, name) for seq, name, _ in committed] == list(enumerate(STEPS, start=1)), rid
        fences = [fence for _, _, fence in committed]
        assert fences == sorted(fences), f"run {rid}: a later step by an older fence {fences}"
    completed = pg_rows(
        url,
        "SELECT run_id, (data->>'seq')::int, step, fence FROM perdure.events"
        " WHERE type = 'step_completed'",
    )
    twice = [k for k, n in Counter((rid, seq) for rid, seq, _, _ in completed).items() if n > 1]
    assert not twice, f"steps with more than one step_completed event: {twice}"
    committed_by = {(rid, seq): (name, fence) for rid, seq, name, fence in steps}
    assert {(rid, seq): (name, fence) for rid, seq, name, fence in completed} == committed_by
    messages = pg_rows(url, "SELECT run_id, count(*) FROM perdure.messages GROUP BY run_id")
    assert {rid: int(n) for rid, n in messages} == dict.fromkeys(runs, 1)


def assert_killed_runs_were_taken_over(url: str) -> None:
    """The kills left runs behind that other workers took over, some in the middle of the
    effect (its call began under one fence and its outcome was recorded under another)."""
    taken_over = pg_rows(
        url,
        "SELECT run_id FROM perdure.events WHERE type = 'claimed' GROUP BY run_id"
        " HAVING count(*) > 1",
    )
    assert taken_over, "no run was taken over: no kill hit a worker holding a run"
    mid_effect = pg_rows(
        url,
        "SELECT DISTINCT began.run_id FROM perdure.events AS began"
        " JOIN perdure.events AS ended ON ended.run_id = began.run_id"
        " WHERE began.type = 'effect' AND began.data->>'to' = 'executing'"
        "   AND ended.type = 'effect' AND ended.data->>'to' = 'confirmed'"
        "   AND ended.fence > began.fence",
    )
    assert mid_effect, "no run was taken over in the middle of its effect"


# -- a frozen worker (zombie) ---------------------------------------------------------------------


@pytest.fixture(params=BACKENDS)
def any_db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return fresh_db_url(request, tmp_path, migrated=False)


def idle_in_database(db_url: str) -> bool:
    """True when no perdure connection is inside a statement or a transaction (PostgreSQL), or
    when the SQLite write lock is free: a frozen process then holds no lock others need."""
    if db_url.startswith("sqlite:///"):
        conn = sqlite3.connect(db_url.removeprefix("sqlite:///"), timeout=0.05)
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("ROLLBACK")
            return True
        except sqlite3.OperationalError:
            return False
        finally:
            conn.close()
    rows = pg_rows(
        db_url,
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
        " AND application_name = 'perdure' AND state <> 'idle'",
    )
    return int(rows[0][0]) == 0


def freeze(worker: WorkerProcess, db_url: str) -> None:
    """SIGSTOP the worker at a moment it holds no database lock (thaw and retry otherwise)."""
    for _ in range(50):
        worker.proc.send_signal(signal.SIGSTOP)
        if all(idle_in_database(db_url) for _ in range(3)):
            return
        worker.proc.send_signal(signal.SIGCONT)
        time.sleep(0.01)
    raise AssertionError("the worker was always inside a transaction when frozen")


def show(db_url: str, run_id: str) -> dict[str, Any]:
    out = run_cli(db_url, "show", run_id, "--json")
    assert out.returncode == 0, out.stderr
    data: dict[str, Any] = json.loads(out.stdout)
    return data


@pytest.mark.parametrize("wakes", ["after_the_run_ended", "while_the_successor_runs"])
def test_a_frozen_worker_that_wakes_after_a_takeover_commits_nothing(
    any_db_url: str, fleet_folder: Path, wakes: str, shared_clock: FileClock
) -> None:
    """The zombie is held in s5 and frozen; the shared test clock moves past its lease; a
    successor takes the run over and either finishes it or is held in s8 when the zombie is let
    go and tries to commit s5. Steps are held by gates the test opens, leases expire by the test
    clock: no wait depends on the wall clock."""
    db_url = any_db_url
    log = fleet_folder / "entries.log"
    gates = Gates(fleet_folder / "gates", "s5", "s8")
    out = run_cli(db_url, "start", "counting", "--app", COUNTING_APP)
    assert out.returncode == 0, out.stderr
    run_id = out.stdout.split()[1]
    during = wakes == "while_the_successor_runs"

    env = {"COUNTING_LOG": str(log)}
    fleet = Fleet(db_url, COUNTING_APP, fleet_folder, lease=ZOMBIE_LEASE, env=env)
    store = open_store(db_url)
    try:
        zombie = fleet.spawn(**gates.env("s5"))
        wait_for(lambda: entries(log, run_id)["s5"] == 1, 30, fleet.logs)
        freeze(zombie, db_url)
        shared_clock.advance(ZOMBIE_LEASE + 1)
        successor = fleet.spawn(**(gates.env("s8") if during else {}))
        if during:
            wait_for(lambda: entries(log, run_id)["s8"] == 1, 30, fleet.logs)
        else:
            wait_for(lambda: store.get_run(TENANT, run_id).status == "SUCCEEDED", 30, fleet.logs)
        gates.open("s5")
        zombie.proc.send_signal(signal.SIGCONT)
        wait_for(lambda: f"run {run_id} lost" in zombie.stdout(), 30, fleet.logs)
        if during:
            assert entries(log, run_id)["s9"] == 0, "the successor left s8 before the zombie woke"
            gates.open("s8")
            wait_for(lambda: store.get_run(TENANT, run_id).status == "SUCCEEDED", 30, fleet.logs)
        steps = store.steps(TENANT, run_id)
        events = store.events(TENANT, run_id)
    finally:
        gates.open_all()
        store.close()
        codes = fleet.stop()

    assert codes == {zombie.pid: 0, successor.pid: 0}, fleet.logs()
    assert "Traceback" not in zombie.stderr() + successor.stderr(), fleet.logs()
    assert f"run {run_id} ended" not in zombie.stdout()
    assert f"run {run_id} ended" in successor.stdout()

    final = show(db_url, run_id)
    assert (final["status"], final["result"]) == ("SUCCEEDED", {"total": 55})
    assert final["completed_steps"] == ALL_COUNTING
    assert entries(log, run_id) == Counter(ALL_COUNTING) + Counter(["s5"])

    assert_the_stale_commit_changed_nothing(steps, events)


def assert_the_stale_commit_changed_nothing(steps: list[StepRecord], events: list[Event]) -> None:
    """Two claims; the first four steps by the zombie's fence, the rest by the successor's; the
    zombie's late commit of s5 is refused and recorded."""
    claims = [e.fence for e in events if e.type == "claimed"]
    assert len(claims) == 2 and claims[0] is not None and claims[1] is not None
    first, second = claims
    assert second > first
    assert [(s.seq, s.name) for s in steps] == list(enumerate(ALL_COUNTING, start=1))
    assert [s.fence for s in steps] == [first] * 4 + [second] * 6
    completed = [(e.step, e.fence) for e in events if e.type == "step_completed"]
    assert completed == [(s.name, s.fence) for s in steps]
    # The frozen worker's commit of s5 under the old fence changed nothing: the run kept the
    # successor's s5, and no event carries the old fence after the takeover.
    takeover = next(e.seq for e in events if e.type == "claimed" and e.fence == second)
    assert [e for e in events if e.seq > takeover and e.fence == first] == []
    refused = [e.data["fence"] for e in events if e.type == "late_commit"]
    assert refused[:1] == [first], "the refused commit is on the record"
