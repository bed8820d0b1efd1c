"""PerdureStore (LangGraph's ``BaseStore`` on perdure's memory) beside LangGraph's own stores:
``AsyncPostgresStore`` on the same PostgreSQL server and ``InMemoryStore``, in the same run.

Three workloads, each timed in wall time and in this process's CPU time (``time.process_time``:
the client's; a PostgreSQL server's own CPU is not in it):

- ``gather``: LangGraph's own async store concurrency test (``test_large_batches_async`` of
  ``langgraph-checkpoint-postgres``): for each of ``--rounds`` rounds and ``--keys`` keys, an
  ``aput``, an ``aget``, an ``alist_namespaces(max_depth=round + 1)``, an ``asearch(("test",))``,
  another ``aput`` and an ``adelete``, all started at once and awaited with ``asyncio.gather``
  (6 x keys x rounds operations; 60,000 by default, as in the test).
- ``one by one``: ``--calls`` rounds of ``aput``, ``aget``, ``asearch(limit=10)`` and
  ``alist_namespaces``, each awaited before the next starts (nothing to gather): the cost of
  one call. Reported per operation.
- ``search``: ``--items`` items under one namespace, then ``--searches`` searches each of
  the first page (``limit=10``), a deep page (``offset`` half way), a filter the database checks
  (``{"n": 7}``, about one item in 50) and a filter checked in the process (``{"x": {"$gt":
  ...}}`` with a float, the last 10 items). Reported per search.

SQLite on a fresh file; PostgreSQL on scratch databases of the server ``--dsn`` names (default
``PERDURE_BENCH_PG_DSN``, then ``PERDURE_TEST_PG_DSN``), one per store, dropped at the end.
``AsyncPostgresStore`` needs ``langgraph-checkpoint-postgres`` (the ``bench`` extra).

Run: ``python benchmarks/langgraph_store.py [--keys 1000] [--rounds 10] [--calls 200]
[--items 10000] [--searches 20] [--systems perdure-sqlite,perdure-postgres,langgraph-postgres,
langgraph-memory]``. To compare two versions, run it with each one's ``perdure`` on the path
(``benchmarks/README.md``). Nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from langgraph.store.base import BaseStore, PutOp
from langgraph.store.memory import InMemoryStore
from postgres_overhead import fresh_database

import perdure
from perdure import Runtime
from perdure.langgraph import PerdureStore

SYSTEMS = ("perdure-sqlite", "perdure-postgres", "langgraph-postgres", "langgraph-memory")


@asynccontextmanager
async def opened(system: str, dsn: str | None) -> AsyncIterator[BaseStore]:
    """A fresh, empty store of ``system``."""
    if system == "langgraph-memory":
        yield InMemoryStore()
        return
    if system == "perdure-sqlite":
        with tempfile.TemporaryDirectory() as d, Runtime(f"sqlite:///{d}/store.db") as rt:
            yield PerdureStore(rt)
        return
    if not dsn:
        raise SystemExit(f"{system} needs --dsn (or PERDURE_BENCH_PG_DSN / PERDURE_TEST_PG_DSN)")
    name = "perdure_bench_store_" + system.split("-", maxsplit=1)[0]
    with fresh_database(dsn, name) as url:
        if system == "perdure-postgres":
            with Runtime(url) as rt:
                yield PerdureStore(rt)
            return
        try:
            from langgraph.store.postgres import AsyncPostgresStore
        except ImportError:
            raise SystemExit("langgraph-postgres needs langgraph-checkpoint-postgres") from None
        async with AsyncPostgresStore.from_conn_string(url) as store:
            await store.setup()
            yield store


async def timed(work: Callable[[], Awaitable[Any]]) -> tuple[float, float]:
    """Wall and CPU seconds of ``work``."""
    wall, cpu = time.perf_counter(), time.process_time()
    await work()
    return time.perf_counter() - wall, time.process_time() - cpu


async def gathered(store: BaseStore, keys: int, rounds: int) -> None:
    coros: list[Awaitable[Any]] = []
    for m in range(rounds):
        ns = ("test", "foo", "bar", "baz", str(m % 2))
        for i in range(keys):
            coros += [
                store.aput(ns, f"key{i}", {"foo": f"bar{i}"}),
                store.aget(ns, f"key{i}"),
                store.alist_namespaces(prefix=None, max_depth=m + 1),
                store.asearch(("test",)),
                store.aput(ns, f"key{i}", {"foo": f"bar{i}"}),
                store.adelete(ns, f"key{i}"),
            ]
    results = await asyncio.gather(*coros)
    assert len(results) == len(coros)


async def one_by_one(store: BaseStore, calls: int) -> None:
    for i in range(calls):
        ns = ("one", str(i % 4))
        await store.aput(ns, f"k{i}", {"i": i})
        await store.aget(ns, f"k{i}")
        await store.asearch(("one",), limit=10)
        await store.alist_namespaces(prefix=("one",))


async def searches(store: BaseStore, items: int, n: int) -> dict[str, float]:
    ns = ("docs", "all")
    for start in range(0, items, 500):
        await put_many(store, ns, range(start, min(start + 500, items)))
    cases: dict[str, Callable[[], Awaitable[Any]]] = {
        "first page": lambda: store.asearch(ns, limit=10),
        "deep page": lambda: store.asearch(ns, limit=10, offset=items // 2),
        "filter in the database": lambda: store.asearch(ns, filter={"n": 7}, limit=10),
        "filter in the process": lambda: store.asearch(
            ns, filter={"x": {"$gt": items - 10.5}}, limit=10
        ),
    }
    out: dict[str, float] = {}
    for name, call in cases.items():
        await call()  # warm
        t = time.perf_counter()
        for _ in range(n):
            await call()
        out[name] = (time.perf_counter() - t) / n * 1000
    return out


async def put_many(store: BaseStore, ns: tuple[str, ...], ids: range) -> None:
    await store.abatch([PutOp(ns, f"d{i:06}", {"n": i % 50, "x": float(i)}) for i in ids])


async def run(system: str, args: argparse.Namespace) -> None:
    async with opened(system, args.dsn) as store:
        ops = 6 * args.keys * args.rounds
        wall, cpu = await timed(lambda: gathered(store, args.keys, args.rounds))
        print(f"{system:19} gather     {ops:>6} ops: wall {wall:7.2f} s  cpu {cpu:7.2f} s")
        n = 4 * args.calls
        wall, cpu = await timed(lambda: one_by_one(store, args.calls))
        print(
            f"{system:19} one by one {n:>6} ops: wall {wall / n * 1e6:7.0f} us/op "
            f"cpu {cpu / n * 1e6:7.0f} us/op"
        )
        found = await searches(store, args.items, args.searches)
        cells = "  ".join(f"{name} {ms:7.2f}" for name, ms in found.items())
        print(f"{system:19} search {args.items} items, ms each: {cells}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--items", type=int, default=10000)
    parser.add_argument("--searches", type=int, default=20)
    parser.add_argument("--systems", default=",".join(SYSTEMS))
    parser.add_argument(
        "--dsn",
        default=os.environ.get("PERDURE_BENCH_PG_DSN") or os.environ.get("PERDURE_TEST_PG_DSN"),
    )
    args = parser.parse_args()
    print(f"perdure from {Path(perdure.__file__).parent}")
    for system in args.systems.split(","):
        asyncio.run(run(system, args))


if __name__ == "__main__":
    main()
