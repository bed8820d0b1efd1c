"""A streamed async graph run on ``AsyncPerdureSaver`` cancelled mid-run, then the saver closed
at once, again and again in one process: ``python -m tests.langgraph.cancelled_stream DB_URL
TIMES``. Cancelling the stream cancels LangGraph's awaits, not the worker threads that write
its checkpoints, so the close meets writes still running. Prints ``survived TIMES`` and exits
0 when the process lived through every round (a connection closed under another thread's write
crashes the process with SIGSEGV instead)."""

from __future__ import annotations

import asyncio
import contextlib
import operator
import sys
from typing import Annotated, Any, TypedDict

from langgraph.graph import END, START, StateGraph

from perdure.langgraph import AsyncPerdureSaver

NODES = 8


class Pile(TypedDict):
    items: Annotated[list[str], operator.add]


def build(saver: AsyncPerdureSaver) -> Any:
    builder = StateGraph(Pile)
    before = START
    for i in range(NODES):
        builder.add_node(f"n{i}", lambda _, i=i: {"items": [str(i) * 2000]})
        builder.add_edge(before, f"n{i}")
        before = f"n{i}"
    builder.add_edge(before, END)
    return builder.compile(checkpointer=saver)


async def one_round(url: str, k: int) -> None:
    async with AsyncPerdureSaver.from_conn_string(url) as saver:
        if k == 0:
            await saver.asetup()
        graph = build(saver)
        config = {"configurable": {"thread_id": f"t{k}"}}

        async def consume() -> None:
            async for _ in graph.astream({"items": []}, config, durability="async"):
                pass

        run = asyncio.create_task(consume())
        for _ in range(k % 5 + 1):  # cancel at a different point of the run each round
            await asyncio.sleep(0)
        run.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await run
    # the block's end closed the saver while the cancelled run's writes were in flight


async def main(url: str, times: int) -> None:
    for k in range(times):
        await one_round(url, k)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
    print(f"survived {sys.argv[2]}", flush=True)
