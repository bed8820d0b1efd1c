"""Durable token streams: what persisting a streamed reply costs per token, by batch size.

Workload: one step writes ``--deltas`` deltas (default 10,000; a few characters each) to
``ctx.open_stream(...)`` and finishes it, inside a real run of a real Runtime. The figure is the
wall time of the write loop plus ``finish()``, measured inside the step:

* ``memory``: the same loop into a sink that keeps the deltas in a list (not persisting): the
  floor a token pays anyway.
* ``batch N``: perdure's durable sink writing every N deltas in one transaction (fenced by the
  run's lease). ``added/token`` is (time - memory time) / deltas: the latency a token pays for
  being durable, on average. ``commits`` is the number of stream transactions, ``commits/s``
  their rate, and ``lag`` the most deltas a reader can be behind the model (N - 1), since a
  delta is visible once its batch is written. ``batch 1`` streams at most ``--cap-one`` deltas
  (one fsync'd transaction each), scaled per token like the others.

A model emits 30-100 tokens per second, so a sink adds nothing a reader notices as long as
``added/token`` stays far below 10 ms. Backends: a temporary SQLite file (WAL,
``synchronous=FULL``) and, with ``--pg`` (default ``PERDURE_TEST_PG_DSN``), a PostgreSQL
database created for the run and dropped after it.

Run: ``python benchmarks/streams.py [--deltas 10000] [--batches 1,8,32,128] [--pg URL]``.
Figures vary with the disk and the machine's load; compare ratios. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from perdure import Context, Runtime, Workflow, done, step


@dataclass
class Job:
    deltas: int = 0
    batch: int = 0  # 0: the in-memory sink


class MemorySink:
    """The ``not persisting`` baseline: a StreamSink that keeps deltas in a list."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.flushes = 0

    def write(self, text: str) -> None:
        self.parts.append(text)

    def finish(self) -> None:
        self.parts.append("")


@step
def stream(ctx: Context, job: Job):  # type: ignore[no-untyped-def]
    sink: Any = (
        MemorySink()
        if job.batch == 0
        else ctx.open_stream("reply", batch=job.batch, max_delay=None)
    )
    started = time.perf_counter()
    for i in range(job.deltas):
        sink.write(f"tok{i % 100} ")
    sink.finish()
    return done({"seconds": time.perf_counter() - started, "commits": sink.flushes})


streaming = Workflow("bench_stream", state=Job, steps=[stream])


@contextmanager
def database(backend: str, pg: str | None) -> Iterator[str]:
    """A fresh database URL for one measurement."""
    if backend == "sqlite":
        with tempfile.TemporaryDirectory() as folder:
            yield f"sqlite:///{folder}/bench.db"
        return
    import psycopg

    assert pg is not None and pg.startswith(("postgresql://", "postgres://")), "--pg takes a URL"
    name = f"bench_streams_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield urlunsplit(urlsplit(pg)._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(pg, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


def measure(url: str, deltas: int, batch: int) -> tuple[float, int]:
    with Runtime(url, workflows=[streaming]) as rt:
        run = rt.start(streaming, Job(deltas, batch))
        rt.run_until_idle()
        result = rt.get(run.run_id).result
        assert isinstance(result, dict), rt.get(run.run_id).error
        if batch:
            stored = sum(1 for _ in rt.threads.stream("reply"))
            assert stored == deltas + 1, f"{stored} entries stored for {deltas} deltas"
        return float(result["seconds"]), int(result["commits"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--deltas", type=int, default=10_000)
    parser.add_argument("--batches", default="1,8,32,128")
    parser.add_argument("--cap-one", type=int, default=1_000, help="deltas for batch 1")
    parser.add_argument("--pg", default=os.environ.get("PERDURE_TEST_PG_DSN"))
    args = parser.parse_args()
    batches = [int(b) for b in args.batches.split(",")]
    backends = ["sqlite"] + (["postgres"] if args.pg else [])
    print(f"{args.deltas} deltas per reply; cores {os.cpu_count()}, load {os.getloadavg()[0]:.2f}")
    for backend in backends:
        with database(backend, args.pg) as url:
            floor, _ = measure(url, args.deltas, 0)
        per_floor = floor / args.deltas
        print(f"\n{backend}: memory sink {floor * 1e3:.1f} ms ({per_floor * 1e6:.2f} us/token)")
        print(
            f"{'batch':>6} {'deltas':>7} {'ms':>9} {'added/token':>12} {'commits':>8}"
            f" {'commits/s':>10} {'tokens/s':>10} {'lag':>4}"
        )
        for batch in batches:
            n = min(args.deltas, args.cap_one) if batch == 1 else args.deltas
            with database(backend, args.pg) as url:
                seconds, commits = measure(url, n, batch)
            added = seconds / n - per_floor
            print(
                f"{batch:>6} {n:>7} {seconds * 1e3:>9.1f} {added * 1e6:>9.1f} us"
                f" {commits:>8} {commits / seconds:>10.0f} {n / seconds:>10.0f} {batch - 1:>4}"
            )


if __name__ == "__main__":
    main()
