"""Throughput under CPU starvation: 16 concurrent runs on PostgreSQL with CPU-burning processes
beside them, perdure against LangGraph's ``PostgresSaver`` in the same conditions.

Workload: ``postgres_overhead.py``'s (runs of 20 no-op steps, ``--concurrency`` in flight at
once, ``sync`` durability), measured in rounds that alternate the systems, each round once quiet
and once with ``--burners`` processes spinning ``while True: pass`` beside it (each on a core of
its own when the machine has as many). Systems:

* ``perdure, a Runtime per thread``: ``postgres_overhead.py``'s perdure: each of the N threads
  has its own ``Runtime`` (its own pool) and drives its runs with ``start`` + ``advance_one``;
* ``perdure worker``: one ``Runtime`` and one ``Worker(concurrency=N)`` draining the queued runs,
  as ``perdure worker --concurrency N`` does (its runs share commits: group commit); the runs
  are queued by N threads at once, as the other systems' N threads start theirs;
* ``perdure worker, 2 groups at once``: the same with ``GroupCommit(in_flight=2)`` (two group
  transactions in flight at once instead of one);
* ``perdure worker, no group commit``: the same with ``group_commit=False`` (each run commits
  alone: no run waits for another's transaction);
* ``LangGraph PostgresSaver``: ``postgres_overhead.py``'s, a saver per thread.

For each: steps per second over the system's timed section (every system first opens its
connections untimed; the per-thread systems also run one warm-up run per thread, whose steps
are not counted), and per step the process's CPU time and its context switches (voluntary: a
thread blocked, for the database or for another thread; involuntary: the kernel took the CPU
away), from ``getrusage`` around the whole body, and the transactions the server committed
(``pg_stat_database``; the one that reads the counter is not counted): those include the
warm-up runs, which add ``concurrency / runs`` to the per-thread systems' figures. The ratio
line compares each perdure system with LangGraph in the same round and condition.

Run: ``python benchmarks/starvation.py [--rounds 3] [--runs 128] [--burners 2]`` (PostgreSQL
from ``--dsn``, default ``PERDURE_BENCH_PG_DSN`` then ``PERDURE_TEST_PG_DSN``; a scratch
database is created and dropped). Nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from postgres_overhead import (
    Level,
    available,
    fresh_database,
    langgraph_level,
    langgraph_setup,
    perdure_level,
)
from step_overhead import linear

from perdure import Runtime
from perdure.runtime.grouping import GroupCommit
from perdure.runtime.worker import Worker
from perdure.store.postgres.store import PostgresStore


@dataclass
class Figures:
    steps_per_second: float
    cpu_us: float
    voluntary: float
    involuntary: float
    transactions: float


def server_transactions(url: str) -> int:
    """Transactions the server committed in the database so far (its statistics; a backend
    reports its own when it ends, and every connection of a system is closed after its run)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        time.sleep(1.2)  # backends report their statistics at most once a second
        conn.execute("SELECT pg_stat_clear_snapshot()")
        row = conn.execute(
            "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"
        ).fetchone()
    assert row is not None
    return int(row[0])


@contextmanager
def burning(n: int) -> Iterator[None]:
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        time.sleep(0.5)  # let the scheduler see them as CPU-bound
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


def measured(body: Callable[[], tuple[int, float]], url: str) -> Figures:
    """Run ``body`` (it returns the steps of its timed section and that section's seconds) and
    what it cost the process and the server."""
    committed = server_transactions(url)
    before = resource.getrusage(resource.RUSAGE_SELF)
    steps, wall = body()
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Figures(
        steps / wall,
        cpu / steps * 1e6,
        (after.ru_nvcsw - before.ru_nvcsw) / steps,
        (after.ru_nivcsw - before.ru_nivcsw) / steps,
        (server_transactions(url) - committed - 1) / steps,
    )


def worker_level(
    url: str, concurrency: int, runs: int, steps: int, group: GroupCommit | bool = True
) -> tuple[int, float]:
    """One Runtime, one Worker with ``concurrency`` runs in flight, draining ``runs`` queued
    runs; returns the steps done and the seconds from the first run queued to the last one
    ended. The runs are queued inside that section by ``concurrency`` threads, as the other
    systems' threads start theirs there. ``group``: the runtime's ``group_commit`` (how the
    runs share commit transactions)."""
    wf = linear(steps)
    with Runtime(url, workflows=[wf], migrate=False, group_commit=group) as rt:
        tenant = f"w{time.monotonic_ns()}"
        began = time.perf_counter()
        with ThreadPoolExecutor(concurrency) as clients:
            list(clients.map(lambda _: rt.start(wf, tenant=tenant), range(runs)))
        w = Worker(rt, concurrency=concurrency, poll_interval=0.05)
        w.run(until_idle=True)
        seconds = time.perf_counter() - began
    return runs * steps, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--dsn",
        default=os.environ.get("PERDURE_BENCH_PG_DSN") or os.environ.get("PERDURE_TEST_PG_DSN"),
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=128)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--burners", type=int, default=2)
    parser.add_argument("--systems", default="threads,worker,inflight2,nogroup,langgraph")
    args = parser.parse_args()
    have = available()
    systems = [s for s in args.systems.split(",") if s]
    if not (have["langgraph"] and have["langgraph-checkpoint-postgres"]):
        systems = [s for s in systems if s != "langgraph"]
        print("LangGraph PostgresSaver: not installed (the bench extra)")
    n, runs, steps = args.concurrency, args.runs, args.steps
    labels = {
        "threads": "perdure, a Runtime per thread",
        "worker": "perdure worker (one Runtime)",
        "inflight2": "perdure worker, 2 groups at once",
        "nogroup": "perdure worker, no group commit",
        "langgraph": "LangGraph PostgresSaver",
    }

    def timed(level: Level) -> tuple[int, float]:
        return level.steps, level.seconds

    bodies: dict[str, Callable[[str], tuple[int, float]]] = {
        "threads": lambda url: timed(perdure_level(url, "sync", n, runs, steps)),
        "worker": lambda url: worker_level(url, n, runs, steps),
        "inflight2": lambda url: worker_level(url, n, runs, steps, GroupCommit(in_flight=2)),
        "nogroup": lambda url: worker_level(url, n, runs, steps, group=False),
        "langgraph": lambda url: timed(langgraph_level(url, "sync", n, runs, steps)),
    }
    results: dict[tuple[str, str], list[Figures]] = {}
    print(
        f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} CPUs; {n} runs in flight, "
        f"{runs} runs x {steps} no-op steps, sync; {args.burners} burners in the 'burn' rows"
    )
    print(
        f"{'round':>5} {'condition':<6} {'system':<32} {'steps/s':>8} {'CPU us/step':>12} "
        f"{'vol cs/step':>12} {'invol cs/step':>14} {'xact/step':>10}"
    )
    with fresh_database(args.dsn, f"perdure_starve_{os.getpid()}") as url:
        store = PostgresStore(url)
        store.migrate(datetime.now(UTC))
        store.close()
        if "langgraph" in systems:
            langgraph_setup(url)
        for r in range(1, args.rounds + 1):
            for condition in ("quiet", "burn"):
                for system in systems if r % 2 else list(reversed(systems)):
                    with burning(args.burners if condition == "burn" else 0):
                        f = measured(lambda s=system: bodies[s](url), url)  # type: ignore[misc]
                    results.setdefault((condition, system), []).append(f)
                    print(
                        f"{r:>5} {condition:<6} {labels[system]:<32} {f.steps_per_second:>8.0f} "
                        f"{f.cpu_us:>12.0f} {f.voluntary:>12.2f} {f.involuntary:>14.3f} "
                        f"{f.transactions:>10.2f}",
                        flush=True,
                    )
    print("\nmedians over rounds; ratio = steps/s against LangGraph in the same condition")
    for condition in ("quiet", "burn"):
        base = results.get((condition, "langgraph"))
        for system in systems:
            figs = results[(condition, system)]
            sps = statistics.median(f.steps_per_second for f in figs)
            ratios = ""
            if base and system != "langgraph":
                each = [
                    a.steps_per_second / b.steps_per_second for a, b in zip(figs, base, strict=True)
                ]
                mid, lo, hi = statistics.median(each), min(each), max(each)
                ratios = f"  x{mid:.2f} LangGraph (rounds {lo:.2f}-{hi:.2f})"
            cpu = statistics.median(f.cpu_us for f in figs)
            print(
                f"  {condition:<6} {labels[system]:<32} {sps:>7.0f} steps/s  "
                f"{cpu:>5.0f} us CPU/step{ratios}"
            )


if __name__ == "__main__":
    main()
