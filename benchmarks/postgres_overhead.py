"""Step overhead of perdure on PostgreSQL at 1, 4 and 16 concurrent runs, beside its peers.

Workload: a linear workflow of 20 no-op steps. At each concurrency level N, N threads run at once;
each has its own connection(s) and runs ``runs / N`` runs one after another, so N runs are in
flight at any time. Every system creates each run and drives it to completion inside the timed
section (connecting and one warm-up run per thread happen before it):

* perdure (``sync`` by default; ``--modes sync,async,exit``): each thread has its own
  ``Runtime`` (its own ``PostgresStore`` pool, at most 2 connections) and its own tenant; a run
  is ``rt.start(...)`` then ``rt.advance_claimed(rt.claim_next(tenant=...))``, the worker's claim path
  (``FOR UPDATE SKIP LOCKED``). Commit latency is the time of each ``Store.commit`` call: one
  step boundary in ``sync`` mode; in ``async`` and ``exit`` one call commits a batch of
  boundaries, so its latency is per batch, not per step.
* LangGraph ``PostgresSaver`` (``langgraph-checkpoint-postgres``), when installed: each thread
  has its own saver on its own connection (``PostgresSaver.from_conn_string``, the documented
  way; one saver serialises its callers behind a lock), and a run is one ``graph.invoke`` on a
  fresh ``thread_id`` with the same durability mode. Commit latency is the time of each
  ``PostgresSaver.put`` (one checkpoint per superstep, plus the input checkpoint); the
  ``put_writes`` calls beside it are in the throughput but not in the latency.
* DBOS with a PostgreSQL system database, when installed (compared with ``sync``: DBOS records
  every step before the next one starts): one DBOS instance for the process, launched after the
  others were measured; a run is one call of a workflow that calls a no-op ``@DBOS.step`` 20
  times. Commit latency is the time of each step call, which checks for and records its output.
* Floor: one single-row ``INSERT`` committed in autocommit mode per step, each thread on its
  own connection: the least any system pays that makes each step durable with its own commit.

Every system runs with the server's ``synchronous_commit`` (perdure sets it ``on`` per
connection; the peers inherit the server default, printed at the top). Threads, not processes,
are used so that every system is measured the same way; with 16 threads the interpreter lock is
part of what is measured, for all of them alike.

Each run of the benchmark creates a fresh database ``perdure_bench_<pid>`` (and
``perdure_bench_<pid>_dbos`` for DBOS's system database) on the server named by ``--dsn``
(default: ``PERDURE_BENCH_PG_DSN``, then ``PERDURE_TEST_PG_DSN``) and drops them at the end.
The peers are optional and imported only when installed; a missing one prints "not installed".

Run: ``python benchmarks/postgres_overhead.py [--runs 128] [--steps 20] [--levels 1,4,16]
[--modes sync]``. Figures vary with the disk and the server; compare ratios, not absolutes.
Nothing is asserted.
"""

from __future__ import annotations

import argparse
import functools
import importlib.metadata
import importlib.util
import math
import os
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))

from step_overhead import linear

from perdure import Runtime
from perdure.store.postgres.store import PostgresStore

#: Distribution name -> a module that must be importable for the peer to run.
PEERS = {
    "langgraph": "langgraph.graph",
    "langgraph-checkpoint-postgres": "langgraph.checkpoint.postgres",
    "dbos": "dbos",
}

BASELINE = "PostgreSQL commit (1-row INSERT)"
DBOS = "DBOS (PostgreSQL)"


@dataclass
class Level:
    """What one system did at one concurrency level."""

    label: str
    concurrency: int
    steps: int
    seconds: float
    commits: list[float] = field(default_factory=list)

    @property
    def steps_per_second(self) -> float:
        return self.steps / self.seconds

    def percentile_ms(self, q: float) -> float:
        """The ``q`` quantile (nearest rank) of the commit latencies, in milliseconds."""
        if not self.commits:
            return float("nan")
        ordered = sorted(self.commits)
        rank = min(len(ordered), max(1, math.ceil(q * len(ordered)))) - 1
        return ordered[rank] * 1e3


class Samples:
    """Latency lists of several threads (each appends to its own list), merged at the end."""

    def __init__(self) -> None:
        self._lists: list[list[float]] = []
        self._lock = threading.Lock()

    def add(self, samples: list[float]) -> None:
        with self._lock:
            self._lists.append(samples)

    def all(self) -> list[float]:
        with self._lock:
            return [x for samples in self._lists for x in samples]


def done_steps(concurrency: int, runs: int, steps: int) -> int:
    """Steps executed in the timed section: each thread runs ``runs // concurrency`` runs."""
    return runs // concurrency * concurrency * steps


def available() -> dict[str, str | None]:
    """Installed version of each peer distribution, or None (nothing heavy is imported)."""
    found: dict[str, str | None] = {}
    for dist, module in PEERS.items():
        try:
            spec = importlib.util.find_spec(module)
            found[dist] = importlib.metadata.version(dist) if spec is not None else None
        except (ImportError, ValueError, importlib.metadata.PackageNotFoundError):
            found[dist] = None
    return found


def run_threads(
    concurrency: int, prepare: Callable[[int], Callable[[], None]], runs_each: int
) -> float:
    """Run ``concurrency`` threads; each calls ``prepare(i)`` (untimed: connect, warm up) to get
    its ``one_run``, waits for the others, then calls ``one_run`` ``runs_each`` times. Returns
    the wall time from the common start to the last thread's end."""
    barrier = threading.Barrier(concurrency + 1)
    errors: list[BaseException] = []

    def body(i: int) -> None:
        try:
            one_run = prepare(i)
        except BaseException as exc:
            errors.append(exc)
            barrier.abort()
            raise
        barrier.wait()
        try:
            for _ in range(runs_each):
                one_run()
        except BaseException as exc:
            errors.append(exc)
            raise

    threads = [threading.Thread(target=body, args=(i,), daemon=True) for i in range(concurrency)]
    for t in threads:
        t.start()
    try:
        barrier.wait()
    except threading.BrokenBarrierError:
        for t in threads:
            t.join()
        raise RuntimeError(f"a thread failed while preparing: {errors[0]!r}") from errors[0]
    began = time.perf_counter()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - began
    if errors:
        raise RuntimeError(f"a thread failed: {errors[0]!r}") from errors[0]
    return elapsed


# -- databases ------------------------------------------------------------------------------------


def database_url(dsn: str, name: str) -> str:
    return urlsplit(dsn)._replace(path=f"/{name}").geturl()


@contextmanager
def fresh_database(dsn: str, name: str) -> Iterator[str]:
    """Create database ``name`` on the server of ``dsn``; drop it (closing its connections) on
    exit."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield database_url(dsn, name)
    finally:
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


@contextmanager
def database(kind: str, folder: Path, dsn: str | None, name: str) -> Iterator[str]:
    """A database for one benchmark case: a SQLite file ``name`` in ``folder``, or a fresh
    PostgreSQL database ``name`` on the server of ``dsn`` (dropped after)."""
    if kind == "sqlite":
        yield f"sqlite:///{folder / (name + '.db')}"
        return
    if not dsn:
        raise SystemExit("--db postgres needs --dsn (or PERDURE_BENCH_PG_DSN)")
    with fresh_database(dsn, name) as url:
        yield url


def server_settings(url: str) -> str:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        version = conn.execute("SHOW server_version").fetchone()
        rows = conn.execute(
            "SELECT name, setting FROM pg_settings"
            " WHERE name IN ('synchronous_commit', 'fsync', 'wal_sync_method') ORDER BY name"
        ).fetchall()
    settings = ", ".join(f"{name}={value}" for name, value in rows)
    return f"PostgreSQL {version[0] if version else '?'}: {settings}"


# -- baseline -------------------------------------------------------------------------------------


def baseline_level(url: str, concurrency: int, runs: int, steps: int) -> Level:
    """One autocommit single-row INSERT per step, each thread on its own connection."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS bench_commits (id bigint GENERATED ALWAYS AS IDENTITY"
            " PRIMARY KEY, run text NOT NULL, step integer NOT NULL, payload bytea)"
        )
    samples = Samples()
    conns: list[Any] = []

    def prepare(i: int) -> Callable[[], None]:
        conn = psycopg.connect(url, autocommit=True)
        conns.append(conn)
        payload = b"x" * 32
        mine: list[float] = []

        def one_run() -> None:
            run = uuid.uuid4().hex
            for s in range(steps):
                began = time.perf_counter()
                conn.execute(
                    "INSERT INTO bench_commits (run, step, payload) VALUES (%s, %s, %s)",
                    (run, s, payload),
                )
                mine.append(time.perf_counter() - began)

        one_run()  # warm-up
        mine.clear()
        samples.add(mine)
        return one_run

    try:
        seconds = run_threads(concurrency, prepare, runs // concurrency)
    finally:
        for conn in conns:
            conn.close()
    return Level(
        BASELINE, concurrency, done_steps(concurrency, runs, steps), seconds, samples.all()
    )


# -- perdure --------------------------------------------------------------------------------------


class TimedStore(PostgresStore):
    """A PostgresStore that records how long each step-boundary commit takes."""

    samples: list[float]

    def commit(self, *args: Any, **kwargs: Any) -> int:
        began = time.perf_counter()
        try:
            return super().commit(*args, **kwargs)
        finally:
            self.samples.append(time.perf_counter() - began)


def perdure_level(url: str, mode: str, concurrency: int, runs: int, steps: int) -> Level:
    wf = linear(steps)
    samples = Samples()
    runtimes: list[Runtime] = []

    def prepare(i: int) -> Callable[[], None]:
        store = TimedStore(url, max_connections=2)
        store.samples = []
        rt = Runtime(store, workflows=[wf], migrate=False)
        runtimes.append(rt)
        tenant = f"bench-{concurrency}-{i}"

        def one_run() -> None:
            rt.start(wf, tenant=tenant, durability=mode)
            claimed = rt.claim_next(tenant=tenant)
            stopped = None if claimed is None else rt.advance_claimed(claimed)
            if stopped is None or stopped.reason != "ended":
                raise RuntimeError(f"run did not end: {stopped}")

        one_run()  # warm-up: connections, prepared statements
        store.samples = []
        samples.add(store.samples)
        return one_run

    try:
        seconds = run_threads(concurrency, prepare, runs // concurrency)
    finally:
        for rt in runtimes:
            rt.close()
    label = f"perdure {mode}"
    return Level(label, concurrency, done_steps(concurrency, runs, steps), seconds, samples.all())


# -- LangGraph PostgresSaver ----------------------------------------------------------------------


@functools.cache
def timed_saver_class() -> type[Any]:
    from langgraph.checkpoint.postgres import PostgresSaver

    class TimedSaver(PostgresSaver):
        """A PostgresSaver that records how long each checkpoint ``put`` takes."""

        samples: list[float]

        def put(self, *args: Any, **kwargs: Any) -> Any:
            began = time.perf_counter()
            try:
                return super().put(*args, **kwargs)
            finally:
                self.samples.append(time.perf_counter() - began)

    return TimedSaver


def langgraph_setup(url: str) -> None:
    with timed_saver_class().from_conn_string(url) as saver:
        saver.setup()


def langgraph_level(url: str, mode: str, concurrency: int, runs: int, steps: int) -> Level:
    from peers import _build_langgraph

    saver_class = timed_saver_class()
    samples = Samples()
    stacks: list[ExitStack] = []

    def prepare(i: int) -> Callable[[], None]:
        stack = ExitStack()
        stacks.append(stack)
        saver = stack.enter_context(saver_class.from_conn_string(url))
        saver.samples = []
        graph = _build_langgraph(steps, saver)
        config_base = {"recursion_limit": steps + 10}
        prefix = f"{concurrency}-{i}-"
        counter = iter(range(1_000_000))

        def one_run() -> None:
            config: Any = {**config_base, "configurable": {"thread_id": f"{prefix}{next(counter)}"}}
            result = graph.invoke({"count": 0}, config, durability=mode)
            if result["count"] != steps:
                raise RuntimeError(f"graph ran {result['count']} of {steps} steps")

        one_run()  # warm-up
        saver.samples = []
        samples.add(saver.samples)
        return one_run

    try:
        seconds = run_threads(concurrency, prepare, runs // concurrency)
    finally:
        for stack in stacks:
            stack.close()
    label = f"LangGraph PostgresSaver {mode}"
    return Level(label, concurrency, done_steps(concurrency, runs, steps), seconds, samples.all())


# -- DBOS -----------------------------------------------------------------------------------------

_DBOS_THREAD = threading.local()
"""Each benchmark thread's list of step-call times (DBOS runs a called workflow in the caller's
thread)."""


@functools.cache
def dbos_workflow() -> Callable[[int], int]:
    """Register the workflow and its step with DBOS once per process (before launch)."""
    from dbos import DBOS

    @DBOS.step(name="perdure_pg_bench.noop_step")
    def noop_step(i: int) -> int:
        return i

    @DBOS.workflow(name="perdure_pg_bench.linear_workflow")
    def linear_workflow(steps: int) -> int:
        samples: list[float] | None = getattr(_DBOS_THREAD, "samples", None)
        done = 0
        for i in range(steps):
            began = time.perf_counter()
            noop_step(i)
            if samples is not None:
                samples.append(time.perf_counter() - began)
            done += 1
        return done

    return linear_workflow


@contextmanager
def dbos_launched(url: str, pool: int) -> Iterator[Callable[[int], int]]:
    from dbos import DBOS, DBOSConfig

    workflow = dbos_workflow()
    config: DBOSConfig = {
        "name": "perdure-pg-bench",
        "system_database_url": url,
        "sys_db_pool_size": pool,
        "log_level": "WARNING",
        "run_admin_server": False,
    }
    DBOS(config=config)
    try:
        DBOS.launch()
        yield workflow
    finally:
        DBOS.destroy()


def dbos_level(workflow: Callable[[int], int], concurrency: int, runs: int, steps: int) -> Level:
    samples = Samples()

    def prepare(i: int) -> Callable[[], None]:
        def one_run() -> None:
            done = workflow(steps)
            if done != steps:
                raise RuntimeError(f"workflow ran {done} of {steps} steps")

        one_run()  # warm-up
        _DBOS_THREAD.samples = []
        samples.add(_DBOS_THREAD.samples)
        return one_run

    seconds = run_threads(concurrency, prepare, runs // concurrency)
    return Level(DBOS, concurrency, done_steps(concurrency, runs, steps), seconds, samples.all())


# -- report ---------------------------------------------------------------------------------------


def line(level: Level, base: Level | None) -> str:
    text = (
        f"  N={level.concurrency:<3} {level.label:<32} {level.steps_per_second:7.0f} steps/s"
        f"  commit p50 {level.percentile_ms(0.5):6.2f} ms  p99 {level.percentile_ms(0.99):6.2f} ms"
    )
    if base is not None:
        text += f"  {base.steps_per_second / level.steps_per_second:5.1f}x floor"
    return text


def summary(results: dict[tuple[str, int], Level], levels: list[int], modes: list[str]) -> None:
    """Ratios of perdure against each peer measured, per concurrency level."""
    print("ratios (steps/s of perdure / steps/s of the peer; > 1: perdure is faster):")
    for mode in modes:
        ours_label = f"perdure {mode}"
        peers = [f"LangGraph PostgresSaver {mode}"] + ([DBOS] if mode == "sync" else [])
        for peer_label in peers:
            cells = []
            for n in levels:
                ours, peer = results.get((ours_label, n)), results.get((peer_label, n))
                if ours is None or peer is None:
                    continue
                ratio = ours.steps_per_second / peer.steps_per_second
                cells.append(
                    f"N={n}: {ratio:.2f}x (commit p50 {ours.percentile_ms(0.5):.2f}"
                    f" vs {peer.percentile_ms(0.5):.2f} ms)"
                )
            if cells:
                print(f"  {ours_label} vs {peer_label}: " + "; ".join(cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--dsn",
        default=os.environ.get("PERDURE_BENCH_PG_DSN") or os.environ.get("PERDURE_TEST_PG_DSN"),
        help="server to create the scratch databases on (default: PERDURE_BENCH_PG_DSN, "
        "then PERDURE_TEST_PG_DSN)",
    )
    parser.add_argument("--runs", type=int, default=128, help="runs per system and level")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--levels", default="1,4,16", help="concurrent runs, comma-separated")
    parser.add_argument("--modes", default="sync", help="perdure/LangGraph durability modes")
    parser.add_argument(
        "--only-perdure", action="store_true", help="the floor and perdure, not the peers"
    )
    args = parser.parse_args()
    if not args.dsn:
        parser.error(
            "no server: pass --dsn postgresql://user@host:5432/postgres or set PERDURE_BENCH_PG_DSN"
        )
    levels = [int(n) for n in args.levels.split(",")]
    modes = [m.strip() for m in args.modes.split(",")]
    have = available()
    if args.only_perdure:
        have = dict.fromkeys(have)
    with_langgraph = bool(have["langgraph"] and have["langgraph-checkpoint-postgres"])
    name = f"perdure_bench_{os.getpid()}"
    results: dict[tuple[str, int], Level] = {}

    def keep(level: Level) -> None:
        results[(level.label, level.concurrency)] = level
        print(line(level, results.get((BASELINE, level.concurrency))), flush=True)

    with fresh_database(args.dsn, name) as url:
        print(server_settings(url))
        print(
            f"{args.steps} no-op steps per run, {args.runs} runs per system and level; "
            "N threads = N concurrent runs; floor = one 1-row INSERT commit per step"
        )
        print("peers: " + ", ".join(f"{k} {v or 'not installed'}" for k, v in have.items()))
        store = PostgresStore(url)
        store.migrate(datetime.now(UTC))
        store.close()
        if with_langgraph:
            langgraph_setup(url)
        for n in levels:
            keep(baseline_level(url, n, args.runs, args.steps))
            for mode in modes:
                keep(perdure_level(url, mode, n, args.runs, args.steps))
            for mode in modes if with_langgraph else []:
                keep(langgraph_level(url, mode, n, args.runs, args.steps))
        if not with_langgraph:
            print("  LangGraph PostgresSaver: not installed (langgraph-checkpoint-postgres)")
        if have["dbos"]:
            # DBOS is one instance per process with background threads: it is launched after
            # the others are measured, on its own system database, once for every level.
            with (
                fresh_database(args.dsn, f"{name}_dbos") as dbos_url,
                dbos_launched(dbos_url, max(levels) + 4) as workflow,
            ):
                for n in levels:
                    keep(dbos_level(workflow, n, args.runs, args.steps))
        else:
            print("  DBOS: not installed (pip install dbos)")
    summary(results, levels, modes)


if __name__ == "__main__":
    main()
