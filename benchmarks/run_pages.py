"""What a page of the run list costs, first page against deep pages, on SQLite and PostgreSQL.

Workload: N runs in one tenant (N = 10,000 by default), three workflows, created 1 s apart.
The listing is read page by page with the keyset cursor (``Store.list_runs(..., after=...)``,
what ``GET /v1/runs?cursor=`` and the dashboard use), 50 runs a page, until the last page;
each page is timed. Then the same with a workflow filter, and with a search in ids (text found
anywhere in the run id: no index can serve it, so it reads runs until it has a page).

The figures are median milliseconds per page: the first page, the pages in the middle, the
last page, and the ratio last/first. A keyset page starts where the index says, so the ratio
stays near 1 however deep the page (an OFFSET page would read and skip every run before it).

Run: ``python benchmarks/run_pages.py [--runs 10000] [--page 50] [--dsn DSN]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from postgres_overhead import fresh_database

from perdure import FakeClock
from perdure.core.listing import RunCursor
from perdure.core.model import Durability, Release
from perdure.store.base import NewRun, Store
from perdure.store.url import open_store

WORKFLOWS = ("research", "support", "billing")


def fill(store: Store, clock: FakeClock, size: int) -> None:
    """``size`` pending runs of tenant t1, one second apart, the workflows in turn."""
    release = Release(1, 1, Durability.SYNC, code="bench")
    store.migrate(clock.now())
    for i in range(size):
        wf = WORKFLOWS[i % len(WORKFLOWS)]
        new = NewRun(f"r{i:06d}", "t1", f"th{i}", wf, "step", release, {"n": b"0"})
        store.create_run(new, clock.now())
        clock.advance(1)


def walk(store: Store, page: int, **where: str) -> list[float]:
    """Milliseconds of each page of the listing, first to last."""
    times: list[float] = []
    after = None
    while True:
        began = time.perf_counter()
        found = store.list_runs("t1", limit=page, after=after, **where)  # type: ignore[arg-type]
        times.append((time.perf_counter() - began) * 1e3)
        if len(found) < page:
            return times
        after = RunCursor.of(found[-1])


def report(name: str, label: str, times: list[float]) -> None:
    middle = statistics.median(times[1:-1]) if len(times) > 2 else times[0]
    first, last = statistics.median(times[:3]), statistics.median(times[-3:])
    print(
        f"  {name:<11} {label:<22} {len(times):>4} pages: first {first:6.2f} ms, "
        f"middle {middle:6.2f} ms, last {last:6.2f} ms, last/first {last / first:5.2f}"
    )


def measure(name: str, store: Store, page: int) -> None:
    report(name, "every run", walk(store, page))
    report(name, "workflow=support", walk(store, page, workflow="support"))
    report(name, "search q=000", walk(store, page, search="000"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10_000, help="runs in the tenant")
    parser.add_argument("--page", type=int, default=50, help="runs per page")
    dsn = os.environ.get("PERDURE_BENCH_PG_DSN") or os.environ.get("PERDURE_TEST_PG_DSN")
    parser.add_argument("--dsn", default=dsn, help="a PostgreSQL server to make databases on")
    args = parser.parse_args()
    print(f"ms per page of {args.page}, {args.runs} runs, read by keyset cursor to the end")
    with tempfile.TemporaryDirectory() as folder:
        store = open_store(f"sqlite:///{Path(folder) / 'pages.db'}")
        fill(store, FakeClock(datetime(2026, 1, 1, tzinfo=UTC)), args.runs)
        measure("SQLite", store, args.page)
        store.close()
    if args.dsn:
        with fresh_database(args.dsn, "perdure_pages") as url:
            store = open_store(url)
            fill(store, FakeClock(datetime(2026, 1, 1, tzinfo=UTC)), args.runs)
            import psycopg

            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute("ANALYZE perdure.runs")
            measure("PostgreSQL", store, args.page)
            store.close()


if __name__ == "__main__":
    main()
