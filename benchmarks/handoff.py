"""Hand-off time between workers on PostgreSQL: SIGTERM one worker with runs in flight, another
worker continues them.

Workload: each round starts worker A (``perdure worker --concurrency K``) and K runs of a
workflow of many short steps (each sleeps ``--step`` seconds, 50 ms by default, standing in for
a tool call), waits until A holds all K, starts worker B (idle, same concurrency) and waits
until B reports itself live, then sends A SIGTERM. A drains: every run finishes its current step,
commits it, releases its lease at that step boundary (the release notifies ``perdure_work``)
and A exits; B wakes on the notification and claims the runs.

Two figures per run, from the run's own events (``released`` by A, ``claimed`` by B, stamped by
each process's clock on this one host) and the time SIGTERM was sent:

* **release → claim**: from A's release of the lease to B's claim: the hand-off itself
  (notification, wake-up, claim), what seed 003 asks to stay under 500 ms;
* **SIGTERM → claim**: from the signal to B's claim, which adds the rest of the step that was
  running when the signal came (up to ``--step``).

Each round runs on the same fresh database ``perdure_bench_handoff_<pid>`` (created on the
server named by ``--dsn``, default ``PERDURE_BENCH_PG_DSN`` then ``PERDURE_TEST_PG_DSN``, and
dropped at the end). Figures depend on the machine and its load (printed); nothing is asserted.

Run: ``python benchmarks/handoff.py [--rounds 5] [--runs 8] [--step 0.05]``.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from perdure import Context, Workflow, done, goto
from perdure.core.workflow import Outcome, StepDef

STEPS = 400
"""Steps per run: far more than a round lasts, so every run is still in flight at SIGTERM."""


@dataclass
class Work:
    done: int = 0


def make_step(i: int) -> StepDef:
    def run(ctx: Context, s: Work) -> Outcome:
        time.sleep(float(os.environ.get("HANDOFF_STEP_SECONDS", "0.05")))
        s.done += 1
        return goto(f"s{i + 1}") if i < STEPS else done(s.done)

    return StepDef(f"s{i}", run, frozenset({f"s{i + 1}"}) if i < STEPS else frozenset())


handoff = Workflow("handoff", state=Work, steps=[make_step(i) for i in range(1, STEPS + 1)])


def database(dsn: str, name: str) -> str:
    parts = urlsplit(dsn)
    return urlunsplit(parts._replace(path="/" + name))


def admin(dsn: str, sql: str) -> None:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql)  # type: ignore[arg-type]


def worker(url: str, concurrency: int, step_seconds: float) -> subprocess.Popen[bytes]:
    env = {**os.environ, "HANDOFF_STEP_SECONDS": str(step_seconds)}
    env["PYTHONPATH"] = (
        str(Path(__file__).resolve().parent) + os.pathsep + env.get("PYTHONPATH", "")
    )
    cmd = [sys.executable, "-m", "perdure", "--db", url, "worker", "--app", "handoff"]
    cmd += ["--concurrency", str(concurrency), "--poll", "0.05"]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def wait_until(predicate: object, what: str, timeout: float = 60.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():  # type: ignore[operator]
            return
        time.sleep(0.02)
    raise SystemExit(f"timed out waiting until {what}")


def one_round(url: str, runs: int, step_seconds: float) -> tuple[list[float], list[float]]:
    from perdure import Runtime

    with Runtime(url, workflows=[handoff], owner="bench") as rt:
        ids = [rt.start(handoff, {}).run_id for _ in range(runs)]
        a = worker(url, runs, step_seconds)
        a_owner = None
        try:

            def a_holds_all() -> bool:
                nonlocal a_owner
                owners = {rt.get(r).owner for r in ids}
                a_owner = owners.pop() if len(owners) == 1 else None
                return a_owner is not None and a_owner.endswith(f":{a.pid}")

            wait_until(a_holds_all, "worker A holds every run")
            b = worker(url, runs, step_seconds)
            wait_until(
                lambda: any(w.pid == b.pid and str(w.state) == "live" for w in rt.activity.workers()),
                "worker B is live",
            )
            time.sleep(0.3)  # B is idle in its claim loop, listening
            sent = time.time()
            a.send_signal(signal.SIGTERM)
            if a.wait(timeout=60) != 0:
                raise SystemExit(f"worker A exited {a.returncode}: {a.stderr.read().decode()}")

            def b_holds_all() -> bool:
                return all((rt.get(r).owner or "").endswith(f":{b.pid}") for r in ids)

            wait_until(b_holds_all, "worker B holds every run")
            handoffs, from_signal = [], []
            for r in ids:
                events = rt.store.events(rt.get(r).tenant_id, r, limit=100_000)
                released = [e for e in events if e.type == "released"][-1]
                claimed = next(e for e in events if e.type == "claimed" and e.seq > released.seq)
                handoffs.append((claimed.at - released.at).total_seconds())
                from_signal.append(claimed.at.timestamp() - sent)
            for r in ids:
                rt.cancel(r)
            wait_until(lambda: all(rt.get(r).status.terminal for r in ids), "runs are cancelled")
            b.send_signal(signal.SIGTERM)
            b.wait(timeout=60)
        finally:
            for p in (a, locals().get("b")):
                if isinstance(p, subprocess.Popen) and p.poll() is None:
                    p.kill()
                    p.wait()
    return handoffs, from_signal


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=8, help="runs in flight per round")
    parser.add_argument("--step", type=float, default=0.05, help="seconds per step")
    parser.add_argument(
        "--dsn",
        default=os.environ.get("PERDURE_BENCH_PG_DSN") or os.environ.get("PERDURE_TEST_PG_DSN"),
    )
    args = parser.parse_args()
    if not args.dsn:
        raise SystemExit("give --dsn or set PERDURE_TEST_PG_DSN")
    name = f"perdure_bench_handoff_{os.getpid()}"
    admin(args.dsn, f'CREATE DATABASE "{name}"')
    url = database(args.dsn, name)
    print(
        f"cores: {os.cpu_count()}, load: {os.getloadavg()[0]:.2f}, {args.rounds} rounds of "
        f"{args.runs} runs in flight, {args.step * 1000:.0f} ms steps"
    )
    handoffs: list[float] = []
    from_signal: list[float] = []
    try:
        for _ in range(args.rounds):
            h, s = one_round(url, args.runs, args.step)
            handoffs += h
            from_signal += s
    finally:
        admin(args.dsn, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    print(f"{'':16} {'n':>4} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}")
    for label, values in (("release -> claim", handoffs), ("SIGTERM -> claim", from_signal)):
        print(
            f"{label:16} {len(values):>4} {statistics.median(values) * 1000:>8.1f} "
            f"{pct(values, 0.99) * 1000:>8.1f} {max(values) * 1000:>8.1f}"
        )


if __name__ == "__main__":
    main()
