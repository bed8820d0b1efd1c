"""The LangGraph demo's agent (a payment after a person approves it in a node of its own), one
invocation per process, held: ``python -m tests.apps.graph_pay_app URL THREAD MODE LEDGER
CALLS`` with MODE ``start`` (to the approval) or ``approve``. The payment is an effect tool with
a reconciler; the ledger keeps every payment it is sent."""

from __future__ import annotations

import sys
from typing import Any

import orjson
from langchain_core.messages import HumanMessage
from langgraph.types import Command

from perdure.demos.graph_agent import QUESTION, build
from perdure.langgraph import PerdureSaver


def main(url: str, thread: str, mode: str, ledger: str, calls: str) -> None:
    with PerdureSaver.from_conn_string(url) as saver:
        saver.setup()
        graph = build(saver, ledger=ledger, calls=calls, durable=True, approval="node")
        config: Any = {"configurable": {"thread_id": thread}}
        payload: Any = Command(resume="yes")
        if mode == "start":
            payload = {"messages": [HumanMessage(content=QUESTION)]}
        with saver.hold(config) as held:
            result = graph.invoke(payload, held, durability="sync")
        print(orjson.dumps({"interrupts": len(result.get("__interrupt__", []))}).decode())


if __name__ == "__main__":
    main(*sys.argv[1:6])
