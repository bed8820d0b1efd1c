"""A LangGraph agent for the checkpointer tests: a scripted model, a tool node, a gate and a
human approval (``interrupt``).

agent -> tools (ToolNode with ``add``) -> agent -> check -> approve (interrupt) -> final

Every node and the tool append ``ENTER <name>`` to ``COUNTING_LOG``, so a test counts what ran
across processes; ``COUNTING_HOLD_AT=<node>`` makes that node wait at the gate
``COUNTING_GATE/<node>`` (see ``tests.conftest.Gates``) until the test opens it or kills the
process. Run as ``python -m tests.apps.graph_app DB_URL THREAD start|continue|resume=VALUE``:
each invocation holds the thread and prints the final state (or the pending interrupt) as JSON.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any, TypedDict

import orjson
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode
from langgraph.types import Command, interrupt

from perdure.langgraph import PerdureSaver
from tests.apps.counting import hold, log


class AgentState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    approved: str


def entered(name: str) -> None:
    import os

    log(f"ENTER {name} -")
    if os.environ.get("COUNTING_HOLD_AT") == name:
        hold(name)


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    entered("tool_add")
    return a + b


def agent(state: AgentState) -> dict[str, Any]:
    entered("agent")
    last = state["messages"][-1]
    if isinstance(last, ToolMessage):
        return {"messages": [AIMessage(content=f"the sum is {last.content}")]}
    call = {"name": "add", "args": {"a": 2, "b": 3}, "id": "call-1", "type": "tool_call"}
    return {"messages": [AIMessage(content="", tool_calls=[call])]}


def route(state: AgentState) -> str:
    last = state["messages"][-1]
    return "tools" if isinstance(last, AIMessage) and last.tool_calls else "check"


def check(state: AgentState) -> dict[str, Any]:
    entered("check")
    return {}


def approve(state: AgentState) -> dict[str, Any]:
    entered("approve")
    decision = interrupt({"question": "send the sum?", "sum": state["messages"][-1].content})
    return {"approved": str(decision)}


def final(state: AgentState) -> dict[str, Any]:
    entered("final")
    return {"messages": [AIMessage(content=f"done, approved={state['approved']}")]}


def build(saver: Any) -> Any:
    """The compiled graph on ``saver``."""
    g = StateGraph(AgentState)
    g.add_node("agent", agent)
    g.add_node("tools", ToolNode([add]))
    g.add_node("check", check)
    g.add_node("approve", approve)
    g.add_node("final", final)
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", route, {"tools": "tools", "check": "check"})
    g.add_edge("tools", "agent")
    g.add_edge("check", "approve")
    g.add_edge("approve", "final")
    g.add_edge("final", END)
    return g.compile(checkpointer=saver)


def summary(result: dict[str, Any]) -> dict[str, Any]:
    """What a test compares: message texts, the approval, pending interrupts."""
    return {
        "messages": [m.content for m in result.get("messages", [])],
        "approved": result.get("approved"),
        "interrupts": [i.value for i in result.get("__interrupt__", [])],
    }


def main(url: str, thread: str, mode: str) -> None:
    with PerdureSaver.from_conn_string(url) as saver:
        saver.setup()
        graph = build(saver)
        config = {"configurable": {"thread_id": thread}}
        payload: Any
        if mode == "start":
            payload = {"messages": [HumanMessage(content="add 2 and 3")]}
        elif mode == "continue":
            payload = None
        else:
            payload = Command(resume=mode.removeprefix("resume="))
        with saver.hold(config) as held:
            result = graph.invoke(payload, held, durability="sync")
        print(orjson.dumps(summary(result)).decode())


if __name__ == "__main__":
    main(*sys.argv[1:4])
