"""``effect_tool``: a LangGraph tool whose calls are perdure effects of the thread's run — called
once per tool call, the recorded result whenever its node runs again; on both databases. (A
process killed during the call is in tests/crash/test_langgraph_crash.py.)"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import InjectedToolArg, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import Command, interrupt

from perdure import Runtime
from perdure.core.effects import (
    EffectStatus,
    PermanentError,
    Reconciled,
    TransientError,
    UnknownOutcomeError,
)
from perdure.core.errors import InvalidInputError, ToolEffectAmbiguousError
from perdure.core.graph import graph_effect_key, graph_run_id
from perdure.demos.graph_agent import QUESTION, build, counts, payments
from perdure.langgraph import AsyncPerdureSaver, PerdureSaver, effect_tool, resume


def cfg(thread: str = "t1") -> Any:
    return {"configurable": {"thread_id": thread}}


START_INPUT = {"messages": [HumanMessage(content=QUESTION)]}


def agent_on(saver: Any, tmp_path: Path, durable: bool = True, approval: str = "tool") -> Any:
    return build(
        saver,
        ledger=str(tmp_path / "ledger.db"),
        calls=str(tmp_path / "calls"),
        durable=durable,
        approval=approval,  # type: ignore[arg-type]
    )


def test_an_approved_tool_pays_once_where_a_plain_tool_pays_again_on_a_rerun(
    saver: PerdureSaver, tmp_path: Path
) -> None:
    for durable in (True, False):
        folder = tmp_path / str(durable)
        folder.mkdir()
        graph = agent_on(saver, folder, durable)
        thread = cfg(f"t-{durable}")
        assert graph.invoke(START_INPUT, thread)["__interrupt__"]
        done = resume(graph, "yes", thread)
        assert done["messages"][-1].content.startswith('Done: {"paid": true')
        # the tools step runs again from the checkpoint before it (a replay, as after a crash)
        before = next(s for s in graph.get_state_history(thread) if s.next == ("tools",))
        graph.invoke(None, before.config)
        resume(graph, "yes", thread)
        assert payments(str(folder / "ledger.db")) == (1 if durable else 2), durable


def test_the_tool_gets_its_key_and_the_model_never_sees_it(
    saver: PerdureSaver, tmp_path: Path
) -> None:
    keys: list[str] = []

    def send(to: str, idempotency_key: str) -> str:
        """Send a letter."""
        keys.append(idempotency_key)
        return f"sent to {to}"

    wrapped = effect_tool(send)
    assert list(wrapped.tool_call_schema.model_json_schema()["properties"]) == ["to"]  # type: ignore[union-attr]
    graph = one_call(saver, wrapped, "send", {"to": "ana"})
    out = graph.invoke({"messages": [HumanMessage(content="go")]}, cfg())
    assert out["messages"][-1].content == "sent to ana"
    assert keys == [graph_effect_key("default", "t1", "tools:x", "c1")]
    (effect,) = saver.runtime.effects.list(run_id=graph_run_id("default", "t1"))
    assert (effect.key, effect.status, effect.attempts) == (keys[0], EffectStatus.CONFIRMED, 1)
    assert (effect.target, effect.operation, effect.request) == (
        "tool",
        "send",
        {"arguments": {"to": "ana"}},
    )


def one_call(saver: Any, wrapped: Any, name: str, args: dict[str, Any], call: str = "c1") -> Any:
    """agent (one tool call) -> tools."""

    def agent(state: MessagesState) -> dict[str, Any]:
        return {
            "messages": [
                AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": call}])
            ]
        }

    g = StateGraph(MessagesState)
    g.add_node("agent", agent)
    g.add_node("tools", ToolNode([wrapped]))
    g.add_edge(START, "agent")
    g.add_edge("agent", "tools")
    return g.compile(checkpointer=saver)


def test_a_langchain_tool_takes_its_key_as_an_injected_argument(
    saver: PerdureSaver,
) -> None:
    @tool
    def book(room: str, idempotency_key: Annotated[str, InjectedToolArg]) -> str:
        """Book a room."""
        return f"{room}:{idempotency_key.rsplit('/', 1)[-1]}"

    graph = one_call(saver, effect_tool(book), "book", {"room": "r2"})
    assert graph.invoke({"messages": []}, cfg())["messages"][-1].content == "r2:tool.c1"


def test_an_unknown_outcome_stops_for_a_person_and_their_decision_is_replayed(
    saver: PerdureSaver,
) -> None:
    calls: list[str] = []

    def charge(amount: int) -> str:
        """Charge a card."""
        calls.append("charge")
        raise UnknownOutcomeError("timeout", "the provider did not answer")

    graph = one_call(saver, effect_tool(charge), "charge", {"amount": 5})
    with pytest.raises(ToolEffectAmbiguousError) as stopped:
        graph.invoke({"messages": []}, cfg())
    assert stopped.value.code == "ambiguous_effect"
    with pytest.raises(ToolEffectAmbiguousError):
        graph.invoke(None, cfg())  # asked again: still no call
    assert calls == ["charge"]
    key = graph_effect_key("default", "t1", "tools:x", "c1")
    saver.runtime.effects.resolve(
        key, applied=True, by="ops", reason="found it", result="charged 5"
    )
    assert graph.invoke(None, cfg())["messages"][-1].content == "charged 5"
    assert calls == ["charge"]


def test_a_reconciler_answers_for_a_call_in_doubt(saver: PerdureSaver) -> None:
    done: dict[str, str] = {}

    def ship(item: str, idempotency_key: str) -> str:
        """Ship an item."""
        done[idempotency_key] = item
        raise UnknownOutcomeError("timeout", "no answer")

    def reconcile(request: Any, key: str) -> Reconciled:
        return (
            Reconciled.confirmed(f"shipped {done[key]}") if key in done else Reconciled.not_found()
        )

    graph = one_call(saver, effect_tool(ship, reconcile=reconcile), "ship", {"item": "cup"})
    assert graph.invoke({"messages": []}, cfg())["messages"][-1].content == "shipped cup"
    assert len(done) == 1


def test_a_refused_call_is_told_to_the_model_and_never_made_again(
    saver: PerdureSaver,
) -> None:
    calls: list[int] = []

    def refund(amount: int) -> str:
        """Refund."""
        calls.append(amount)
        raise PermanentError("invalid_request", "amount too large")

    graph = one_call(saver, effect_tool(refund), "refund", {"amount": 10**6})
    out = graph.invoke({"messages": []}, cfg())
    reply = out["messages"][-1]
    assert isinstance(reply, ToolMessage) and "rejected" in str(reply.content)
    before = next(s for s in graph.get_state_history(cfg()) if s.next == ("tools",))
    graph.invoke(None, before.config)
    assert calls == [10**6]


def test_a_call_that_did_not_reach_the_provider_is_made_on_the_next_try(
    saver: PerdureSaver,
) -> None:
    calls: list[int] = []

    def post(n: int) -> str:
        """Post."""
        calls.append(n)
        if len(calls) == 1:
            raise TransientError("rate_limited", "slow down")
        return "posted"

    graph = one_call(saver, effect_tool(post), "post", {"n": 1})
    with pytest.raises(TransientError):
        graph.invoke({"messages": []}, cfg())
    assert graph.invoke(None, cfg())["messages"][-1].content == "posted"
    (effect,) = saver.runtime.effects.list()
    assert (effect.status, effect.attempts, calls) == (EffectStatus.CONFIRMED, 2, [1, 1])


def test_an_async_tool_in_an_async_graph_pays_once(graph_url: str, tmp_path: Path) -> None:
    calls: list[str] = []

    async def pay(amount: int, idempotency_key: str) -> dict[str, Any]:
        """Pay after approval."""
        if interrupt({"pay": amount}) != "yes":
            return {"paid": False}
        calls.append(idempotency_key)
        await asyncio.sleep(0)
        return {"paid": True}

    async def scenario() -> Any:
        async with AsyncPerdureSaver.from_conn_string(graph_url) as saver:
            await saver.asetup()
            graph = one_call(saver, effect_tool(pay), "pay", {"amount": 3})
            paused = await graph.ainvoke({"messages": []}, cfg())
            assert paused["__interrupt__"][0].value == {"pay": 3}
            out = await graph.ainvoke(Command(resume="yes"), cfg())
            before = next(s for s in graph.get_state_history(cfg()) if s.next == ("tools",))
            await graph.ainvoke(None, before.config)
            return out

    out = asyncio.run(scenario())
    assert out["messages"][-1].content == '{"paid": true}'
    assert len(calls) == 1


def test_an_effect_tool_needs_a_perdure_saver() -> None:
    def noop(x: int) -> int:
        """No-op."""
        return x

    graph = one_call(InMemorySaver(), effect_tool(noop), "noop", {"x": 1})
    with pytest.raises(InvalidInputError, match="PerdureSaver"):
        graph.invoke({"messages": []}, cfg())


def test_a_tool_that_pauses_for_a_person_counts_no_attempt(
    saver: PerdureSaver, tmp_path: Path
) -> None:
    graph = agent_on(saver, tmp_path)
    graph.invoke(START_INPUT, cfg())
    (effect,) = saver.runtime.effects.list()
    assert (effect.status, effect.attempts) == (EffectStatus.PLANNED, 0)
    resume(graph, "yes", cfg())
    (effect,) = saver.runtime.effects.list()
    assert (effect.status, effect.attempts) == (EffectStatus.CONFIRMED, 1)
    assert counts(str(tmp_path / "calls")) == {"model": 2, "approved": 1}


def test_effects_of_a_thread_are_listed_on_its_run(graph_runtime: Runtime, tmp_path: Path) -> None:
    saver = PerdureSaver(graph_runtime, renew=False)
    graph = agent_on(saver, tmp_path, approval="node")
    graph.invoke(START_INPUT, cfg())
    resume(graph, "yes", cfg())
    run = graph_runtime.store.get_run("default", graph_run_id("default", "t1"))
    events = [e.type for e in graph_runtime.store.events("default", run.run_id)]
    assert events.count("effect") >= 3  # planned, executing, confirmed
    assert [e.status for e in graph_runtime.effects.list(run_id=run.run_id)] == [
        EffectStatus.CONFIRMED
    ]
