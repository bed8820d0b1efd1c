"""A person's answer to an interrupt is committed before any node can act on it: through
``perdure.langgraph.resume``, through ``Command(resume=...)`` on a held config, and through
``ainvoke(Command(resume=...))`` on the saver's async API; on both databases. (A process killed
at each point is in tests/crash/test_langgraph_crash.py.)"""

from __future__ import annotations

import asyncio
from typing import Any, TypedDict

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.types import RESUME
from langgraph.config import get_config
from langgraph.graph import START, StateGraph
from langgraph.types import Command, interrupt

from perdure import FakeClock, Runtime
from perdure.core.errors import (
    GraphInterruptAnsweredError,
    GraphNotInterruptedError,
    InvalidInputError,
    LeaseLostError,
)
from perdure.langgraph import AsyncPerdureSaver, PerdureSaver, aresume, resume
from perdure.langgraph.answers import NULL_TASK_ID

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


class S(TypedDict, total=False):
    asked: str
    answer: str
    seen: list[str]


def cfg(thread: str = "t1") -> Any:
    return {"configurable": {"thread_id": thread}}


def recorded(saver: PerdureSaver, thread: str = "t1") -> list[Any]:
    """The answers stored on the thread's newest checkpoint, read by a second saver (its own
    connection): what a new process would find."""
    reader = PerdureSaver(Runtime(saver.runtime.store.url, migrate=False), renew=False)
    try:
        found = reader.get_tuple(cfg(thread))
        writes = found.pending_writes or [] if found is not None else []
        return [v for t, c, v in writes if t == NULL_TASK_ID and c == RESUME]
    finally:
        reader.runtime.close()


def approval_graph(saver: Any, seen: list[Any] | None = None) -> Any:
    """ask (interrupt) -> after. ``ask`` notes, once the answer is back, what a new process
    would find stored at that moment."""

    def ask(state: S) -> dict[str, Any]:
        answer = interrupt("pay?")
        if seen is not None and isinstance(saver, PerdureSaver):
            seen.append(recorded(saver, get_config()["configurable"]["thread_id"]))
        return {"answer": answer}

    g = StateGraph(S)
    g.add_node("ask", ask)
    g.add_node("after", lambda s: {"seen": [s["answer"]]})
    g.add_edge(START, "ask")
    g.add_edge("ask", "after")
    return g.compile(checkpointer=saver)


def paused(saver: Any, thread: str = "t1", seen: list[Any] | None = None) -> Any:
    graph = approval_graph(saver, seen)
    out = graph.invoke({"asked": "x"}, cfg(thread))
    assert [i.value for i in out["__interrupt__"]] == ["pay?"]
    return graph


def test_resume_commits_the_answer_before_the_interrupted_node_goes_on(
    saver: PerdureSaver,
) -> None:
    for durability in ("sync", "async", "exit"):
        seen: list[Any] = []
        graph = paused(saver, durability, seen)
        out = resume(graph, "yes", cfg(durability), durability=durability)
        assert out["seen"] == ["yes"] and seen == [["yes"]], durability


def test_a_held_command_resume_commits_the_answer_before_the_graph_starts(
    saver: PerdureSaver,
) -> None:
    seen: list[Any] = []
    graph = paused(saver, seen=seen)
    with saver.hold(cfg()) as held:
        out = graph.invoke(Command(resume="yes"), held)
    assert out["answer"] == "yes" and seen == [["yes"]]


def test_the_async_saver_commits_a_command_resume_before_the_graph_goes_on(
    graph_url: str,
) -> None:
    seen: list[Any] = []

    async def scenario() -> Any:
        async with AsyncPerdureSaver.from_conn_string(graph_url) as saver:
            await saver.asetup()
            graph = approval_graph(saver, seen)
            await graph.ainvoke({"asked": "x"}, cfg())
            out = await graph.ainvoke(Command(resume="yes"), cfg())
            await graph.ainvoke({"asked": "x"}, cfg("t2"))
            again = await aresume(graph, "no", cfg("t2"))
            return out, again

    out, again = asyncio.run(scenario())
    assert out["answer"] == "yes" and again["answer"] == "no"
    assert seen == [["yes"], ["no"]]


def test_after_a_crash_invoke_none_or_the_same_resume_continues_with_the_recorded_answer(
    saver: PerdureSaver,
) -> None:
    graph = paused(saver)
    assert saver.record_resume(cfg(), "yes") is True  # a process recorded it, then died
    assert recorded(saver) == ["yes"]
    assert saver.record_resume(cfg(), "yes") is False, "the same answer again writes nothing"
    assert graph.invoke(None, cfg())["answer"] == "yes", "never asked again"

    graph = paused(saver, "t2")
    saver.record_resume(cfg("t2"), "yes")
    assert resume(graph, "yes", cfg("t2"))["answer"] == "yes"
    assert resume(graph, "yes", cfg("t2"))["seen"] == ["yes"], "a finished thread stays so"


def test_the_first_answer_stands(saver: PerdureSaver) -> None:
    graph = paused(saver)
    saver.record_resume(cfg(), "yes")
    with pytest.raises(GraphInterruptAnsweredError) as answered:
        resume(graph, "no", cfg())
    assert answered.value.code == "interrupt_answered"
    with saver.hold(cfg()) as held, pytest.raises(GraphInterruptAnsweredError):
        graph.invoke(Command(resume="no"), held)
    assert graph.invoke(None, cfg())["answer"] == "yes"


def test_what_one_answer_cannot_do_is_refused_with_a_typed_error(
    saver: PerdureSaver,
) -> None:
    graph = approval_graph(saver)
    with pytest.raises(GraphNotInterruptedError) as nothing:
        resume(graph, "yes", cfg("never-ran"))
    assert nothing.value.code == "not_interrupted"
    paused(saver)
    with pytest.raises(InvalidInputError):
        resume(graph, None, cfg())
    with pytest.raises(InvalidInputError):
        resume(graph, {"0123456789abcdef0123456789abcdef": "yes"}, cfg())
    with pytest.raises(InvalidInputError):
        saver.record_resume({"configurable": {"thread_id": "t1", "checkpoint_ns": "x:1"}}, 1)
    with pytest.raises(InvalidInputError, match="PerdureSaver"):
        resume(approval_graph(InMemorySaver()), "yes", cfg())
    assert recorded(saver) == [], "nothing refused was written"


def test_two_waiting_interrupts_are_not_answered_by_one_value(saver: PerdureSaver) -> None:
    g = StateGraph(S)
    g.add_node("a", lambda s: {"answer": interrupt("a?")})
    g.add_node("b", lambda s: {"asked": interrupt("b?")})
    g.add_edge(START, "a")
    g.add_edge(START, "b")
    graph = g.compile(checkpointer=saver)
    out = graph.invoke({"asked": "x"}, cfg())
    assert len(out["__interrupt__"]) == 2
    with pytest.raises(InvalidInputError, match="2 interrupts"):
        resume(graph, "yes", cfg())


def test_an_answer_for_another_interrupt_id_is_not_given_to_the_waiting_one(
    saver: PerdureSaver,
) -> None:
    graph = paused(saver)
    waiting = graph.get_state(cfg()).interrupts[0].id
    out = resume(graph, "yes", cfg(), interrupt_id="f" * 32)
    assert [i.value for i in out["__interrupt__"]] == ["pay?"], "asked, not answered"
    assert recorded(saver) == []
    assert resume(graph, "yes", cfg(), interrupt_id=waiting)["answer"] == "yes"


def test_an_answer_reaches_an_interrupt_inside_a_subgraph(saver: PerdureSaver) -> None:
    inner = StateGraph(S)
    inner.add_node("ask", lambda s: {"answer": interrupt("inner?")})
    inner.add_edge(START, "ask")
    outer = StateGraph(S)
    outer.add_node("sub", inner.compile())
    outer.add_edge(START, "sub")
    graph = outer.compile(checkpointer=saver)
    assert graph.invoke({"asked": "x"}, cfg())["__interrupt__"][0].value == "inner?"
    assert resume(graph, "deep", cfg())["answer"] == "deep"


def test_an_answer_is_written_under_the_hold_and_refused_to_a_stale_one(
    graph_runtime: Runtime, clock: FakeClock
) -> None:
    saver = PerdureSaver(graph_runtime, renew=False)
    graph = paused(saver)
    with saver.hold(cfg()) as stale:
        clock.advance(graph_runtime.services.heartbeat.lease.total_seconds() + 1)
        other = PerdureSaver(graph_runtime, renew=False)
        with other.hold(cfg()), pytest.raises(LeaseLostError):
            resume(graph, "yes", stale)
    assert recorded(saver) == []
    with saver.hold(cfg()) as held:
        assert resume(graph, "yes", held)["answer"] == "yes"


def test_the_key_langgraph_files_a_command_under_is_the_one_recorded() -> None:
    from langgraph._internal._constants import NULL_TASK_ID as LANGGRAPHS

    assert NULL_TASK_ID == LANGGRAPHS


def test_resume_needs_a_graph_on_a_perdure_saver() -> None:
    with pytest.raises(InvalidInputError):
        resume(object(), "yes", cfg())
