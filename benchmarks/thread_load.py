"""Loading a long conversation thread: what a run pays on claim to see its thread.

Workload: one thread of 2,000 messages of about 1.6 kB each (3.2 MB of text): user questions,
assistant replies calling a tool every other turn, and the tools' answers. For SQLite and for
PostgreSQL (``--dsn``, default ``PERDURE_BENCH_PG_DSN`` then ``PERDURE_TEST_PG_DSN``) it times
``Store.messages`` (every message of the thread as :class:`~perdure.Message` records, what a
runtime reads when it claims a run of the thread), beside two floors measured in the same run:

* the same query's rows fetched bare, as tuples, by the database's own driver (``sqlite3``,
  psycopg): what the database hands over before any record is made;
* ``orjson.loads`` of the whole thread as one JSON array (what loading a single stored blob
  would cost at the least).

With the ``bench`` extra installed it also times LangGraph's ``get_tuple`` on the same thread
kept as a ``messages`` channel (``add_messages``, LangChain message objects) by ``SqliteSaver``
and ``PostgresSaver``: what a LangGraph agent loads for the same conversation.

Run: ``python benchmarks/thread_load.py [--messages 2000] [--repeat 30]``. Each figure is the
median and the best of ``--repeat`` loads, in milliseconds. Nothing here is asserted.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))

from postgres_overhead import fresh_database

from perdure import Context, Runtime, ToolCall, Workflow, done, step
from perdure.core.workflow import Outcome

TEXT = "lorem ipsum dolor sit amet, " * 57  # ~1.6 kB per message
COLUMNS = "seq, run_id, role, content, tool_calls, tool_call_id, at, content_artifact"
THREAD = "long"


def conversation(count: int) -> Iterator[tuple[str, str, ToolCall | None, str | None]]:
    """(role, content, tool call, tool_call_id) of each message: a question, a reply calling
    a tool, the tool's answer, a plain reply; again."""
    for i in range(count):
        turn, call_id = i % 4, f"call-{i // 4}"
        if turn == 0:
            yield "user", TEXT, None, None
        elif turn == 1:
            yield "assistant", TEXT, ToolCall(call_id, "search", {"q": "x"}), None
        elif turn == 2:
            yield "tool", TEXT, None, call_id
        else:
            yield "assistant", TEXT, None, None


@dataclass
class Empty:
    """The state of the workflow that writes the thread (it keeps nothing)."""


def writer(count: int) -> Workflow[Empty]:
    @step()
    def write(ctx: Context, state: Empty) -> Outcome:
        for role, content, call, call_id in conversation(count):
            calls = (call,) if call is not None else ()
            ctx.add_message(role, content, tool_calls=calls, tool_call_id=call_id)
        return done()

    return Workflow("write_thread", state=Empty, steps=[write])


def timed(load: Callable[[], Any], repeat: int) -> tuple[float, float]:
    """(median, best) milliseconds of ``repeat`` calls."""
    load()  # warm caches (the database's pages, prepared statements)
    samples = []
    for _ in range(repeat):
        began = time.perf_counter()
        load()
        samples.append((time.perf_counter() - began) * 1e3)
    return statistics.median(samples), min(samples)


def perdure_rows(url: str, count: int, repeat: int) -> list[tuple[str, tuple[float, float]]]:
    """Store.messages, the bare fetch, and the one-blob decode for a thread on ``url``."""
    wf = writer(count)
    with Runtime(url, workflows=[wf]) as rt:
        rt.start(wf, thread=THREAD)
        rt.run_until_idle()
        store = rt.store
        messages = store.messages("default", THREAD)
        assert len(messages) == count, len(messages)
        blob = orjson.dumps([m.to_json() for m in messages])
        found = [
            ("perdure Store.messages", timed(lambda: store.messages("default", THREAD), repeat))
        ]
    with bare_fetch(url) as fetch:
        found.append(("floor: the rows as tuples, bare driver", timed(fetch, repeat)))
    found.append(
        (
            f"floor: orjson.loads of one {len(blob) / 1e6:.1f} MB array",
            timed(lambda: orjson.loads(blob), repeat),
        )
    )
    return found


@contextmanager
def bare_fetch(url: str) -> Iterator[Callable[[], list[Any]]]:
    """The thread's rows fetched with the database's own driver, no records made."""
    if url.startswith("sqlite:///"):
        conn = sqlite3.connect(url.removeprefix("sqlite:///"))
        query = f"SELECT {COLUMNS} FROM messages WHERE tenant_id = ? AND thread_id = ? ORDER BY seq"
        yield lambda: conn.execute(query, ("default", THREAD)).fetchall()
        conn.close()
        return
    import psycopg

    with psycopg.connect(url, autocommit=True) as pg:
        query = (
            f"SELECT {COLUMNS} FROM perdure.messages WHERE tenant_id = %s AND thread_id = %s "
            "ORDER BY seq"
        )
        yield lambda: pg.execute(query, ("default", THREAD)).fetchall()


def langgraph_row(saver: Any, count: int, repeat: int) -> tuple[float, float]:
    """get_tuple of a LangGraph thread whose ``messages`` channel holds the conversation."""
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langgraph.graph import START, MessagesState, StateGraph

    made: list[Any] = []
    for role, content, call, call_id in conversation(count):
        if role == "user":
            made.append(HumanMessage(content))
        elif role == "tool":
            made.append(ToolMessage(content, tool_call_id=call_id))
        elif call is not None:
            made.append(
                AIMessage(
                    content, tool_calls=[{"id": call.id, "name": call.name, "args": {"q": "x"}}]
                )
            )
        else:
            made.append(AIMessage(content))
    g = StateGraph(MessagesState)
    g.add_node("noop", lambda s: {})
    g.add_edge(START, "noop")
    graph = g.compile(checkpointer=saver)
    config = {"configurable": {"thread_id": THREAD}}
    graph.invoke({"messages": made}, config)  # type: ignore[arg-type]
    checkpoint = saver.get_tuple(config)
    assert len(checkpoint.checkpoint["channel_values"]["messages"]) == count
    return timed(lambda: saver.get_tuple(config), repeat)


def langgraph_sqlite(folder: Path, count: int, repeat: int) -> tuple[float, float] | None:
    try:
        from langgraph.checkpoint.sqlite import SqliteSaver
    except ImportError:
        return None
    conn = sqlite3.connect(folder / "langgraph.db", check_same_thread=False)
    try:
        return langgraph_row(SqliteSaver(conn), count, repeat)
    finally:
        conn.close()


def langgraph_postgres(url: str, count: int, repeat: int) -> tuple[float, float] | None:
    try:
        from langgraph.checkpoint.postgres import PostgresSaver
    except ImportError:
        return None
    with PostgresSaver.from_conn_string(url) as saver:
        saver.setup()
        return langgraph_row(saver, count, repeat)


def print_row(label: str, figures: tuple[float, float] | None) -> None:
    if figures is None:
        print(f"  {label:<44} not installed")
    else:
        print(f"  {label:<44} {figures[0]:8.2f} {figures[1]:8.2f}")
    sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument(
        "--dsn",
        default=os.environ.get("PERDURE_BENCH_PG_DSN", os.environ.get("PERDURE_TEST_PG_DSN")),
    )
    args = parser.parse_args()
    print(f"a thread of {args.messages} messages; ms, median and best of {args.repeat}")
    with tempfile.TemporaryDirectory(prefix="perdure-thread-") as tmp:
        folder = Path(tmp)
        print(f"  {'SQLite':<44} {'median':>8} {'best':>8}")
        for label, figures in perdure_rows(
            f"sqlite:///{folder / 'p.db'}", args.messages, args.repeat
        ):
            print_row(label, figures)
        print_row(
            "LangGraph SqliteSaver get_tuple", langgraph_sqlite(folder, args.messages, args.repeat)
        )
    if not args.dsn:
        print("PostgreSQL: no --dsn")
        return
    print("  PostgreSQL")
    with fresh_database(args.dsn, f"perdure_thread_{os.getpid()}") as url:
        for label, figures in perdure_rows(url, args.messages, args.repeat):
            print_row(label, figures)
    with fresh_database(args.dsn, f"langgraph_thread_{os.getpid()}") as url:
        print_row(
            "LangGraph PostgresSaver get_tuple", langgraph_postgres(url, args.messages, args.repeat)
        )


if __name__ == "__main__":
    main()
