"""Graph checkpoints (LangGraph threads): blobs shared across versions, writes, filters,
ownership guards, trimming, copy and delete, on every backend."""

from __future__ import annotations

from datetime import timedelta

import orjson
import pytest

from perdure.core.clock import FakeClock
from perdure.core.errors import (
    GraphThreadBusyError,
    GraphThreadQuarantinedError,
    LeaseLostError,
)
from perdure.core.graph import (
    GRAPH_WORKFLOW,
    GraphBlob,
    GraphHold,
    GraphPut,
    GraphWrite,
    PruneStrategy,
    graph_run_id,
)
from perdure.core.model import RunStatus
from perdure.store.base import Store
from perdure.testing.conformance.support import needs


@pytest.fixture(autouse=True)
def needs_graphs_wing(store: Store) -> None:
    """Every test here needs the graphs wing: skipped on a store without."""
    needs(store, "graphs")


T = "t1"


def put(
    store: Store,
    clock: FakeClock,
    cid: str,
    *,
    thread: str = "th",
    ns: str = "",
    versions: dict[str, str] | None = None,
    blobs: tuple[GraphBlob, ...] = (),
    meta: dict[str, object] | None = None,
    hold: GraphHold | None = None,
    keep_last: int | None = None,
    run: str | None = None,
) -> None:
    store.graphs.put_checkpoint(
        GraphPut(
            tenant_id=T,
            thread_id=thread,
            checkpoint_ns=ns,
            checkpoint_id=cid,
            parent_id=None,
            graph_run=run,
            checkpoint_type="json",
            checkpoint=cid.encode(),
            metadata=orjson.dumps(meta or {"source": "loop", "step": 0}),
            channel_versions=orjson.dumps(versions or {}),
            blobs=blobs,
            keep_last=keep_last,
            event={"checkpoint_id": cid},
        ),
        hold,
        clock.now(),
    )


def blob(channel: str, version: str, data: bytes) -> GraphBlob:
    return GraphBlob(channel, version, "bytes", data)


def ids(store: Store, **kw: object) -> list[str]:
    return [c.checkpoint_id for c in store.graphs.list_checkpoints(T, **kw)]  # type: ignore[arg-type]


def test_a_checkpoint_reads_the_blobs_of_its_versions_shared_with_older_ones(
    store: Store, clock: FakeClock
) -> None:
    put(
        store,
        clock,
        "c1",
        versions={"a": "1", "b": "1"},
        blobs=(blob("a", "1", b"a1"), blob("b", "1", b"b1")),
    )
    put(store, clock, "c2", versions={"a": "2", "b": "1"}, blobs=(blob("a", "2", b"a2"),))
    first = store.graphs.get_checkpoint(T, "th", "", "c1")
    latest = store.graphs.get_checkpoint(T, "th", "", None)
    assert first is not None and latest is not None
    assert {b.channel: b.data for b in first.blobs} == {"a": b"a1", "b": b"b1"}
    assert latest.checkpoint_id == "c2"
    assert {b.channel: b.data for b in latest.blobs} == {"a": b"a2", "b": b"b1"}
    assert store.graphs.get_checkpoint(T, "th", "", "missing") is None
    assert store.graphs.get_checkpoint(T, "th", "child", None) is None


def test_the_first_write_creates_the_thread_run_and_each_checkpoint_is_an_event(
    store: Store, clock: FakeClock
) -> None:
    assert store.graphs.thread(T, "th").status is None
    put(store, clock, "c1")
    put(store, clock, "c2")
    run = store.get_run(T, graph_run_id(T, "th"))
    assert (run.workflow, run.status, run.thread_id, run.steps_done) == (
        GRAPH_WORKFLOW,
        RunStatus.RUNNING,
        "th",
        2,
    )
    assert [e.type for e in store.events(T, run.run_id)] == [
        "created",
        "graph_checkpoint",
        "graph_checkpoint",
    ]
    assert store.graphs.thread(T, "th").status is RunStatus.RUNNING


def test_writes_are_idempotent_per_task_and_index_unless_replaced(
    store: Store, clock: FakeClock
) -> None:
    put(store, clock, "c1")
    w = GraphWrite("task", 0, "ch", "bytes", b"one")
    store.graphs.put_writes(T, "th", "", "c1", [w], None, clock.now())
    store.graphs.put_writes(
        T, "th", "", "c1", [GraphWrite("task", 0, "ch", "bytes", b"two")], None, clock.now()
    )
    got = store.graphs.get_checkpoint(T, "th", "", "c1")
    assert got is not None and [x.data for x in got.writes] == [b"one"]
    store.graphs.put_writes(
        T,
        "th",
        "",
        "c1",
        [GraphWrite("task", 0, "ch", "bytes", b"two")],
        None,
        clock.now(),
        replace=True,
        interrupts=[{"id": "i"}],
    )
    got = store.graphs.get_checkpoint(T, "th", "", "c1")
    assert got is not None and [x.data for x in got.writes] == [b"two"]
    run = store.get_run(T, graph_run_id(T, "th"))
    assert run.next_step == "interrupted"
    assert store.events(T, run.run_id)[-1].type == "graph_interrupt"


def test_list_filters_by_namespace_metadata_and_before_newest_first(
    store: Store, clock: FakeClock
) -> None:
    put(store, clock, "c1", meta={"source": "input", "step": 1, "tag": {"x": True}})
    put(store, clock, "c2", meta={"source": "loop", "step": 1})
    put(store, clock, "c3", meta={"source": "input", "step": 2})
    put(store, clock, "c4", ns="child:1")
    put(store, clock, "c5", thread="other")
    assert ids(store, thread_id="th", checkpoint_ns="") == ["c3", "c2", "c1"]
    assert ids(store, thread_id="th") == ["c4", "c3", "c2", "c1"]
    assert ids(store) == ["c5", "c4", "c3", "c2", "c1"]
    f = orjson.dumps({"source": "input"})
    assert ids(store, thread_id="th", metadata_filter=f) == ["c3", "c1"]
    f = orjson.dumps({"source": "input", "step": 2})
    assert ids(store, thread_id="th", metadata_filter=f) == ["c3"]
    f = orjson.dumps({"tag": {"x": True}})
    assert ids(store, thread_id="th", metadata_filter=f) == ["c1"]
    assert ids(store, thread_id="th", metadata_filter=orjson.dumps({"step": 9})) == []
    assert ids(store, thread_id="th", checkpoint_ns="", before="c3", limit=1) == ["c2"]


def test_an_unheld_write_is_refused_while_an_invocation_holds_the_thread(
    store: Store, clock: FakeClock
) -> None:
    put(store, clock, "c1")
    run_id = graph_run_id(T, "th")
    lease = clock.now() + timedelta(seconds=30)
    held = store.claim("inv-1", lease, clock.now(), [GRAPH_WORKFLOW], tenant_id=T, run_id=run_id)
    assert held is not None
    with pytest.raises(GraphThreadBusyError):
        put(store, clock, "c2")
    clock.advance(20)
    put(store, clock, "c2", hold=GraphHold(held.fence, "inv-1", 30))
    clock.advance(25)  # past the claim's lease, within the one the held write extended
    with pytest.raises(GraphThreadBusyError):
        store.graphs.put_writes(T, "th", "", "c2", [], None, clock.now())
    clock.advance(30)
    taken = store.claim(
        "inv-2",
        clock.now() + timedelta(seconds=30),
        clock.now(),
        [GRAPH_WORKFLOW],
        tenant_id=T,
        run_id=run_id,
    )
    assert taken is not None and taken.fence == held.fence + 1
    with pytest.raises(LeaseLostError):
        put(store, clock, "c3", hold=GraphHold(held.fence, "inv-1", 30))
    assert ids(store, thread_id="th") == ["c2", "c1"], "the stale holder wrote nothing"


def test_a_quarantined_thread_refuses_every_read_and_write(store: Store, clock: FakeClock) -> None:
    put(store, clock, "c1")
    run = store.get_run(T, graph_run_id(T, "th"))
    store.set_status(
        T,
        run.run_id,
        expected_status=RunStatus.RUNNING,
        expected_version=run.state_version,
        status=RunStatus.QUARANTINED,
        fence=None,
        now=clock.now(),
        data={"reason": "checkpoint_unreadable"},
    )
    assert store.graphs.thread(T, "th").reason == "checkpoint_unreadable"
    with pytest.raises(GraphThreadQuarantinedError):
        store.graphs.get_checkpoint(T, "th", "", None)
    with pytest.raises(GraphThreadQuarantinedError):
        store.graphs.list_checkpoints(T, thread_id="th")
    with pytest.raises(GraphThreadQuarantinedError):
        put(store, clock, "c2")
    with pytest.raises(GraphThreadQuarantinedError):
        store.graphs.put_writes(T, "th", "", "c1", [], None, clock.now())


def test_keep_last_trims_a_namespace_and_its_unread_blobs_in_the_same_write(
    store: Store, clock: FakeClock
) -> None:
    put(
        store,
        clock,
        "c1",
        versions={"a": "1", "b": "1"},
        blobs=(blob("a", "1", b"a1"), blob("b", "1", b"b1")),
    )
    store.graphs.put_writes(
        T, "th", "", "c1", [GraphWrite("t", 0, "ch", "b", b"w")], None, clock.now()
    )
    put(store, clock, "c2", versions={"a": "2", "b": "1"}, blobs=(blob("a", "2", b"a2"),))
    put(store, clock, "k1", ns="child:1")
    put(
        store,
        clock,
        "c3",
        versions={"a": "3", "b": "1"},
        blobs=(blob("a", "3", b"a3"),),
        keep_last=2,
    )
    assert ids(store, thread_id="th") == ["k1", "c3", "c2"]
    store.graphs.prune_threads(T, ["th"], PruneStrategy.KEEP_LATEST, clock.now())
    assert ids(store, thread_id="th") == ["k1", "c3"]
    latest = store.graphs.get_checkpoint(T, "th", "", None)
    assert latest is not None and {b.data for b in latest.blobs} == {b"a3", b"b1"}
    store.graphs.prune_threads(T, ["th", "never"], PruneStrategy.DELETE, clock.now())
    assert ids(store, thread_id="th") == []


def test_copy_delete_for_runs_and_delete_thread(store: Store, clock: FakeClock) -> None:
    put(store, clock, "c1", versions={"a": "1"}, blobs=(blob("a", "1", b"a1"),), run="r1")
    put(store, clock, "c2", versions={"a": "1"}, run="r2")
    store.graphs.put_writes(
        T, "th", "", "c2", [GraphWrite("t", 0, "ch", "b", b"w")], None, clock.now()
    )
    store.graphs.copy_thread(T, "th", "copy", clock.now())
    store.graphs.copy_thread(T, "nothing", "copy2", clock.now())
    assert store.graphs.thread(T, "copy2").status is None
    copied = store.graphs.get_checkpoint(T, "copy", "", None)
    assert copied is not None and copied.checkpoint_id == "c2"
    assert [b.data for b in copied.blobs] == [b"a1"] and [w.data for w in copied.writes] == [b"w"]
    store.graphs.delete_runs(T, ["r2"], clock.now())
    assert ids(store, thread_id="th") == ["c1"] and ids(store, thread_id="copy") == ["c1"]
    store.graphs.delete_runs(T, [], clock.now())
    store.graphs.delete_thread(T, "th", clock.now())
    store.graphs.delete_thread(T, "never", clock.now())
    assert ids(store, thread_id="th") == [] and ids(store, thread_id="copy") == ["c1"]
    assert store.get_run(T, graph_run_id(T, "th")).status is RunStatus.RUNNING


def test_an_idle_thread_is_not_a_stuck_run_but_a_held_one_can_be(
    store: Store, clock: FakeClock
) -> None:
    put(store, clock, "c1")
    clock.advance(600)
    assert store.stuck_runs(clock.now() - timedelta(seconds=300)) == []
    run_id = graph_run_id(T, "th")
    lease = clock.now() + timedelta(seconds=30)
    assert store.claim("inv", lease, clock.now(), [GRAPH_WORKFLOW], tenant_id=T, run_id=run_id)
    clock.advance(600)
    stuck = store.stuck_runs(clock.now() - timedelta(seconds=300))
    assert [r.run_id for r in stuck] == [run_id]


def test_a_held_thread_cannot_be_deleted_or_pruned_under_its_invocation(
    store: Store, clock: FakeClock
) -> None:
    put(store, clock, "c1")
    put(store, clock, "c2")
    run_id = graph_run_id(T, "th")
    lease = clock.now() + timedelta(seconds=30)
    assert store.claim("inv", lease, clock.now(), [GRAPH_WORKFLOW], tenant_id=T, run_id=run_id)
    with pytest.raises(GraphThreadBusyError):
        store.graphs.delete_thread(T, "th", clock.now())
    with pytest.raises(GraphThreadBusyError):
        store.graphs.prune_threads(T, ["th"], PruneStrategy.KEEP_LATEST, clock.now())
    assert ids(store, thread_id="th") == ["c2", "c1"]
    clock.advance(31)
    store.graphs.prune_threads(T, ["th"], PruneStrategy.KEEP_LATEST, clock.now())
    assert ids(store, thread_id="th") == ["c2"]
