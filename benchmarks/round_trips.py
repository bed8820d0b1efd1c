"""Round trips to PostgreSQL per step boundary, counted in libpq's protocol trace.

A round trip is a wait of the client for the server: in the trace, a run of messages sent by
the client (``F``) followed by one received (``B``). The count does not depend on the machine's
load, and it is what a PostgreSQL server on another host multiplies by its network latency.

Counted with ``tests.backends.server_waits`` (the tests count with it too; install the
``test`` extra) for one run committing boundaries through ``Store.commit``, on a store with a
single pooled connection, for each kind of boundary: plain (only the step and a changed
field), with two messages (an agent's usual step), with two messages while input from outside
waits on the thread, and a boundary that ends its run (a new run each time). Every tenth
commit is traced; the others give the median wall time of the commit on this machine, where a
round trip costs about 0.05 ms. Then the same for claims of the worker's scan
(``Store.claim`` without a run id), of queued runs on threads of their own, without input and
with a message posted to the run's thread (which the claim delivers).

Run: ``python benchmarks/round_trips.py [--dsn DSN] [--commits 200]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from postgres_overhead import fresh_database
from tests.backends import server_waits

from perdure import FakeClock
from perdure.core.model import Durability, Message, Release, Run, RunStatus
from perdure.core.records import StepOutcome
from perdure.store.base import Boundary, NewRun
from perdure.store.postgres.store import PostgresStore

Make = Callable[[FakeClock, int], Boundary]


def boundary(clock: FakeClock, i: int, **kw: object) -> Boundary:
    now = clock.now()
    state = {"n": str(i).encode()}
    return Boundary("step", "next", "step", RunStatus.RUNNING, now, now, state=state, **kw)  # type: ignore[arg-type]


def plain(clock: FakeClock, i: int) -> Boundary:
    return boundary(clock, i)


def with_messages(clock: FakeClock, i: int) -> Boundary:
    said = (Message("assistant", "x" * 200), Message("tool", "42", tool_call_id=f"c{i}"))
    return boundary(clock, i, messages=said)


KINDS: dict[str, Make] = {"plain": plain, "with 2 messages": with_messages}


class Sampler:
    """Every tenth call traced for its round trips, the others timed (the trace costs time of
    its own)."""

    def __init__(self, store: PostgresStore, folder: Path) -> None:
        self.store, self.folder = store, folder
        self.calls = 0
        self.trips: list[int] = []
        self.times: list[float] = []

    def __call__(self, call: Callable[[], None]) -> None:
        self.calls += 1
        if self.calls % 10 == 1:
            self.trips.append(server_waits(self.store, self.folder / f"{self.calls}", call))
            return
        began = time.perf_counter()
        call()
        self.times.append(time.perf_counter() - began)

    def result(self) -> tuple[float, float]:
        """Round trips per call (the first traced call left out) and the median ms of the
        timed calls (the first ten left out)."""
        return statistics.mean(self.trips[1:]), statistics.median(self.times[10:]) * 1e3


def measure(url: str, make: Make, commits: int, *, inbox: bool = False) -> tuple[float, float]:
    """Round trips per commit (every tenth commit is traced) and the median of the others in
    ms (untraced: the trace costs time of its own), for one kind of boundary."""
    clock = FakeClock(datetime(2026, 1, 1, tzinfo=UTC))
    store = PostgresStore(url, max_connections=1)
    try:
        run_id = f"r-{make.__name__}-{inbox}"
        release = Release(1, 1, Durability.SYNC, code="bench")
        new = NewRun(run_id, "t1", f"th-{run_id}", "wf", "step", release, {"n": b"0"})
        store.create_run(new, clock.now())
        run = store.claim("w1", clock.now().replace(year=2027), clock.now(), ["wf"])
        assert run is not None
        version = run.state_version
        with tempfile.TemporaryDirectory() as folder:
            sample = Sampler(store, Path(folder))
            for i in range(commits):
                if inbox:
                    store.post_message(
                        "t1", f"th-{run_id}", Message("user", "hi"), None, clock.now()
                    )
                b = make(clock, i)
                landed: list[int] = []

                def commit(b: Boundary = b, at: int = version, into: list[int] = landed) -> None:
                    into.append(store.commit("t1", run_id, run.fence, at, [b], clock.now()))

                sample(commit)
                version = landed[0]
        return sample.result()
    finally:
        store.close()


def claims(url: str, claims: int, *, with_input: bool) -> tuple[float, float]:
    """Round trips per claim of the worker's scan (every tenth claim traced) and the median ms
    of the others, with ``claims`` runs queued on threads of their own; ``with_input``: a
    message was posted to each run's thread after it was queued, which its claim delivers."""
    clock = FakeClock(datetime(2026, 1, 1, tzinfo=UTC))
    store = PostgresStore(url, max_connections=1)
    try:
        release = Release(1, 1, Durability.SYNC, code="bench")
        for i in range(claims):
            run_id = f"c-{with_input}-{i:05d}"
            new = NewRun(run_id, "t1", f"th-{run_id}", "wf", "step", release, {"n": b"0"})
            store.create_run(new, clock.now())
            if with_input:
                store.post_message("t1", f"th-{run_id}", Message("user", "hi"), None, clock.now())
            clock.advance(0.001)
        with tempfile.TemporaryDirectory() as folder:
            sample = Sampler(store, Path(folder))
            for _ in range(claims):

                def claim() -> None:
                    until = clock.now().replace(year=2027)
                    assert store.claim("w1", until, clock.now(), ["wf"]) is not None

                sample(claim)
        return sample.result()
    finally:
        store.close()


def endings(url: str, runs: int) -> tuple[float, float]:
    """Round trips per boundary that ends its run (every tenth traced) and the median ms of
    the others: ``runs`` runs, each claimed, then ended with its result."""
    clock = FakeClock(datetime(2026, 1, 1, tzinfo=UTC))
    store = PostgresStore(url, max_connections=1)
    try:
        release = Release(1, 1, Durability.SYNC, code="bench")
        with tempfile.TemporaryDirectory() as folder:
            sample = Sampler(store, Path(folder))
            for i in range(runs):
                run_id = f"e-{i:05d}"
                new = NewRun(run_id, "t1", f"th-{run_id}", "wf", "step", release, {"n": b"0"})
                store.create_run(new, clock.now())
                run = store.claim("w1", clock.now().replace(year=2027), clock.now(), ["wf"])
                assert run is not None
                now = clock.now()
                end = Boundary(
                    "step", StepOutcome.DONE, None, RunStatus.SUCCEEDED, now, now, result={"i": i}
                )

                def commit(b: Boundary = end, ran: Run = run) -> None:
                    store.commit("t1", ran.run_id, ran.fence, ran.state_version, [b], clock.now())

                sample(commit)
        return sample.result()
    finally:
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    dsn = os.environ.get("PERDURE_BENCH_PG_DSN") or os.environ.get("PERDURE_TEST_PG_DSN")
    parser.add_argument("--dsn", default=dsn, help="a PostgreSQL server to make a database on")
    parser.add_argument("--commits", type=int, default=200)
    args = parser.parse_args()
    if not args.dsn:
        sys.exit("error[no_server]: no PostgreSQL given (fix: pass --dsn or PERDURE_BENCH_PG_DSN)")
    with fresh_database(args.dsn, "perdure_round_trips") as url:
        setup = PostgresStore(url)
        setup.migrate(datetime.now(UTC))
        setup.close()
        print(f"{'boundary':<34} {'round trips':>11} {'commit p50':>11}")
        rows = [(name, measure(url, make, args.commits)) for name, make in KINDS.items()]
        waiting = measure(url, with_messages, args.commits, inbox=True)
        rows.append(("with 2 messages, input waiting", waiting))
        rows.append(("the run ends", endings(url, args.commits)))
        for name, (trips, ms) in rows:
            print(f"{name:<34} {trips:>11.2f} {ms:>8.2f} ms")
        print(f"\n{'claim (the worker scan)':<34} {'round trips':>11} {'claim p50':>11}")
        for name, with_input in (("queued run", False), ("queued run, input posted", True)):
            trips, ms = claims(url, args.commits, with_input=with_input)
            print(f"{name:<34} {trips:>11.2f} {ms:>8.2f} ms")


if __name__ == "__main__":
    main()
