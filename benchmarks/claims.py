"""What one claim costs with many runs queued, on SQLite and PostgreSQL.

Workload: N runs created on threads of their own (N = 1,000 and 5,000 by default), none of
them claimed yet; then ``Store.claim`` (the worker's scan and the claim of the run it found:
``pick_next`` then ``claim_run`` on SQLite, one statement, ``claim_next``, on PostgreSQL) is
timed for a number of claims, each taking the oldest claimable run. On PostgreSQL it is timed
twice: right after the runs were created, before the table was ever analysed (a new database,
a burst of runs; autovacuum analyses it only on its next pass), and after
``ANALYZE perdure.runs``. Each measurement uses a fresh SQLite file or a fresh database.

The figure is the median milliseconds per claim; a scan that reads from the oldest and stops
at the first claimable run stays flat as N grows, one that reads every run grows with N.

Run: ``python benchmarks/claims.py [--sizes 1000,5000] [--claims 50] [--dsn DSN]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from postgres_overhead import fresh_database

from perdure import FakeClock
from perdure.core.model import Durability, Release
from perdure.store.base import NewRun, Store
from perdure.store.url import open_store

LEASE = timedelta(minutes=10)


def queue(store: Store, clock: FakeClock, size: int) -> None:
    """``size`` pending runs of workflow ``wf``, each on a thread of its own, oldest first."""
    release = Release(1, 1, Durability.SYNC, code="bench")
    store.migrate(clock.now())
    for i in range(size):
        new = NewRun(f"r{i:06d}", "t1", f"th{i}", "wf", "step", release, {"n": b"0"})
        store.create_run(new, clock.now())
        clock.advance(0.001)


def claim_ms(store: Store, clock: FakeClock, claims: int) -> float:
    """Median milliseconds of ``claims`` claims, each of the oldest claimable run."""
    times = []
    for _ in range(claims):
        began = time.perf_counter()
        run = store.claim("w1", clock.now() + LEASE, clock.now(), ["wf"])
        times.append(time.perf_counter() - began)
        assert run is not None, "the queue ran dry"
    return statistics.median(times) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,5000", help="queued runs, comma-separated")
    parser.add_argument("--claims", type=int, default=50, help="claims timed per measurement")
    dsn = os.environ.get("PERDURE_BENCH_PG_DSN") or os.environ.get("PERDURE_TEST_PG_DSN")
    parser.add_argument("--dsn", default=dsn, help="a PostgreSQL server to make databases on")
    args = parser.parse_args()
    sizes = [int(n) for n in args.sizes.split(",")]
    print(f"median ms per claim, {args.claims} claims, runs on threads of their own")
    for size in sizes:
        clock = FakeClock(datetime(2026, 1, 1, tzinfo=UTC))
        with tempfile.TemporaryDirectory() as folder:
            store = open_store(f"sqlite:///{Path(folder) / 'claims.db'}")
            queue(store, clock, size)
            print(f"  SQLite      {size:>6} queued: {claim_ms(store, clock, args.claims):7.2f} ms")
            store.close()
        if not args.dsn:
            continue
        with fresh_database(args.dsn, "perdure_claims") as url:
            clock = FakeClock(datetime(2026, 1, 1, tzinfo=UTC))
            store = open_store(url)
            queue(store, clock, size)
            fresh = claim_ms(store, clock, args.claims)
            import psycopg

            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute("ANALYZE perdure.runs")
            analysed = claim_ms(store, clock, args.claims)
            store.close()
            print(
                f"  PostgreSQL  {size:>6} queued: {fresh:7.2f} ms before ANALYZE, "
                f"{analysed:7.2f} ms after"
            )


if __name__ == "__main__":
    main()
