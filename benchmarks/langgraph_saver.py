"""PerdureSaver against LangGraph's SqliteSaver and PostgresSaver, in the same run.

The graph: 20 nodes in a line, each adding 1 to a small ``count`` channel, and a ``messages``
channel of about 3 MB (300 messages of 10 kB) written once, by the input. One invocation is 20
steps (plus the input checkpoint), with ``durability="sync"``: every step's checkpoint is
committed before the next step starts.

Per-step latency: wall time of the invocations after a warm-up, divided by the steps.
Checkpoint size growth: the database size after the steps minus before, the 3 MB channel
already stored (SQLite: pages in use; PostgreSQL: ``pg_database_size``, where values are
TOAST-compressed), per step and scaled to 1,000 steps. A saver that rewrites
every channel at every step grows by ~3 MB per step, so ``--sqlite-saver-steps`` keeps that one
short (its growth per step is measured, not assumed).

Needs the ``bench`` extra; PostgreSQL needs ``PERDURE_TEST_PG_DSN`` (a server where databases
may be created). ``python benchmarks/langgraph_saver.py [--steps 1000]``.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AnyMessage, HumanMessage
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages

NODES = 20


class State(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    count: int


def graph(saver: Any) -> Any:
    g = StateGraph(State)
    prev = START
    for i in range(NODES):
        name = f"n{i}"
        g.add_node(name, lambda s: {"count": s.get("count", 0) + 1})
        g.add_edge(prev, name)
        prev = name
    return g.compile(checkpointer=saver)


def big_input() -> dict[str, Any]:
    body = "x" * 10_000
    return {"messages": [HumanMessage(content=body, id=str(i)) for i in range(300)], "count": 0}


def measure(
    name: str,
    opened: AbstractContextManager[Any],
    size: Callable[[], int],
    steps: int,
) -> dict[str, Any]:
    with opened as saver:
        g = graph(saver)
        thread = {"configurable": {"thread_id": "warm"}}
        g.invoke(big_input(), thread, durability="sync")  # warm-up, not counted
        config = {"configurable": {"thread_id": "bench"}}
        g.invoke(big_input(), config, durability="sync")  # the 3 MB channel, stored once
        before = size()
        invocations = max(1, steps // NODES)
        start = time.perf_counter()
        for _ in range(invocations):
            g.invoke({"count": 0}, config, durability="sync")
        elapsed = time.perf_counter() - start
        done = invocations * NODES
        growth = size() - before
    per_step_ms = elapsed / done * 1000
    return {
        "saver": name,
        "steps": done,
        "ms_per_step": per_step_ms,
        "bytes_per_step": growth / done,
        "mb_at_1000": growth / done * 1000 / 1e6,
    }


def sqlite_size(path: Path) -> Callable[[], int]:
    """Pages in use (committed WAL frames included), so the WAL's own size does not count."""
    import sqlite3

    def size() -> int:
        conn = sqlite3.connect(path)
        pages, free, page = (
            conn.execute(f"PRAGMA {p}").fetchone()[0]
            for p in ("page_count", "freelist_count", "page_size")
        )
        conn.close()
        return int((pages - free) * page)

    return size


@contextmanager
def pg_database(dsn: str) -> Iterator[str]:
    import psycopg

    name = f"bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    url = dsn.rsplit("/", 1)[0] + "/" + name
    try:
        yield url
    finally:
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


def pg_size(url: str) -> Callable[[], int]:
    import psycopg

    def size() -> int:
        with psycopg.connect(url) as conn:
            row = conn.execute("SELECT pg_database_size(current_database())").fetchone()
            return int(row[0]) if row else 0

    return size


@contextmanager
def perdure_saver(url: str) -> Iterator[Any]:
    from perdure.langgraph import PerdureSaver

    with PerdureSaver.from_conn_string(url) as saver:
        saver.setup()
        yield saver


@contextmanager
def sqlite_saver(path: Path) -> Iterator[Any]:
    from langgraph.checkpoint.sqlite import SqliteSaver

    with SqliteSaver.from_conn_string(str(path)) as saver:
        saver.setup()
        yield saver


@contextmanager
def postgres_saver(url: str) -> Iterator[Any]:
    from langgraph.checkpoint.postgres import PostgresSaver

    with PostgresSaver.from_conn_string(url) as saver:
        saver.setup()
        yield saver


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--sqlite-saver-steps", type=int, default=40)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        a, b = Path(tmp) / "perdure.db", Path(tmp) / "langgraph.db"
        rows.append(
            measure(
                "PerdureSaver sqlite", perdure_saver(f"sqlite:///{a}"), sqlite_size(a), args.steps
            )
        )
        rows.append(
            measure("SqliteSaver", sqlite_saver(b), sqlite_size(b), args.sqlite_saver_steps)
        )
    dsn = os.environ.get("PERDURE_TEST_PG_DSN")
    if dsn:
        with pg_database(dsn) as url:
            rows.append(
                measure("PerdureSaver postgres", perdure_saver(url), pg_size(url), args.steps)
            )
        with pg_database(dsn) as url:
            rows.append(measure("PostgresSaver", postgres_saver(url), pg_size(url), args.steps))
    print(f"{'saver':24} {'steps':>6} {'ms/step':>8} {'kB/step':>9} {'MB at 1,000 steps':>18}")
    for r in rows:
        print(
            f"{r['saver']:24} {r['steps']:>6} {r['ms_per_step']:>8.2f} "
            f"{r['bytes_per_step'] / 1000:>9.1f} {r['mb_at_1000']:>18.1f}"
        )


if __name__ == "__main__":
    main()
