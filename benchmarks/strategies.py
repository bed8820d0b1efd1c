"""Checkpoint strategies against seed 003's table: checkpoints per session, overhead per
session and work lost per crash, for ``per_step``, ``per_effect``, ``timed(30)`` and
``hybrid(30)``.

Workload (the seed's: sessions of 8 dialog rounds and 12 tool calls): each round is a ``think``
step that makes one model call (an effect with target ``model``, answered at once), then one or
two ``tool`` steps (rounds alternate 1 and 2: 12 tool calls); tool calls 4, 8 and 12 change the
world (``ctx.effect``), the other nine only read (plain calls, as ``run_tools`` runs read-only
tools). Every step appends a ~1 KB message to the thread and a ~1 KB item to a list in the
state. Time in the session is the injected clock: a model call takes 8 s, a tool call 2 s
(88 s per session), so ``timed(30)`` and ``hybrid(30)`` flush by that clock, not the wall.

Per strategy and database it prints: checkpoints (commits) per session; overhead per session
(the wall time spent inside the store's ``commit``, summed over the session's commits); the
median cost of one checkpoint; and what a crash at a uniformly random moment of a session loses
on average: steps that run again, and seconds of session time since the last checkpoint. A
step that runs again replays its recorded model calls and effects: no model call is paid twice
and no side effect is repeated (tests/crash/test_strategy_crashes.py), so "lost" is only the
time to re-run the steps' own code. The floor is one durable commit of one row, measured in the
same run.

Run: ``python benchmarks/strategies.py [--sessions 1000] [--db sqlite,postgres]``. With
``--sessions 200`` it takes a fifth of the time; the figures per session do not depend on it.
Nothing here is asserted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

sys.path.insert(0, str(Path(__file__).resolve().parent))

from framework_overhead import floor_us
from postgres_overhead import database

from perdure import (
    CheckpointStrategy,
    Context,
    FakeClock,
    Runtime,
    Workflow,
    done,
    goto,
    hybrid,
    per_effect,
    per_step,
    step,
    timed,
)
from perdure.core.workflow import Outcome

ROUNDS = 8
TOOLS_PER_ROUND = [1, 2] * (ROUNDS // 2)  # 12 tool calls
SIDE_EFFECTS = {4, 8, 12}  # tool calls (numbered from 1) that change the world
MODEL_SECONDS = 8.0
TOOL_SECONDS = 2.0
TEXT = "the quick brown fox jumps over the lazy dog; " * 22  # ~1 KB

STRATEGIES: dict[str, CheckpointStrategy] = {
    "per_step": per_step(),
    "per_effect": per_effect(),
    "timed(30)": timed(30),
    "hybrid(30)": hybrid(30),
}

SEED = {  # seed 003 §2.1: checkpoints per session, overhead per session, loss after a crash
    "per_step": ("8 (per round)", "~0.8 s", "one round"),
    "per_effect": ("12 (per tool)", "~1.5 s", "~0"),
    "timed(30)": ("~4", "~0.4 s", "~30 s"),
    "hybrid(30)": ("~4", "~0.5 s", "none at core nodes"),
}


@dataclass
class Session:
    round: int = 0
    tools_left: int = 0
    tool_calls: int = 0
    notes: list[str] = field(default_factory=list)


class Clocked:
    """Moves the benchmark's clock and keeps the trace of one strategy's sessions."""

    clock: ClassVar[FakeClock] = FakeClock()
    starts: ClassVar[list[tuple[str, float]]] = []  # (run, clock time) at each step start


@step(next=["tool", "think"])
def think(ctx: Context, s: Session) -> Outcome:
    Clocked.starts.append((ctx.run_id, Clocked.clock.now().timestamp()))
    Clocked.clock.advance(MODEL_SECONDS)
    ctx.effect(
        f"model.{s.round}",
        target="model",
        operation="complete",
        request={"round": s.round},
        execute=lambda _r, _k: {"text": TEXT},
    )
    ctx.add_message("assistant", TEXT)
    s.notes.append(TEXT)
    s.tools_left = TOOLS_PER_ROUND[s.round]
    s.round += 1
    return goto("tool")


@step(next=["tool", "think"])
def tool(ctx: Context, s: Session) -> Outcome:
    Clocked.starts.append((ctx.run_id, Clocked.clock.now().timestamp()))
    Clocked.clock.advance(TOOL_SECONDS)
    s.tool_calls += 1
    if s.tool_calls in SIDE_EFFECTS:
        result: Any = ctx.effect(
            f"tool.{s.tool_calls}",
            target="tool",
            operation="write",
            request={"n": s.tool_calls},
            execute=lambda _r, _k: {"ok": True},
        )
    else:
        result = {"read": s.tool_calls}
    ctx.add_message("tool", TEXT + str(result))
    s.notes.append(TEXT)
    s.tools_left -= 1
    if s.tools_left > 0:
        return goto("tool")
    return goto("think") if s.round < ROUNDS else done({"tools": s.tool_calls})


@dataclass
class Figures:
    commits: list[tuple[str, int, float, float]] = field(default_factory=list)
    """(run, boundaries, wall seconds, clock time) of every commit."""


def measure(url: str, strategy: CheckpointStrategy, sessions: int) -> tuple[Figures, list[str]]:
    Clocked.clock = FakeClock()
    Clocked.starts = []
    figures = Figures()
    wf = Workflow("session", state=Session, steps=[think, tool], checkpoint=strategy)
    with Runtime(url, clock=Clocked.clock, group_commit=False) as rt:
        store = rt.store
        commit = store.commit

        def timed_commit(
            tenant: str, run: str, fence: int, version: int, batch: Any, now: Any
        ) -> int:
            began = time.perf_counter()
            try:
                return commit(tenant, run, fence, version, batch, now)
            finally:
                figures.commits.append(
                    (run, len(batch), time.perf_counter() - began, Clocked.clock.now().timestamp())
                )

        store.commit = timed_commit  # type: ignore[method-assign]
        runs = [rt.start(wf, Session()).run_id for _ in range(sessions)]
        rt.run_until_idle()
        for run_id in runs[:3]:
            assert rt.get(run_id).result == {"tools": 12}, rt.get(run_id)
    return figures, runs


def lost_per_crash(figures: Figures, runs: list[str]) -> tuple[float, float]:
    """Mean steps and session seconds since the last checkpoint, at a random step start."""
    durable: dict[str, list[tuple[float, int]]] = {r: [] for r in runs}
    for run, n, _, at in figures.commits:
        before = durable[run][-1][1] if durable[run] else 0
        durable[run].append((at, before + n))
    steps_lost: list[int] = []
    seconds_lost: list[float] = []
    started: dict[str, int] = {}
    began: dict[str, float] = {}
    for run, at in Clocked.starts:
        began.setdefault(run, at)
    for run, at in Clocked.starts:
        started[run] = started.get(run, 0) + 1
        done_before = started[run] - 1  # steps completed before this one began
        flushed = [(t, d) for t, d in durable[run] if t <= at]
        last_at, count = flushed[-1] if flushed else (began[run], 0)
        steps_lost.append(done_before - count)
        seconds_lost.append(at - last_at)
    return statistics.fmean(steps_lost), statistics.fmean(seconds_lost)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--db", default="sqlite,postgres")
    dsn = os.environ.get("PERDURE_BENCH_PG_DSN") or os.environ.get("PERDURE_TEST_PG_DSN")
    parser.add_argument("--dsn", default=dsn)
    args = parser.parse_args()
    kinds = [k for k in args.db.split(",") if k == "sqlite" or args.dsn]
    print(
        f"{args.sessions} sessions x {ROUNDS} rounds x {sum(TOOLS_PER_ROUND)} tool calls "
        f"({len(SIDE_EFFECTS)} with side effects), {MODEL_SECONDS:g} s per model call and "
        f"{TOOL_SECONDS:g} s per tool call by the injected clock"
    )
    header = (
        f"{'':<22}{'ckpt/session':>13}{'overhead/session':>18}{'ms/ckpt':>9}"
        f"{'lost steps':>11}{'lost s':>8}   seed: ckpts, overhead, lost"
    )
    with tempfile.TemporaryDirectory(prefix="perdure-strategies-") as tmp:
        folder = Path(tmp)
        for kind in kinds:
            print(header)
            for i, (name, strategy) in enumerate(STRATEGIES.items()):
                with database(kind, folder, args.dsn, f"perdure_strat_{i}") as url:
                    figures, runs = measure(url, strategy, args.sessions)
                    floor = floor_us(kind, folder, url) / 1000 if i == 0 else None
                per = len(figures.commits) / len(runs)
                overhead = sum(c[2] for c in figures.commits) / len(runs)
                one = statistics.median(c[2] for c in figures.commits) * 1000
                steps, seconds = lost_per_crash(figures, runs)
                seed = ", ".join(SEED[name])
                label = f"{name}, {kind}"
                print(
                    f"{label:<22}{per:>13.1f}{overhead * 1000:>15.1f} ms{one:>9.2f}"
                    f"{steps:>11.2f}{seconds:>8.1f}   {seed}"
                )
                if floor is not None:
                    floor_label = "(one durable commit)"
                    print(f"{floor_label:<22}{'':>13}{'':>18}{floor:>9.2f}")
            print()


if __name__ == "__main__":
    main()
