"""A step that appends one item to a large list in the state: what it costs as the list grows.

Workload: a run whose state holds a list of chat-message-like items (about 1.6 KB each) filled
up front to 0, 1, 3.2 and 10 MB; each step appends one item. For each size it prints the median
per step of the whole step (wall time), of the commit alone (the store's ``commit``), and of a
load (``load_state`` plus decoding into the state type, as a new process does on claim), beside
the floor measured in the same loop, ``orjson.loads`` of the whole list (``ms/decode``), and
their ratio (``load/dec``: the median of each load's ratio to the decode measured right after
it, which a machine's changing load disturbs less than the ratio of the two medians), on
SQLite and on PostgreSQL (``--dsn``, default ``PERDURE_BENCH_PG_DSN`` then
``PERDURE_TEST_PG_DSN``), with field logs on (the default) and off (``append_from`` beyond any
size: every step rewrites the list, as before field logs). With the ``bench`` extra installed it
measures LangGraph's ``SqliteSaver`` on the same workload (one node appending to a list channel
per super-step; a checkpoint per step) in the same run.

Run: ``python benchmarks/growing_state.py [--sizes 0,1,3.2,10] [--steps 20]``. Nothing here is
asserted.
"""

from __future__ import annotations

import argparse
import operator
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Annotated, Any, TypedDict

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))

from postgres_overhead import fresh_database

from perdure import Context, Runtime, Workflow, done, goto, step
from perdure.core.workflow import Outcome

TEXT = "lorem ipsum dolor sit amet, " * 56  # ~1.6 KB per item


def item(n: int) -> dict[str, Any]:
    return {"role": "user" if n % 2 else "assistant", "content": TEXT, "n": n}


@dataclass
class Chat:
    messages: list[dict[str, Any]] = field(default_factory=list)
    steps: int = 0
    until: int = 0


@step(next=["turn"])
def turn(ctx: Context, state: Chat) -> Outcome:
    state.messages.append(item(len(state.messages)))
    state.steps += 1
    return goto("turn") if state.steps < state.until else done()


chat = Workflow("chat", state=Chat, steps=[turn])


class GraphChat(TypedDict):
    """The same state for LangGraph: the list is a channel that adds what a node returns."""

    messages: Annotated[list[dict[str, Any]], operator.add]
    steps: int


def timed(fn: Callable[..., Any], into: list[float]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            into.append(time.perf_counter() - started)

    return wrapper


def perdure_row(db: str, mb: float, steps: int, logs: bool, folder: Path) -> tuple[float, ...]:
    """(ms per step, ms per commit, ms per load, ms per decode, load ÷ decode) for a list of
    ``mb`` MB growing by one item."""
    count = int(mb * 1_000_000 / len(TEXT))
    append_from = 65_536 if logs else 2**40
    objects = str(folder / "objects")
    with Runtime(db, workflows=[chat], append_from=append_from, artifacts=objects) as rt:
        commits: list[float] = []
        rt.store.commit = timed(rt.store.commit, commits)  # type: ignore[method-assign]
        # step 1 writes the list whole once (and makes it a log); the last ``steps`` are timed
        run = rt.start(chat, Chat([item(i) for i in range(count)], until=steps + 2))
        rt.run_until_idle()
        done_at = [s.finished_at for s in rt.store.steps("default", run.run_id)][-steps - 1 :]
        per_step = [(b - a).total_seconds() for a, b in pairwise(done_at)]
        loads: list[float] = []
        decodes: list[float] = []
        for _ in range(31):
            started = time.perf_counter()
            stored = rt.store.load_state("default", run.run_id)
            fields = rt.services.artifacts.resolve_fields("default", stored, frozenset())
            chat.codec.from_fields(fields)
            loads.append(time.perf_counter() - started)
            started = time.perf_counter()
            orjson.loads(fields["messages"])
            decodes.append(time.perf_counter() - started)
        return (
            statistics.median(per_step) * 1000,
            statistics.median(commits[-steps:]) * 1000,
            statistics.median(loads) * 1000,
            statistics.median(decodes) * 1000,
            statistics.median(load / decode for load, decode in zip(loads, decodes, strict=True)),
        )


def langgraph_row(mb: float, steps: int, folder: Path) -> tuple[float, ...] | None:
    """(ms per step, -, ms per load) for LangGraph's SqliteSaver on the same workload."""
    try:
        import sqlite3

        from langgraph.checkpoint.sqlite import SqliteSaver
        from langgraph.graph import END, START, StateGraph
    except ImportError:
        return None

    def node(s: GraphChat) -> dict[str, Any]:
        return {"messages": [item(len(s["messages"]))], "steps": s["steps"] + 1}

    g = StateGraph(GraphChat)
    g.add_node("turn", node)
    g.add_edge(START, "turn")
    g.add_conditional_edges("turn", lambda s: "turn" if s["steps"] < steps else END)
    conn = sqlite3.connect(folder / "lg.db", check_same_thread=False)
    saver = SqliteSaver(conn)
    graph = g.compile(checkpointer=saver)
    count = int(mb * 1_000_000 / len(TEXT))
    config = {"configurable": {"thread_id": str(uuid.uuid4())}, "recursion_limit": steps + 10}
    prefill = [item(i) for i in range(count)]
    started = time.perf_counter()
    graph.invoke({"messages": prefill, "steps": 0}, config)  # type: ignore[arg-type]
    wall = (time.perf_counter() - started) / steps
    loads: list[float] = []
    for _ in range(5):
        t = time.perf_counter()
        saver.get_tuple(config)  # type: ignore[arg-type]
        loads.append(time.perf_counter() - t)
    conn.close()
    return wall * 1000, float("nan"), statistics.median(loads) * 1000, float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="0,1,3.2,10", help="list sizes in MB")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument(
        "--dsn",
        default=os.environ.get("PERDURE_BENCH_PG_DSN", os.environ.get("PERDURE_TEST_PG_DSN")),
    )
    args = parser.parse_args()
    sizes = [float(s) for s in args.sizes.split(",")]
    print(
        f"{'system':<38} {'MB':>5} {'ms/step':>9} {'ms/commit':>10} {'ms/load':>9} "
        f"{'ms/decode':>10} {'load/dec':>9}"
    )
    for mb in sizes:
        rows: list[tuple[str, tuple[float, ...] | None]] = []
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            for logs in (False, True):
                label = "logs on" if logs else "logs off (before)"
                db = f"sqlite:///{folder / f'p-{logs}.db'}"
                rows.append(
                    (f"perdure SQLite, {label}", perdure_row(db, mb, args.steps, logs, folder))
                )
                if args.dsn:
                    with fresh_database(args.dsn, f"perdure_grow_{os.getpid()}") as url:
                        rows.append(
                            (
                                f"perdure PostgreSQL, {label}",
                                perdure_row(url, mb, args.steps, logs, folder),
                            )
                        )
            rows.append(("LangGraph SqliteSaver", langgraph_row(mb, args.steps, folder)))
        for label, row in rows:
            if row is None:
                print(f"{label:<38} {mb:>5g}   not installed")
            else:
                ratio = row[4] if len(row) > 4 else float("nan")
                print(
                    f"{label:<38} {mb:>5g} {row[0]:>9.2f} {row[1]:>10.2f} {row[2]:>9.2f} "
                    f"{row[3]:>10.2f} {ratio:>9.2f}"
                )
        sys.stdout.flush()


if __name__ == "__main__":
    main()
