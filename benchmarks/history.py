"""What history, offload and retention cost: a short measurement, not a test.

* Step commit time with 0, 1,000 and 10,000 prior state versions of the same run: the run's
  history is grown with batches of 100 boundaries per commit (each changing one field), then
  ``--samples`` single-boundary commits are timed at each level. Flat means the checkpoint
  cost does not grow with history.
* Step commit time with a 10 MB field that changes each step: the value is offloaded to the
  artifact store (a local directory: sha256, upload, pointer) and the pointer committed;
  beside it, the same commit with a small inline field.
* Rebuilding the state at an old step (step 10 of a run with 10,000 versions), from the store
  (``state_at``: one query) and through the runtime (open, resolve, decode).
* ``gc`` throughput: ``--runs`` finished runs (3 steps, events, state history each) deleted
  with a zero retention, in batches of 100 runs per transaction.

Run: ``python benchmarks/history.py [--backends sqlite,postgres] [--samples 50] [--runs 1000]``
(PostgreSQL from ``PERDURE_TEST_PG_DSN``, a fresh database created and dropped). Figures vary
with the disk and the load; nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from perdure import FakeClock, Runtime  # noqa: E402
from perdure.core.history import Retention  # noqa: E402
from perdure.core.model import Durability, Release, RunStatus  # noqa: E402
from perdure.runtime.artifacts import Writer  # noqa: E402
from perdure.store.base import Boundary, NewRun, Store  # noqa: E402
from perdure.store.url import open_store  # noqa: E402

LEASE = timedelta(seconds=600)


def new_run(run_id: str, state: dict[str, bytes] | None = None) -> NewRun:
    return NewRun(
        run_id=run_id,
        tenant_id="t",
        thread_id=run_id,
        workflow="wf",
        start_step="s",
        release=Release(1, 1, Durability.SYNC),
        state=state or {"n": b"0", "blob": b'""'},
    )


def claimed(store: Store, clock: FakeClock, run_id: str) -> Any:
    store.create_run(new_run(run_id), clock.now())
    run = store.claim(
        "bench", clock.now() + LEASE, clock.now(), ["wf"], tenant_id="t", run_id=run_id
    )
    assert run is not None
    return run


def boundary(
    clock: FakeClock, state: dict[str, bytes], status: RunStatus = RunStatus.RUNNING
) -> Boundary:
    now = clock.now()
    outcome = "next" if status is RunStatus.RUNNING else "done"
    nxt = "s" if status is RunStatus.RUNNING else None
    return Boundary("s", outcome, nxt, status, now, now, state=state)  # type: ignore[arg-type]


def ms(samples: list[float]) -> str:
    return f"{statistics.median(samples) * 1000:7.2f} ms (p90 {sorted(samples)[int(len(samples) * 0.9)] * 1000:6.2f})"


def commit_vs_history(store: Store, clock: FakeClock, samples: int) -> dict[int, list[float]]:
    run = claimed(store, clock, "hist")
    version, done, out = run.state_version, 0, {}
    for level in (0, 1000, 10_000):
        while done < level:
            batch = [boundary(clock, {"n": str(done + i).encode()}) for i in range(100)]
            version = store.commit("t", "hist", run.fence, version, batch, clock.now())
            done += 100
        times = []
        for i in range(samples):
            b = boundary(clock, {"n": str(10**7 + done + i).encode()})
            t0 = time.perf_counter()
            version = store.commit("t", "hist", run.fence, version, [b], clock.now())
            times.append(time.perf_counter() - t0)
        done += samples
        out[level] = times
    return out


def offloaded_commits(
    rt: Runtime, clock: FakeClock, samples: int
) -> tuple[list[float], list[float]]:
    store = rt.store
    run = claimed(store, clock, "big")
    version = run.state_version
    big, small = [], []
    for i in range(samples):
        value = b'"' + (b"%08d" % i) * (10_000_000 // 8) + b'"'
        t0 = time.perf_counter()
        stored, ids = rt.artifacts.offload_fields(
            Writer("t", "big", "s", i + 1, run.fence), {"blob": value}
        )
        b = boundary(clock, stored)
        b = Boundary(
            **{**{f: getattr(b, f) for f in b.__dataclass_fields__}, "artifacts": tuple(ids)}
        )
        version = store.commit("t", "big", run.fence, version, [b], clock.now())
        big.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        version = store.commit(
            "t", "big", run.fence, version, [boundary(clock, {"n": str(i).encode()})], clock.now()
        )
        small.append(time.perf_counter() - t0)
    return big, small


def rebuild(rt: Runtime, samples: int) -> tuple[list[float], list[float]]:
    raw, full = [], []
    for _ in range(samples):
        t0 = time.perf_counter()
        rt.store.history.state_at("t", "hist", 10)
        raw.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        rt.state_at("hist", 10, tenant="t")
        full.append(time.perf_counter() - t0)
    return raw, full


def gc_throughput(rt: Runtime, clock: FakeClock, runs: int) -> tuple[int, float]:
    store = rt.store
    for i in range(runs):
        run = claimed(store, clock, f"old-{i}")
        bs = [
            boundary(clock, {"n": b"1"}),
            boundary(clock, {"n": b"2"}),
            boundary(clock, {"n": b"3"}, RunStatus.SUCCEEDED),
        ]
        store.commit("t", run.run_id, run.fence, run.state_version, bs, clock.now())
    t0 = time.perf_counter()
    report = rt.gc(Retention(finished=timedelta(0), orphan_grace=timedelta(0), batch=100))
    return report.runs, time.perf_counter() - t0


def measure(url: str, folder: Path, samples: int, runs: int) -> None:
    clock = FakeClock()
    rt = Runtime(open_store(url), clock=clock, artifacts=str(folder / "objects"))
    try:
        levels = commit_vs_history(rt.store, clock, samples)
        for level, times in levels.items():
            print(f"  commit, {level:>6} prior versions: {ms(times)}")
        big, small = offloaded_commits(rt, clock, max(5, samples // 10))
        print(f"  commit with a 10 MB offloaded field:  {ms(big)}")
        print(f"  commit with a small inline field:     {ms(small)}")
        raw, full = rebuild(rt, samples)
        print(f"  state at step 10 of 10,000 (store):   {ms(raw)}")
        print(f"  state at step 10 of 10,000 (runtime): {ms(full)}")
        deleted, seconds = gc_throughput(rt, clock, runs)
        print(f"  gc: {deleted} finished runs in {seconds:.2f} s = {deleted / seconds:,.0f} runs/s")
    finally:
        rt.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--samples", type=int, default=50)
    parser.add_argument("--runs", type=int, default=1000)
    args = parser.parse_args()
    print(f"cpus {os.cpu_count()}, load {os.getloadavg()[0]:.2f}")
    for backend in args.backends.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            if backend == "sqlite":
                print("sqlite (WAL, synchronous=FULL)")
                measure(f"sqlite:///{folder / 'bench.db'}", folder, args.samples, args.runs)
                continue
            dsn = os.environ.get("PERDURE_TEST_PG_DSN")
            if not dsn:
                print("postgres: skipped (set PERDURE_TEST_PG_DSN)")
                continue
            import psycopg

            name = f"bench_{uuid.uuid4().hex[:8]}"
            with psycopg.connect(dsn, autocommit=True) as admin:
                admin.execute(f"CREATE DATABASE {name}")
            url = dsn.rsplit("/", 1)[0] + "/" + name
            try:
                print("postgres (synchronous_commit=on)")
                store = open_store(url)
                store.migrate(FakeClock().now())
                store.close()
                measure(url, folder, args.samples, args.runs)
            finally:
                with psycopg.connect(dsn, autocommit=True) as admin:
                    admin.execute(f"DROP DATABASE {name} WITH (FORCE)")


if __name__ == "__main__":
    main()
