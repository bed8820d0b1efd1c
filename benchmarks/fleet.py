"""A fleet of worker processes draining queued runs: steps per second with 1, 2 and 4 processes.

Workload: ``--runs`` runs (default 256) of a linear workflow of ``--steps`` no-op steps
(default 20), all queued before the clock starts; then N ``perdure worker --until-idle``
processes (``--concurrency`` runs in flight each, default 16) drain them. The figure is the
number of committed steps divided by the time from the first step's start to the last step's
end, read from the steps table, so interpreter start-up is left out. Each row is measured with
group commit on (the default, ``--group-max 64``) and off (``--group-max 1``), on SQLite (one
file shared by every process) and on PostgreSQL (``--dsn``, default ``PERDURE_BENCH_PG_DSN``
then ``PERDURE_TEST_PG_DSN``; a scratch database is created and dropped).

Floors, measured in the same run: SQLite's serialised durable commits per second (one
``BEGIN; INSERT; COMMIT`` at a time, WAL, ``synchronous=FULL``), and PostgreSQL one-row
autocommit INSERTs per second from 8 client threads.

Run: ``python benchmarks/fleet.py [--workers 1,2,4] [--runs 256] [--steps 20]
[--concurrency 16] [--db sqlite,postgres]``. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import functools
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import peers
from postgres_overhead import baseline_level, fresh_database

from perdure import Runtime

HERE = Path(__file__).resolve().parent


def drain(db: str, workers: int, runs: int, steps: int, concurrency: int, group: int) -> float:
    """Steps per second of ``workers`` processes draining ``runs`` queued runs from ``db``."""
    from fleet_app import linear

    wf = linear(steps)
    with Runtime(db, workflows=[wf]) as rt:
        queued = [rt.start(wf).run_id for _ in range(runs)]
    env = {**os.environ, "PYTHONPATH": f"{HERE}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    env["FLEET_STEPS"] = str(steps)
    command = [
        sys.executable,
        "-m",
        "perdure",
        "--db",
        db,
        "worker",
        "--app",
        "fleet_app",
        "--until-idle",
        "--poll",
        "0.01",
        "--concurrency",
        str(concurrency),
        "--group-max",
        str(group),
    ]
    procs = [
        subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        for _ in range(workers)
    ]
    for p in procs:
        _, err = p.communicate()
        if p.returncode != 0:
            raise SystemExit(f"a worker failed: {err.decode()[-400:]}")
    with Runtime(db, workflows=[wf]) as rt:
        first, last, done = None, None, 0
        for run_id in queued:
            for s in rt.store.steps("default", run_id):
                first = s.started_at if first is None else min(first, s.started_at)
                last = s.finished_at if last is None else max(last, s.finished_at)
                done += 1
    assert first is not None and last is not None
    if done != runs * steps:
        raise SystemExit(f"only {done} of {runs * steps} steps committed")
    return done / (last - first).total_seconds()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--runs", type=int, default=256)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--db", default="sqlite,postgres")
    parser.add_argument(
        "--dsn",
        default=os.environ.get("PERDURE_BENCH_PG_DSN", os.environ.get("PERDURE_TEST_PG_DSN")),
    )
    args = parser.parse_args()
    counts = [int(n) for n in args.workers.split(",")]
    dbs = args.db.split(",")
    shape = f"{args.runs} runs x {args.steps} steps, {args.concurrency} in flight per process"
    print(f"fleet: {shape}")
    if "sqlite" in dbs:
        with tempfile.TemporaryDirectory() as tmp:
            floor = 1e6 / peers.sqlite_commit_us(Path(tmp))
        print(f"SQLite floor: {floor:,.0f} serialised durable commits/s")
        rows("SQLite", floor, sqlite_file, counts, args)
    if "postgres" in dbs and args.dsn:
        with fresh_database(args.dsn, f"perdure_fleet_{os.getpid()}") as url:
            floor = baseline_level(url, 8, 800, 20).steps_per_second
        print(f"PostgreSQL floor: {floor:,.0f} one-row INSERT commits/s from 8 clients")
        scratch = functools.partial(fresh_database, args.dsn, f"perdure_fleet_{os.getpid()}")
        rows("PostgreSQL", floor, scratch, counts, args)


@contextmanager
def sqlite_file() -> Iterator[str]:
    """A fresh SQLite database file, removed afterwards."""
    with tempfile.TemporaryDirectory() as tmp:
        yield f"sqlite:///{Path(tmp) / 'fleet.db'}"


def rows(
    name: str,
    floor: float,
    fresh: Callable[[], AbstractContextManager[str]],
    counts: list[int],
    args: argparse.Namespace,
) -> None:
    """Print one row per process count, group commit off then on, each on a fresh database."""
    for group in (1, 64):
        for n in counts:
            with fresh() as db:
                rate = drain(db, n, args.runs, args.steps, args.concurrency, group)
            label = "on " if group > 1 else "off"
            print(
                f"  {name}, group commit {label}, {n} process(es): {rate:>8,.0f} steps/s"
                f"  ({rate / floor:.2f}x floor)"
            )
            sys.stdout.flush()


if __name__ == "__main__":
    main()
