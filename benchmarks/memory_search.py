"""What a semantic search over long-term memory costs: perdure's portable scoring (the prefix's
vectors read from SQLite or PostgreSQL and compared in the process) beside LangGraph's own
``InMemoryStore`` (the peer: everything in RAM, numpy when installed, else pure Python).

For each size in ``--items``: that many items under one namespace, each a short text embedded
to ``--dims`` deterministic pseudo-random numbers (no model: the cost measured is the store's),
written in batches of 500 (``put_memory``, one transaction each). Then ``--queries`` searches
of the whole namespace with a query vector and ``limit=10``, timed one by one: through the store
(``search_memory``), through ``PerdureStore.search(query=...)`` (LangGraph's API, the same code
plus the embedding of the query) and through ``InMemoryStore.search(query=...)``. Each figure
is the median and the 90th percentile of one search; a plain search of the same namespace
(no query, ``limit=10``) is the floor, and the ratio is search over peer.

SQLite on a fresh file; PostgreSQL on a scratch database of the server ``--dsn`` names
(default ``PERDURE_BENCH_PG_DSN``, then ``PERDURE_TEST_PG_DSN``), dropped at the end.

Run: ``python benchmarks/memory_search.py [--items 1000,10000] [--dims 64] [--queries 20]
[--db sqlite,postgres]``. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from langgraph.store.memory import InMemoryStore
from postgres_overhead import fresh_database

from perdure import Runtime
from perdure.core.memory import MemoryVector, MemoryWrite
from perdure.langgraph import PerdureStore

NS = ("bench", "docs")


def vector(seed: int, dims: int) -> list[float]:
    rng = random.Random(seed)
    return [rng.uniform(-1, 1) for _ in range(dims)]


def timed(fn: Callable[[], Any], n: int) -> tuple[float, float]:
    """Median and 90th percentile of ``n`` calls, in milliseconds."""
    fn()  # warm
    samples = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t) * 1000)
    samples.sort()
    return statistics.median(samples), samples[int(0.9 * (len(samples) - 1))]


@contextmanager
def database(kind: str, dsn: str | None) -> Iterator[str]:
    if kind == "sqlite":
        with tempfile.TemporaryDirectory() as d:
            yield f"sqlite:///{d}/bench.db"
    else:
        if not dsn:
            raise SystemExit("--dsn (or PERDURE_BENCH_PG_DSN / PERDURE_TEST_PG_DSN) is needed")
        with fresh_database(dsn, "perdure_bench_memory_search") as url:
            yield url


def run(kind: str, url: str, items: int, dims: int, queries: int) -> None:
    embed_calls: dict[str, list[float]] = {}

    def embed(texts: list[str]) -> list[list[float]]:
        return [embed_calls.setdefault(t, vector(hash(t) & 0xFFFF, dims)) for t in texts]

    index: Any = {"embed": embed, "dims": dims, "fields": ["text"]}
    peer = InMemoryStore(index=index)
    with Runtime(url) as rt:
        now = rt.clock.now()
        batch: list[MemoryWrite] = []
        for i in range(items):
            v = tuple(vector(i, dims))
            batch.append(
                MemoryWrite(NS, f"d{i}", {"text": f"doc {i}"}, vectors=(MemoryVector("text", v),))
            )
            if len(batch) == 500:
                rt.store.memory.put("default", batch, now)
                batch = []
        if batch:
            rt.store.memory.put("default", batch, now)
        for i in range(items):
            peer.put(NS, f"d{i}", {"text": f"doc {i}"}, index=False)
            peer._vectors[NS][f"d{i}"]["text"] = vector(
                i, dims
            )  # the same vectors, not re-embedded
        store = PerdureStore(rt, index=index)
        q = tuple(vector(10**9, dims))
        embed_calls["query text"] = list(q)
        plain = timed(
            lambda: rt.store.memory.search("default", NS, rt.clock.now(), limit=10), queries
        )
        ours = timed(
            lambda: rt.store.memory.search("default", NS, rt.clock.now(), limit=10, query=q),
            queries,
        )
        api = timed(lambda: store.search(NS, query="query text", limit=10), queries)
        theirs = timed(lambda: peer.search(NS, query="query text", limit=10), queries)
        top_ours = [
            i.key for i in rt.store.memory.search("default", NS, rt.clock.now(), limit=10, query=q)
        ]
        top_theirs = [i.key for i in peer.search(NS, query="query text", limit=10)]
    same = "same top 10" if top_ours == top_theirs else f"top 10 differ: {top_ours} / {top_theirs}"
    print(
        f"{kind:8} {items:>7} items x {dims} dims: plain search {plain[0]:7.1f} ms | "
        f"semantic (store) p50 {ours[0]:7.1f} p90 {ours[1]:7.1f} ms | "
        f"PerdureStore p50 {api[0]:7.1f} ms | "
        f"InMemoryStore p50 {theirs[0]:7.1f} p90 {theirs[1]:7.1f} ms | "
        f"ratio {ours[0] / theirs[0]:.2f}x | {same}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", default="1000,10000")
    parser.add_argument("--dims", type=int, default=64)
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--db", default="sqlite,postgres")
    parser.add_argument(
        "--dsn",
        default=os.environ.get("PERDURE_BENCH_PG_DSN") or os.environ.get("PERDURE_TEST_PG_DSN"),
    )
    args = parser.parse_args()
    try:
        import numpy  # noqa: F401

        peer = "numpy"
    except ImportError:
        peer = "pure Python (numpy not installed)"
    print(f"InMemoryStore scoring: {peer}; perdure scoring: pure Python")
    for kind in args.db.split(","):
        for n in (int(x) for x in args.items.split(",")):
            with database(kind, args.dsn) as url:
                run(kind, url, n, args.dims, args.queries)


if __name__ == "__main__":
    main()
