"""The LangGraph demo's agent (``perdure.demos.graph_agent``: a payment after a person's
approval) driven one action per process, for crash tests.

``python -m tests.apps.approval_app SPEC ACTION`` where SPEC is JSON (``url``, ``thread``,
``folder``, ``saver``: ``sync`` or ``async``, ``durability``, ``entry``: ``plain``,
``resume`` or ``held``, ``approval``: ``tool`` or ``node``, ``tool``: ``effect`` or
``plain``) and ACTION is ``start``, ``answer`` (the person says yes, through ``entry``),
``continue`` (``graph.invoke(None)``) or ``approve`` (``Command(resume="yes")``). Prints
``{"interrupted": bool}``. ``PERDURE_CRASH_AT=approved:pay`` or ``after_call:pay`` exits at
that point; ``COUNTING_HOLD_AT=approved|after_call`` (with ``COUNTING_GATE``) makes the process
wait at that point instead, for the test to SIGKILL it there.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

from langchain_core.messages import HumanMessage
from langgraph.types import Command

import perdure.demos.graph_agent as app
from perdure.langgraph import AsyncPerdureSaver, PerdureSaver, aresume, effects, resume
from perdure.runtime.crashpoints import crashpoint
from tests.apps.counting import hold


def held_point(point: str, name: str | None = None) -> None:
    """A crash point that also waits at the test's gate when ``COUNTING_HOLD_AT`` names it."""
    if os.environ.get("COUNTING_HOLD_AT") == point:
        print(f"HOLD {point}", file=sys.stderr, flush=True)
        hold(point)
    crashpoint(point, name)


app.crashpoint = held_point  # type: ignore[attr-defined]
effects.crashpoint = held_point  # type: ignore[attr-defined]


def act(spec: dict[str, Any], action: str) -> bool:
    payload: Any = {
        "start": {"messages": [HumanMessage(content=app.QUESTION)]},
        "answer": Command(resume="yes"),
        "continue": None,
        "approve": Command(resume="yes"),
    }[action]
    config: Any = {"configurable": {"thread_id": spec["thread"]}}
    kw = {"durability": spec["durability"]}
    resuming = action == "answer" and spec["entry"] == "resume"

    def graph_on(saver: Any) -> Any:
        return app.build(
            saver,
            ledger=f"{spec['folder']}/ledger.db",
            calls=f"{spec['folder']}/calls",
            durable=spec["tool"] == "effect",
            approval=spec["approval"],
        )

    if spec["saver"] == "sync":
        with PerdureSaver.from_conn_string(spec["url"]) as saver:
            saver.setup()
            graph = graph_on(saver)
            if resuming:
                out = resume(graph, "yes", config, **kw)
            elif spec["entry"] == "held":
                with saver.hold(config) as held:
                    out = graph.invoke(payload, held, **kw)
            else:
                out = graph.invoke(payload, config, **kw)
            return bool(out.get("__interrupt__"))

    async def run() -> bool:
        async with AsyncPerdureSaver.from_conn_string(spec["url"]) as saver:
            await saver.asetup()
            graph = graph_on(saver)
            if resuming:
                out = await aresume(graph, "yes", config, **kw)
            elif spec["entry"] == "held":
                async with saver.ahold(config) as held:
                    out = await graph.ainvoke(payload, held, **kw)
            else:
                out = await graph.ainvoke(payload, config, **kw)
            return bool(out.get("__interrupt__"))

    return asyncio.run(run())


if __name__ == "__main__":
    print(json.dumps({"interrupted": act(json.loads(sys.argv[1]), sys.argv[2])}))
