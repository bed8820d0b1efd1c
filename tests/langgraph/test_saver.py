"""What PerdureSaver does better than LangGraph's own savers, each on a real compiled graph and
both databases: write ownership, no silent restarts, safe encoding, bounded storage,
durability modes, and the thread as a perdure run."""

from __future__ import annotations

import asyncio
import os
import pickle
import threading
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.types import Command, interrupt

from perdure import FakeClock, Runtime
from perdure.core.errors import (
    GraphCheckpointUnreadableError,
    GraphThreadBusyError,
    GraphThreadQuarantinedError,
    LeaseLostError,
)
from perdure.core.graph import graph_run_id
from perdure.core.model import RunStatus
from perdure.core.seal import Keyring
from perdure.langgraph import AsyncPerdureSaver, PerdureSaver
from tests.apps.graph_app import build, summary
from tests.backends import damage_graph, graph_rows
from tests.conftest import Gates, entries
from tests.crash.test_crash_resume import wait_for

START = {"messages": [HumanMessage(content="add 2 and 3")]}
PAUSED = ["add 2 and 3", "", "5", "the sum is 5"]
DONE = [*PAUSED, "done, approved=yes"]


def cfg(thread: str = "t1") -> Any:
    return {"configurable": {"thread_id": thread}}


def to_interrupt(saver: PerdureSaver, thread: str = "t1", **kw: Any) -> dict[str, Any]:
    with saver.hold(cfg(thread)) as held:
        return summary(build(saver).invoke(START, held, **kw))


def approve(saver: PerdureSaver, thread: str = "t1") -> dict[str, Any]:
    with saver.hold(cfg(thread)) as held:
        return summary(build(saver).invoke(Command(resume="yes"), held))


def test_a_graph_runs_to_its_interrupt_and_resumes_on_the_saver(saver: PerdureSaver) -> None:
    paused = to_interrupt(saver)
    assert paused["messages"] == PAUSED and paused["interrupts"][0]["sum"] == "the sum is 5"
    assert approve(saver)["messages"] == DONE
    state = build(saver).get_state(cfg())
    assert state.next == () and state.values["approved"] == "yes"


# -- write ownership ----------------------------------------------------------------------------


def test_a_second_concurrent_invocation_on_a_held_thread_gets_a_typed_error(
    saver: PerdureSaver,
) -> None:
    graph = build(saver)
    with saver.hold(cfg()) as held:
        with pytest.raises(GraphThreadBusyError) as busy, saver.hold(cfg()):
            pass
        assert busy.value.code == "graph_thread_busy"
        with pytest.raises(GraphThreadBusyError):
            graph.invoke(START, cfg())  # an invocation that does not hold the thread
        assert summary(graph.invoke(START, held))["messages"] == PAUSED
    assert len(list(saver.list(cfg()))) == 6, "only the holder's checkpoints were written"
    assert approve(saver)["messages"] == DONE, "the hold was given back"


def test_a_stale_holder_is_refused_once_another_invocation_took_the_thread_over(
    graph_runtime: Runtime, clock: FakeClock
) -> None:
    frozen = PerdureSaver(graph_runtime, renew=False)  # a holder that stopped renewing
    with frozen.hold(cfg()) as stale:
        clock.advance(graph_runtime.lease_seconds + 1)
        other = PerdureSaver(graph_runtime, renew=False)
        with other.hold(cfg()) as fresh:
            assert fresh["configurable"]["__perdure_fence__"] == (
                stale["configurable"]["__perdure_fence__"] + 1
            )
            with pytest.raises(LeaseLostError):
                build(frozen).invoke(START, stale)
            assert frozen.get_tuple(cfg()) is None, "the stale holder wrote nothing"
            assert summary(build(other).invoke(START, fresh))["messages"] == PAUSED


# -- no silent restarts -------------------------------------------------------------------------


def test_an_unreadable_checkpoint_raises_and_quarantines_the_thread_never_restarts(
    saver: PerdureSaver, graph_runtime: Runtime, graph_url: str
) -> None:
    to_interrupt(saver)
    damage_graph(graph_url, "graph_blobs", "t1", b"\xc1 not msgpack")
    with pytest.raises(GraphCheckpointUnreadableError) as unreadable:
        saver.get_tuple(cfg())
    assert unreadable.value.code == "checkpoint_unreadable"
    run = graph_runtime.store.get_run("default", graph_run_id("default", "t1"))
    assert run.status is RunStatus.QUARANTINED
    assert run.error is not None and run.error.reason == "checkpoint_unreadable"
    quarantined = graph_runtime.runs(status=["QUARANTINED"])
    assert [r.thread_id for r in quarantined] == ["t1"]
    with pytest.raises(GraphThreadQuarantinedError):
        saver.get_tuple(cfg())  # never None: the thread is not started over
    with pytest.raises(GraphThreadQuarantinedError):
        build(saver).invoke(Command(resume="yes"), cfg())
    with pytest.raises(GraphThreadQuarantinedError), saver.hold(cfg()):
        pass
    saver.delete_thread("t1")  # a person decides to start the thread over
    assert to_interrupt(saver)["messages"] == PAUSED


# -- safe encoding ------------------------------------------------------------------------------


class Touch:
    """A pickle that creates a file when it is loaded."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> Any:
        return (Path.touch, (self.path,))


def test_the_default_serializer_never_unpickles_a_stored_value(
    saver: PerdureSaver, graph_runtime: Runtime, graph_url: str, tmp_path: Path
) -> None:
    to_interrupt(saver)
    marker = tmp_path / "unpickled"
    damage_graph(graph_url, "graph_blobs", "t1", pickle.dumps(Touch(marker)))
    damage_graph(graph_url, "graph_blobs_type", "t1", "pickle")
    with pytest.raises(GraphCheckpointUnreadableError, match="pickled"):
        saver.get_tuple(cfg())
    assert not marker.exists()
    assert graph_runtime.store.graphs.thread("default", "t1").status is RunStatus.QUARANTINED


def test_sealed_checkpoints_are_encrypted_and_a_changed_one_quarantines(
    graph_url: str, clock: FakeClock
) -> None:
    keyring = Keyring({"k1": os.urandom(32)}, "k1", encrypt=True)
    with Runtime(graph_url, clock=clock, keyring=keyring) as rt:
        saver = PerdureSaver(rt, renew=False)
        to_interrupt(saver)
        assert approve(saver)["messages"] == DONE, "sealed values read back"
        listed = rt.store.graphs.list_checkpoints("default", thread_id="t1")
        stored = [b.data for c in listed for b in c.blobs if b.data] + [listed[0].checkpoint]
        assert stored and all(d.startswith(b"rk2.e.k1.0.") for d in stored)
        assert not any(b"add 2 and 3" in d for d in stored)
        damage_graph(graph_url, "graph_checkpoints", "t1", b"rk1.e.k1.AAAAAAAAAAAAAAAAAAAA")
        with pytest.raises(GraphCheckpointUnreadableError):
            saver.get_tuple(cfg())
        assert rt.store.graphs.thread("default", "t1").status is RunStatus.QUARANTINED


# -- bounded storage ----------------------------------------------------------------------------


def referenced_blobs(saver: PerdureSaver, thread: str) -> int:
    found = saver.store.graphs.list_checkpoints("default", thread_id=thread)
    return len({(c.checkpoint_ns, b.channel, b.version) for c in found for b in c.blobs})


def test_only_changed_channels_are_stored_and_retention_keeps_history_bounded(
    graph_runtime: Runtime, graph_url: str
) -> None:
    full = PerdureSaver(graph_runtime, renew=False)
    to_interrupt(full, "all")
    checkpoints = graph_rows(graph_url, "graph_checkpoints", "all")
    blobs = graph_rows(graph_url, "graph_blobs", "all")
    channels = len(full.get_tuple(cfg("all")).checkpoint["channel_versions"])  # type: ignore[union-attr]
    assert blobs == referenced_blobs(full, "all") < checkpoints * channels

    kept = PerdureSaver(graph_runtime, renew=False, keep_last=2)
    for _ in range(3):
        to_interrupt(kept, "kept")
        assert approve(kept, "kept")["approved"] == "yes"
        assert graph_rows(graph_url, "graph_checkpoints", "kept") == 2
    assert graph_rows(graph_url, "graph_blobs", "kept") == referenced_blobs(kept, "kept")
    assert graph_rows(graph_url, "graph_blobs", "kept") < graph_rows(
        graph_url, "graph_blobs", "all"
    )


def test_prune_keeps_the_interrupted_checkpoint_and_the_graph_still_resumes(
    saver: PerdureSaver, graph_url: str
) -> None:
    to_interrupt(saver)
    saver.prune(["t1"])
    assert len(list(saver.list(cfg()))) == 1
    assert approve(saver)["messages"] == DONE
    saver.prune(["t1"], strategy="delete")
    assert saver.get_tuple(cfg()) is None
    assert graph_rows(graph_url, "graph_blobs", "t1") == 0
    assert graph_rows(graph_url, "graph_writes", "t1") == 0


# -- durability ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "checkpoints"), [("sync", 6), ("async", 6), ("exit", 1), (None, 6)]
)
def test_langgraph_durability_modes_decide_how_many_checkpoints_are_committed(
    saver: PerdureSaver, mode: str | None, checkpoints: int
) -> None:
    given = {} if mode is None else {"durability": mode}
    assert to_interrupt(saver, **given)["messages"] == PAUSED
    assert len(list(saver.list(cfg()))) == checkpoints
    # LangGraph's default mode (no durability= given) is async, and recorded so
    assert recorded_modes(saver) == [mode or "async"] * checkpoints
    assert approve(saver)["messages"] == DONE


def recorded_modes(saver: PerdureSaver) -> list[str | None]:
    run = saver.store.get_run("default", graph_run_id("default", "t1"))
    return [
        e.data["durability"]  # type: ignore[index]
        for e in saver.store.events("default", run.run_id)
        if e.type == "graph_checkpoint"
    ]


def test_a_checkpoint_of_update_state_records_no_durability_mode(saver: PerdureSaver) -> None:
    to_interrupt(saver, durability="sync")
    build(saver).update_state(cfg(), {"approved": "maybe"})
    assert recorded_modes(saver) == ["sync"] * 6 + [None]


# -- async --------------------------------------------------------------------------------------


def test_the_async_saver_runs_a_graph_with_ainvoke_under_a_hold(graph_url: str) -> None:
    async def scenario() -> list[Any]:
        async with AsyncPerdureSaver.from_conn_string(graph_url) as saver:
            await saver.asetup()
            graph = build(saver)
            async with saver.ahold(cfg()) as held:
                await graph.ainvoke(START, held)
            async with saver.ahold(cfg()) as held:
                result = await graph.ainvoke(Command(resume="yes"), held)
            return summary(result)["messages"]  # type: ignore[no-any-return]

    assert asyncio.run(scenario()) == DONE


@pytest.mark.parametrize("thread", ["nul\x00thread", "bad\udcffutf8"])
def test_a_hostile_thread_id_is_a_typed_error_not_a_traceback(
    saver: PerdureSaver, thread: str
) -> None:
    from perdure.core.errors import PerdureError

    with pytest.raises(PerdureError):
        to_interrupt(saver, thread)


def test_a_config_without_a_thread_is_a_typed_error(saver: PerdureSaver) -> None:
    from perdure.core.errors import InvalidInputError

    with pytest.raises(InvalidInputError):
        saver.get_tuple({"configurable": {}})
    with pytest.raises(InvalidInputError):
        list(saver.list(cfg(), limit=-1))


def test_two_invocations_at_once_on_one_thread_never_interleave(
    saver: PerdureSaver, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gates = Gates(tmp_path / "gates", "check")
    log = tmp_path / "entries.log"
    monkeypatch.setenv("COUNTING_LOG", str(log))
    for key, value in gates.env("check").items():
        monkeypatch.setenv(key, value)
    results: dict[str, Any] = {}
    first = threading.Thread(
        target=lambda: results.setdefault("first", to_interrupt(saver, durability="sync"))
    )
    first.start()
    try:
        wait_for(lambda: entries(log)["check"] == 1, timeout=60)  # the first is mid-graph
        written = len(list(saver.list(cfg())))
        with pytest.raises(GraphThreadBusyError):
            to_interrupt(saver)  # a second invocation that holds
        with pytest.raises(GraphThreadBusyError):  # and one that does not: its first write
            build(saver).invoke(START, cfg(), durability="sync")
        assert len(list(saver.list(cfg()))) == written, "the second wrote nothing"
    finally:
        gates.open("check")
        first.join(timeout=60)
    assert results["first"]["messages"] == PAUSED
    assert entries(log)["agent"] == 2, "the refused invocations ran no node"


def test_a_held_thread_stays_held_while_its_lease_is_renewed(
    graph_runtime: Runtime, clock: FakeClock
) -> None:
    saver = PerdureSaver(graph_runtime)  # renews its holds
    with saver.hold(cfg()):
        for _ in range(3):
            clock.advance(graph_runtime.lease_seconds * 0.6)
            graph_runtime.heartbeat.beat()
        with pytest.raises(GraphThreadBusyError), PerdureSaver(graph_runtime).hold(cfg()):
            pass
    assert graph_runtime.heartbeat.held() == []
    with PerdureSaver(graph_runtime).hold(cfg()):
        pass  # given back: the next invocation takes it at once


def test_perdure_check_leaves_langgraph_threads_alone(
    saver: PerdureSaver, graph_runtime: Runtime
) -> None:
    from tests.apps.counting import counting

    to_interrupt(saver)
    graph_runtime.register(counting)
    assert graph_runtime.check() == []


def test_a_held_graph_with_a_subgraph_checkpoints_both_namespaces(saver: PerdureSaver) -> None:
    from typing import TypedDict

    from langgraph.graph import START as BEGIN
    from langgraph.graph import StateGraph

    class S(TypedDict):
        n: int

    inner = StateGraph(S)
    inner.add_node("bump", lambda s: {"n": s["n"] + 1})
    inner.add_node("ask", lambda s: {"n": s["n"] + int(interrupt("more?"))})
    inner.add_edge(BEGIN, "bump")
    inner.add_edge("bump", "ask")
    outer = StateGraph(S)
    outer.add_node("sub", inner.compile())
    outer.add_node("double", lambda s: {"n": s["n"] * 2})
    outer.add_edge(BEGIN, "sub")
    outer.add_edge("sub", "double")
    graph = outer.compile(checkpointer=saver)
    with saver.hold(cfg("sub")) as held:
        graph.invoke({"n": 1}, held, durability="sync")
    namespaces = {t.config["configurable"]["checkpoint_ns"] for t in saver.list(None)}
    assert "" in namespaces and any(ns.startswith("sub:") for ns in namespaces)
    with saver.hold(cfg("sub")) as held:
        assert graph.invoke(Command(resume="10"), held, durability="sync") == {"n": 24}
