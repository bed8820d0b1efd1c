"""Step overhead of perdure against one durable SQLite commit and against peers.

Workload: a linear workflow of 20 no-op steps, 200 runs, advanced inline by one process, on a
fresh SQLite file per measurement. For each durability mode it prints the mean cost per step in
microseconds, steps per second, and the ratio to one durable SQLite commit (WAL,
synchronous=FULL, one-row insert) measured by the same script in the same run. With the
``bench`` extra installed (``pip install -e '.[bench]'``) it measures LangGraph's SqliteSaver
(durability sync/async/exit) and DBOS on SQLite on the same workload and prints ratios.

It also measures what must stay flat or fast:

* appending one message to a thread that already holds 3 MB of history;
* a new process resuming a crashed run and finishing it (wall time, interpreter start included).

Run: ``python benchmarks/step_overhead.py [--runs 200] [--steps 20]``. Figures vary with the
disk; compare ratios, not absolutes. This is a benchmark: nothing here is asserted.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fleet_app
import peers
from fleet_app import Counter

from perdure import Context, Runtime, Workflow, done
from perdure.core.workflow import Outcome, StepDef


def linear(steps: int) -> Workflow[Counter]:
    """``steps`` no-op steps in a row; each only moves to the next."""
    return fleet_app.linear(steps, "linear")


def perdure_step_us(folder: Path, mode: str, runs: int, steps: int) -> float:
    """Mean microseconds per step for ``runs`` runs of the linear workflow in one mode."""
    wf = linear(steps)
    with Runtime(f"sqlite:///{folder / f'perdure-{mode}.db'}", workflows=[wf]) as rt:
        rt.start(wf, durability=mode)
        rt.run_until_idle()  # warm-up
        for _ in range(runs):
            rt.start(wf, durability=mode)
        began = time.perf_counter()
        rt.run_until_idle()
        elapsed = time.perf_counter() - began
    return elapsed / (runs * steps) * 1e6


def append_us(folder: Path, history_bytes: int) -> tuple[float, int]:
    """Median microseconds for a one-step run that appends one message to a thread that
    already holds ``history_bytes`` of messages (claim + step + commit: two durable commits)."""
    chunk = "x" * 2000

    def grow(ctx: Context, state: Counter) -> Outcome:
        for _ in range(history_bytes // len(chunk)):
            ctx.add_message("tool", chunk, tool_call_id="c")
        return done()

    def one(ctx: Context, state: Counter) -> Outcome:
        ctx.add_message("assistant", "one more")
        return done()

    seed = Workflow("grow", state=Counter, steps=[StepDef("grow", grow, frozenset())])
    bench = Workflow("append", state=Counter, steps=[StepDef("one", one, frozenset())])
    name = f"history-{history_bytes}.db"
    with Runtime(f"sqlite:///{folder / name}", workflows=[seed, bench]) as rt:
        rt.start(seed, thread="long")
        rt.run_until_idle()
        count = len(rt.store.messages("default", "long"))
        samples = []
        for _ in range(50):
            rt.start(bench, thread="long")
            began = time.perf_counter()
            rt.run_until_idle()
            samples.append(time.perf_counter() - began)
    samples.sort()
    return samples[len(samples) // 2] * 1e6, count


RESUME_APP = """
import os
from perdure import Runtime, Workflow, done, goto
from perdure.core.workflow import StepDef
from dataclasses import dataclass

@dataclass
class S:
    n: int = 0

def a(ctx, s):
    return goto("b")

def b(ctx, s):
    if os.environ.get("CRASH"):
        os._exit(75)
    return done()

wf = Workflow("resume_bench", state=S,
              steps=[StepDef("a", a, frozenset({"b"})), StepDef("b", b, frozenset())])
rt = Runtime(os.environ["DB"], workflows=[wf])
if os.environ.get("CRASH"):
    rt.start(wf)
rt.run_until_idle()
"""


def resume_in_new_process_ms(folder: Path) -> float:
    """Wall time of a new Python process that resumes a crashed run and finishes it."""
    db = f"sqlite:///{folder / 'resume.db'}"
    crash_env = {**os.environ, "DB": db, "CRASH": "1"}
    subprocess.run([sys.executable, "-c", RESUME_APP], env=crash_env, check=False)
    env = {**os.environ, "DB": db}
    samples = []
    for _ in range(5):
        began = time.perf_counter()
        subprocess.run([sys.executable, "-c", RESUME_APP], env=env, check=True)
        samples.append(time.perf_counter() - began)
        subprocess.run([sys.executable, "-c", RESUME_APP], env=crash_env, check=False)
    return min(samples) * 1e3


def line(label: str, us: float, base: float) -> str:
    return f"  {label:<34} {us:9.1f} µs/step {1e6 / us:9.0f} steps/s {us / base:6.2f}x commit"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--modes", default="sync,async,exit", help="durability modes")
    parser.add_argument(
        "--only-steps",
        action="store_true",
        help="only the commit floor and perdure's step cost (no peers, appends, resume)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="perdure-bench-") as tmp:
        folder = Path(tmp)
        base = peers.sqlite_commit_us(folder)
        print(f"{args.runs} runs x {args.steps} no-op steps; baseline = one durable SQLite commit")
        print(f"  {'SQLite commit (WAL, FULL)':<34} {base:9.1f} µs")
        ours: dict[str, float] = {}
        for mode in args.modes.split(","):
            ours[mode] = perdure_step_us(folder, mode, args.runs, args.steps)
            print(line(f"perdure durability={mode}", ours[mode], base))
        if args.only_steps:
            return
        have = peers.available()
        if have.get("langgraph") and have.get("langgraph-checkpoint-sqlite"):
            for mode in peers.DURABILITY_MODES:
                us = peers.langgraph_step_us(folder, mode, args.runs, args.steps)
                print(
                    line(f"LangGraph SqliteSaver {mode}", us, base)
                    + f"  perdure is {us / ours[mode]:.1f}x faster"
                )
        else:
            print("  LangGraph: not installed (pip install -e '.[bench]')")
        if have.get("dbos"):
            us = peers.dbos_step_us(folder, args.runs, args.steps)
            print(
                line("DBOS (SQLite)", us, base)
                + f"  perdure sync is {us / ours['sync']:.1f}x faster"
            )
        else:
            print("  DBOS: not installed (pip install -e '.[bench]')")
        short, _ = append_us(folder, 0)
        long, count = append_us(folder, 3_000_000)
        print(
            f"one-step run appending a message: empty thread {short:.0f} µs, "
            f"3 MB thread ({count} messages) {long:.0f} µs ({long / short:.2f}x)"
        )
        resume_ms = resume_in_new_process_ms(folder)
        print(f"new process resumes a crashed run and finishes it: {resume_ms:.0f} ms")


if __name__ == "__main__":
    main()
