"""Fan-out and fan-in: one parent spawns N child runs of 5 steps each and waits for them.

Measured on SQLite and PostgreSQL with 4 ``perdure worker`` processes (concurrency 8 each): the
wall time from the parent's start to its SUCCEEDED (the last child's settling commit wakes the
parent, a worker claims it and merges the children's results). The workers are started and
registered before the clock starts. In the same run, when the ``bench`` extra is installed:
LangGraph ``Send`` fan-out of N to a 5-node subgraph with a ``SqliteSaver``, and DBOS (SQLite
system database) a parent workflow that starts N child workflows of 5 steps and gathers them.

Not a test: ``python benchmarks/fanout.py [--children 100] [--steps 5]`` (PostgreSQL needs
``PERDURE_TEST_PG_DSN``; the benchmark creates and drops its own database there).

This module is also the app the workers load (``--app benchmarks.fanout``).
"""

from __future__ import annotations

import argparse
import json
import operator
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, TypedDict

from perdure import Context, Runtime, Workflow, done, goto, step
from perdure.core.reducers import append
from perdure.core.workflow import wait_for_children

ROOT = Path(__file__).resolve().parent.parent
STEPS = int(os.environ.get("FANOUT_STEPS", "5"))


@dataclass
class Leaf:
    i: int = 0
    n: int = 0


def _leaf_step(ctx: Context, s: Leaf) -> Any:
    s.n += 1
    if s.n >= STEPS:
        return done({"values": [s.i]})
    return goto(f"s{s.n + 1}")


leaf = Workflow(
    "leaf",
    state=Leaf,
    steps=[
        step(name=f"s{k}", next=[f"s{k + 1}"] if k < STEPS else [])(_leaf_step)
        for k in range(1, STEPS + 1)
    ],
)


@dataclass
class Fan:
    children: int = 100
    values: list[int] = field(default_factory=list)


@step(next=["gather"])
def spawn(ctx: Context, s: Fan):  # type: ignore[no-untyped-def]
    for i in range(s.children):
        ctx.spawn(leaf, {"i": i}, key=f"c{i:04d}")
    return wait_for_children(on_done="gather")


@step
def gather(ctx: Context, s: Fan):  # type: ignore[no-untyped-def]
    merged = ctx.merge_children(s)
    return done({"count": len(merged.values), "sum": sum(merged.values)})


fanout = Workflow("fanout", state=Fan, steps=[spawn, gather], reducers={"values": append})


def perdure_fanout(db_url: str, children: int, workers: int = 4) -> float:
    """Seconds from the parent's start to its SUCCEEDED, with ``workers`` worker processes."""
    env = {**os.environ, "FANOUT_STEPS": str(STEPS), "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "perdure", "--db", db_url, "worker", "--app",
           "benchmarks.fanout", "--concurrency", "8", "--poll", "0.02"]  # fmt: skip
    with Runtime(db_url, workflows=[fanout, leaf]) as rt:
        quiet = subprocess.DEVNULL
        procs = [
            subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=quiet, stderr=quiet)
            for _ in range(workers)
        ]
        try:
            deadline = time.monotonic() + 60
            while len([w for w in rt.activity.workers() if w.state == "live"]) < workers:
                if time.monotonic() > deadline:
                    raise RuntimeError("the workers did not start")
                time.sleep(0.05)
            start = time.perf_counter()
            run = rt.start(fanout, {"children": children})
            while True:
                current = rt.get(run.run_id)
                if current.status.terminal:
                    break
                time.sleep(0.01)
            elapsed = time.perf_counter() - start
            expected = {"count": children, "sum": children * (children - 1) // 2}
            if current.result != expected:
                raise RuntimeError(f"fan-in gave {current.result}, not {expected}")
        finally:
            for p in procs:
                p.send_signal(signal.SIGTERM)
            for p in procs:
                p.wait(timeout=30)
    return elapsed


class Child(TypedDict):
    i: int
    n: int
    values: list[int]


class Parent(TypedDict):
    values: Annotated[list[int], operator.add]


def langgraph_send(tmp: Path, children: int) -> float:
    """Seconds for one LangGraph invoke that fans out ``children`` ``Send``s to a 5-node
    subgraph and fans in with an ``operator.add`` reducer (``SqliteSaver``, durability sync)."""
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import Send

    sub = StateGraph(Child)
    for k in range(1, STEPS + 1):
        last = k == STEPS

        def node(s: Child, last: bool = last) -> dict[str, Any]:
            return {"n": s["n"] + 1, **({"values": [s["i"]]} if last else {})}

        sub.add_node(f"s{k}", node)
        sub.add_edge(START if k == 1 else f"s{k - 1}", f"s{k}")
    sub.add_edge(f"s{STEPS}", END)
    child = sub.compile()

    graph = StateGraph(Parent)
    graph.add_node("child", child)
    graph.add_conditional_edges(
        START, lambda s: [Send("child", {"i": i, "n": 0, "values": []}) for i in range(children)]
    )
    graph.add_edge("child", END)
    with SqliteSaver.from_conn_string(str(tmp / "langgraph.sqlite")) as saver:
        app = graph.compile(checkpointer=saver)
        start = time.perf_counter()
        out = app.invoke({"values": []}, {"configurable": {"thread_id": "t1"}}, durability="sync")
        elapsed = time.perf_counter() - start
    if sorted(out["values"]) != list(range(children)):
        raise RuntimeError("LangGraph fan-in lost values")
    return elapsed


def dbos_children(tmp: Path, children: int) -> float:
    """Seconds for a DBOS parent workflow that starts ``children`` child workflows of 5 steps
    (SQLite system database) and gathers their results."""
    from dbos import DBOS, DBOSConfig

    @DBOS.step(name="fanout_leaf_step")
    def leaf_step(i: int) -> int:
        return i

    @DBOS.workflow(name="fanout_leaf")
    def leaf_wf(i: int) -> int:
        for _ in range(STEPS):
            leaf_step(i)
        return i

    @DBOS.workflow(name="fanout_parent")
    def parent(n: int) -> int:
        handles = [DBOS.start_workflow(leaf_wf, i) for i in range(n)]
        return sum(h.get_result() for h in handles)

    config: DBOSConfig = {
        "name": "perdure-fanout-bench",
        "system_database_url": f"sqlite:///{(tmp / 'dbos.sqlite').resolve()}",
        "log_level": "WARNING",
    }
    DBOS(config=config)
    try:
        DBOS.launch()
        start = time.perf_counter()
        total = parent(children)
        elapsed = time.perf_counter() - start
    finally:
        DBOS.destroy()
    if total != children * (children - 1) // 2:
        raise RuntimeError("DBOS fan-in lost values")
    return elapsed


def _pg_url(dsn: str, name: str) -> str:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {name}")
    return dsn.rsplit("/", 1)[0] + f"/{name}"


def _pg_drop(dsn: str, name: str) -> None:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="fan-out of N children, fan-in time")
    parser.add_argument("--children", type=int, default=100)
    parser.add_argument("--workers", type=int, default=4)
    args = parser.parse_args(argv)
    n = args.children
    figures: dict[str, float | str] = {}
    with tempfile.TemporaryDirectory() as scratch:
        tmp = Path(scratch)
        figures["perdure sqlite"] = perdure_fanout(f"sqlite:///{tmp / 'p.db'}", n, args.workers)
        dsn = os.environ.get("PERDURE_TEST_PG_DSN")
        if dsn:
            name = "perdure_bench_fanout"
            try:
                figures["perdure postgres"] = perdure_fanout(_pg_url(dsn, name), n, args.workers)
            finally:
                _pg_drop(dsn, name)
        for label, fn in (("langgraph Send", langgraph_send), ("dbos children", dbos_children)):
            try:
                figures[label] = fn(tmp, n)
            except ImportError as exc:
                figures[label] = f"not installed ({exc.name})"
    print(json.dumps({"children": n, "steps": STEPS, "workers": args.workers}))
    for label, value in figures.items():
        shown = f"{value:8.2f} s" if isinstance(value, float) else value
        print(f"{label:<18} {shown}")


if __name__ == "__main__":
    main()
