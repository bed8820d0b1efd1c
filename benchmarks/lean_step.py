"""Client CPU of a plain step and of a recorded call, against the bare driver, on both databases.

For each database it prints, in one run:

* **CPU per plain step**: process CPU time (``time.process_time``: user and system time of this
  process, every thread) of ``--runs`` runs of ``--steps`` no-op ``sync`` steps advanced inline
  (``run_until_idle``: claims, steps, the ends of the runs), divided by the steps; beside it the
  **bare driver**: the same clock around one-row ``BEGIN; INSERT; COMMIT`` on SQLite (WAL,
  ``synchronous=FULL``) and one-row ``INSERT`` in autocommit with psycopg on PostgreSQL, and the
  ratio of the two.
* **CPU per recorded call**: ``--calls`` no-op ``ctx.effect`` calls in one step, minus the same
  step without them, per call; and its ratio to a plain step. Twice: effects without a
  reconciler (intent, ``executing``, outcome: three writes), and with one (the intent recorded
  ``executing``, then the outcome: two writes), as recorded model calls are.
* **Statements per plain step and per recorded call**: on SQLite the statements the connection
  ran (``sqlite3``'s trace callback, ``BEGIN`` and ``COMMIT`` included); on PostgreSQL the
  round trips (a run of messages the client sent, then one the server sent, in libpq's
  protocol trace, on a store with one pooled connection). Counted as the difference between a
  run of ``--steps`` steps and a run of one step (per step), and between a step with
  ``--calls`` recorded calls and a step without (per call), so claims and ends cancel out.

Every figure is the median of ``--rounds`` rounds. The PostgreSQL part makes a scratch database
on the server named by ``--dsn`` (default ``PERDURE_BENCH_PG_DSN``, then
``PERDURE_TEST_PG_DSN``) and drops it; without one, only SQLite is measured.

Run: ``python benchmarks/lean_step.py [--runs 100] [--steps 20] [--calls 100] [--rounds 3]``.
Compare two versions by running this file with each one's interpreter (see README.md).
Nothing is asserted.

CPU time moves with whatever else the machine runs. Instructions do not: ``--workload W`` only
runs one workload (``steps`` or ``calls`` on ``--db sqlite`` or ``postgres``, or ``bare``:
the bare driver's commits, ``--runs`` x ``--steps`` of them), for a counter to wrap, e.g.
``valgrind --tool=callgrind --callgrind-out-file=/dev/null python benchmarks/lean_step.py
--workload steps --db sqlite --runs 5`` and again with ``--runs 15``: the difference of the
two counts over 200 steps is the instructions of one step, the interpreter's start and the
imports left out. (``calls``: runs of the two-step workflow with ``--calls`` calls, with a
reconciler under ``--reconcile``; compare ``--calls 10`` with ``--calls 30``, so that what the
first call of a process loads cancels out.)
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import count, pairwise
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fleet_app
from postgres_overhead import fresh_database

from perdure import Context, Runtime, Workflow, done, goto, step
from perdure.store.base import Store

_names = count()


@dataclass
class Empty:
    n: int = 0


def cpu_us(action: Callable[[], object], per: int) -> float:
    """Process CPU microseconds of ``action``, divided by ``per``."""
    began = time.process_time()
    action()
    return (time.process_time() - began) / per * 1e6


# -- the bare drivers ---------------------------------------------------------------------


def bare_sqlite_us(folder: Path, n: int) -> float:
    """CPU per ``BEGIN; INSERT one row; COMMIT`` (WAL, synchronous=FULL)."""
    conn = sqlite3.connect(folder / f"bare-{next(_names)}.db", isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("CREATE TABLE steps (id INTEGER PRIMARY KEY, run TEXT, step INTEGER, p BLOB)")
    payload = b"x" * 32

    def commits() -> None:
        for i in range(n):
            conn.execute("BEGIN")
            conn.execute("INSERT INTO steps (run, step, p) VALUES (?, ?, ?)", ("r", i, payload))
            conn.execute("COMMIT")

    try:
        return cpu_us(commits, n)
    finally:
        conn.close()


def bare_postgres_us(url: str, n: int) -> float:
    """CPU per one-row ``INSERT`` in autocommit with psycopg (``synchronous_commit=on``)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET synchronous_commit = on")
        conn.execute(
            "CREATE TABLE IF NOT EXISTS bare_steps "
            "(id bigserial PRIMARY KEY, run text, step int, p bytea)"
        )
        payload = b"x" * 32

        def commits() -> None:
            for i in range(n):
                conn.execute(
                    "INSERT INTO bare_steps (run, step, p) VALUES (%s, %s, %s)", ("r", i, payload)
                )

        return cpu_us(commits, n)


# -- perdure ------------------------------------------------------------------------------


def plain_step_us(open_store: Callable[[], Store], runs: int, steps: int) -> float:
    """CPU per step of ``runs`` runs of ``steps`` no-op sync steps, advanced inline."""
    wf = fleet_app.linear(steps, f"lean{next(_names)}")
    with Runtime(open_store(), workflows=[wf]) as rt:
        rt.start(wf)
        rt.run_until_idle()  # warm-up
        for _ in range(runs):
            rt.start(wf)
        return cpu_us(rt.run_until_idle, runs * steps)


def effects_workflow(calls: int, reconciled: bool = False) -> Workflow[Empty]:
    """A no-op step, then a step making ``calls`` no-op recorded calls (with a reconciler when
    ``reconciled``): the calls are in a step occurrence after the first of the execution, as an
    agent's calls mostly are (the first occurrence of an execution may be a re-execution, and
    reads each effect's record first)."""
    reconcile = (lambda r, k: None) if reconciled else None

    @step(next=["act"])
    def start(ctx: Context, s: Empty):  # type: ignore[no-untyped-def]
        return goto("act")

    @step
    def act(ctx: Context, s: Empty):  # type: ignore[no-untyped-def]
        for i in range(calls):
            ctx.effect(
                f"e{i}",
                target="t",
                operation="o",
                request=i,
                execute=lambda r, k: r,
                reconcile=reconcile,
            )
        return done(None)

    return Workflow(f"calls{calls}x{next(_names)}", state=Empty, steps=[start, act])


def recorded_call_us(
    open_store: Callable[[], Store], calls: int, reconciled: bool = False, runs: int = 4
) -> float:
    """CPU per no-op recorded call: ``runs`` runs of one step with ``calls`` calls, minus the
    same runs of a step without calls."""
    spent = []
    for n in (calls, 0):
        wf = effects_workflow(n, reconciled)
        with Runtime(open_store(), workflows=[wf]) as rt:
            rt.start(wf)
            rt.run_until_idle()  # warm-up
            for _ in range(runs):
                rt.start(wf)
            spent.append(cpu_us(rt.run_until_idle, runs))
    return (spent[0] - spent[1]) / calls


# -- counting statements and round trips --------------------------------------------------


Counter = Callable[[Store, Callable[[], object]], int]


def sqlite_statements(store: Store, action: Callable[[], object]) -> int:
    """Statements the calling thread's connection ran during ``action``."""
    conn = store.driver._conn()  # type: ignore[attr-defined]
    seen: list[str] = []
    conn.set_trace_callback(seen.append)
    try:
        action()
    finally:
        conn.set_trace_callback(None)
    return len(seen)


def postgres_round_trips(store: Store, action: Callable[[], object]) -> int:
    """Waits for the server on the one pooled connection of ``store`` during ``action``."""
    pool = store.driver._pool  # type: ignore[attr-defined]
    with tempfile.NamedTemporaryFile("w+", suffix=".trace") as out:
        with pool.connection() as conn:
            conn.pgconn.trace(out.fileno())
        try:
            action()
        finally:
            with pool.connection() as conn:
                conn.pgconn.untrace()
        lines = Path(out.name).read_text().splitlines()
    directions = [line.split("\t")[1] for line in lines if "\t" in line]
    return sum(1 for pair in pairwise(directions) if pair == ("F", "B"))


def counted(open_store: Callable[[], Store], wf: Workflow[Any], counter: Counter) -> int:
    """Statements or round trips of one run of ``wf``, from its claim to its end."""
    with Runtime(open_store(), workflows=[wf]) as rt:
        for _ in range(5):  # warm-up: psycopg prepares a statement on its fifth use
            rt.start(wf)
        rt.run_until_idle()
        rt.start(wf)
        return counter(rt.store, rt.run_until_idle)


def per_step(open_store: Callable[[], Store], steps: int, counter: Counter) -> float:
    many = counted(open_store, fleet_app.linear(steps + 1, f"c{next(_names)}"), counter)
    one = counted(open_store, fleet_app.linear(1, f"c{next(_names)}"), counter)
    return (many - one) / steps


def per_call(
    open_store: Callable[[], Store], calls: int, counter: Counter, reconciled: bool = False
) -> float:
    many = counted(open_store, effects_workflow(calls, reconciled), counter)
    none = counted(open_store, effects_workflow(0), counter)
    return (many - none) / calls


# -- the report ---------------------------------------------------------------------------


@dataclass
class Figures:
    bare: float
    step: float
    call: float
    reconciled_call: float
    step_count: float
    call_count: float
    reconciled_call_count: float


def measure(
    open_store: Callable[[], Store],
    bare: Callable[[int], float],
    counter: Counter,
    args: argparse.Namespace,
) -> Figures:
    rounds: list[tuple[float, float, float, float]] = []
    for _ in range(args.rounds):
        rounds.append(
            (
                bare(args.runs * args.steps),
                plain_step_us(open_store, args.runs, args.steps),
                recorded_call_us(open_store, args.calls),
                recorded_call_us(open_store, args.calls, reconciled=True),
            )
        )
    bare_us, step_us, call_us, reconciled_us = (
        statistics.median(r[i] for r in rounds) for i in range(4)
    )
    return Figures(
        bare_us,
        step_us,
        call_us,
        reconciled_us,
        per_step(open_store, 10, counter),
        per_call(open_store, 10, counter),
        per_call(open_store, 10, counter, reconciled=True),
    )


def report(name: str, f: Figures, unit: str) -> None:
    print(f"{name}")
    print(f"  bare driver commit           {f.bare:8.1f} µs CPU")
    print(f"  plain step                   {f.step:8.1f} µs CPU  {f.step / f.bare:5.2f}x bare")
    print(f"  recorded call (no-op effect) {f.call:8.1f} µs CPU  {f.call / f.step:5.2f}x a step")
    r = f.reconciled_call
    print(f"  ... with a reconciler        {r:8.1f} µs CPU  {r / f.step:5.2f}x a step")
    print(f"  {unit} per plain step      {f.step_count:8.2f}")
    print(f"  {unit} per recorded call   {f.call_count:8.2f}")
    print(f"  ... with a reconciler        {f.reconciled_call_count:8.2f}")


@contextmanager
def postgres(dsn: str | None) -> Iterator[str | None]:
    if not dsn:
        yield None
        return
    with fresh_database(dsn, f"perdure_lean_{os.getpid()}") as url:
        yield url


def workload(args: argparse.Namespace) -> None:
    """Run one workload and nothing else (for an instruction counter to wrap); PostgreSQL in
    the database ``--dsn`` names, which it migrates."""
    from perdure.store.postgres.store import PostgresStore
    from perdure.store.sqlite.store import SqliteStore

    folder = Path(tempfile.mkdtemp(prefix="perdure-lean-"))
    n = args.runs * args.steps
    if args.workload == "bare":
        if args.db == "sqlite":
            bare_sqlite_us(folder, n)
        else:
            bare_postgres_us(args.dsn, n)
        return

    def open_store() -> Store:
        if args.db == "sqlite":
            return SqliteStore(folder / "lean.db")
        return PostgresStore(args.dsn, max_connections=2)

    wf = (
        fleet_app.linear(args.steps, f"lean{os.getpid()}")
        if args.workload == "steps"
        else effects_workflow(args.calls, args.reconcile)
    )
    with Runtime(open_store(), workflows=[wf]) as rt:
        for _ in range(3):
            rt.start(wf)
        rt.run_until_idle()  # warm-up
        for _ in range(args.runs):
            rt.start(wf)
        rt.run_until_idle()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    dsn = os.environ.get("PERDURE_BENCH_PG_DSN") or os.environ.get("PERDURE_TEST_PG_DSN")
    parser.add_argument("--dsn", default=dsn, help="a PostgreSQL server to make a database on")
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--db", default="sqlite,postgres", help="which databases")
    parser.add_argument("--workload", choices=["steps", "calls", "bare"], help="only run it")
    parser.add_argument(
        "--reconcile", action="store_true", help="calls workload: effects with a reconciler"
    )
    args = parser.parse_args()
    if args.workload:
        workload(args)
        return
    from perdure.store.postgres.store import PostgresStore
    from perdure.store.sqlite.store import SqliteStore

    print(
        f"{args.runs} runs x {args.steps} no-op sync steps; {args.calls} recorded calls in a "
        f"step; process CPU, median of {args.rounds} rounds ({datetime.now(UTC):%Y-%m-%d %H:%M})"
    )
    with tempfile.TemporaryDirectory(prefix="perdure-lean-") as tmp:
        folder = Path(tmp)
        if "sqlite" in args.db:

            def sqlite_store() -> Store:
                return SqliteStore(folder / f"lean-{next(_names)}.db")

            f = measure(sqlite_store, lambda n: bare_sqlite_us(folder, n), sqlite_statements, args)
            report("SQLite (WAL, synchronous=FULL)", f, "statements")
    if "postgres" in args.db:
        with postgres(args.dsn) as url:
            if url is None:
                print("PostgreSQL: no server given (--dsn or PERDURE_BENCH_PG_DSN)")
                return
            setup = PostgresStore(url)
            setup.migrate(datetime.now(UTC))
            setup.close()

            def pg_store() -> Store:
                return PostgresStore(url, max_connections=1)

            f = measure(pg_store, lambda n: bare_postgres_us(url, n), postgres_round_trips, args)
            report("PostgreSQL (synchronous_commit=on, 127.0.0.1)", f, "round trips")


if __name__ == "__main__":
    main()
