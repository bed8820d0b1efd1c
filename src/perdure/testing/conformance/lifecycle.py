"""History, savepoints, artifact references, retention and erasure: the store's contracts."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from perdure.core.artifacts import ArtifactRef, digest_of
from perdure.core.clock import FakeClock
from perdure.core.errors import InvalidInputError, RunBusyError, RunNotFoundError
from perdure.core.history import ArtifactStatus, SavepointMark
from perdure.core.model import Message, RunStatus
from perdure.store.base import Store
from perdure.testing.conformance.support import (
    boundary,
    claimed,
    needs,
    new_run,
    patched_by_a_person,
)


@pytest.fixture(autouse=True)
def needs_lifecycle_wings(store: Store) -> None:
    """Every test here needs the history, artifacts, retention and archive wings: skipped on a
    store without."""
    needs(store, "history", "artifacts", "retention", "archive")


REF = ArtifactRef(digest_of(b"hello"), 5, "text/plain")


def commit(store: Store, clock: FakeClock, run_id: str, **kw: Any) -> int:
    run = store.get_run("t1", run_id)
    return store.commit(
        "t1", run_id, run.fence, run.state_version, [boundary(clock, **kw)], clock.now()
    )


def test_every_committed_version_of_a_field_is_kept_and_any_step_rebuilt(
    store: Store, clock: FakeClock
) -> None:
    run = claimed(store, clock)
    for n in range(1, 6):
        commit(store, clock, run.run_id, state={"n": str(n).encode(), f"f{n}": b"1"})
    assert store.history.state_at("t1", "r1", 0) == {"n": b"0"}
    assert store.history.state_at("t1", "r1", 3) == {"n": b"3", "f1": b"1", "f2": b"1", "f3": b"1"}
    assert store.history.state_at("t1", "r1", 5) == store.load_state("t1", "r1")
    changes = store.history.state_changes("t1", "r1")
    assert [(c.step_seq, c.field) for c in changes if c.step_seq == 2] == [(2, "f2"), (2, "n")]
    assert all(c.size == 1 and not c.offloaded for c in changes)
    assert store.history.state_at("t2", "r1", 5) == {}, "another tenant sees nothing"


def test_a_patch_between_steps_belongs_to_the_step_before_it(
    store: Store, clock: FakeClock
) -> None:
    run = claimed(store, clock)
    commit(store, clock, run.run_id, state={"n": b"1"})
    patched_by_a_person(store, clock, {"n": b"42"})
    assert store.history.state_at("t1", "r1", 1) == {"n": b"42"}
    assert [c.step_seq for c in store.history.state_changes("t1", "r1") if c.field == "n"] == [
        0,
        1,
        1,
    ]


def test_savepoints_are_marked_at_a_boundary_or_by_a_person_once(
    store: Store, clock: FakeClock
) -> None:
    run = claimed(store, clock)
    commit(store, clock, run.run_id, savepoints=(SavepointMark("s1"),))
    later = clock.now() + timedelta(days=1)
    sp = store.history.add_savepoint(
        "t1", "r1", "s0", 0, by="bob", expires_at=later, now=clock.now()
    )
    assert (sp.step_seq, sp.created_by, sp.expires_at) == (0, "bob", later)
    again = store.history.add_savepoint(
        "t1", "r1", "s0", 0, by="eve", expires_at=None, now=clock.now()
    )
    assert again == sp
    with pytest.raises(InvalidInputError):
        store.history.add_savepoint("t1", "r1", "s0", 1, by="bob", expires_at=None, now=clock.now())
    with pytest.raises(InvalidInputError):
        store.history.add_savepoint("t1", "r1", "s9", 7, by="bob", expires_at=None, now=clock.now())
    with pytest.raises(RunNotFoundError):
        store.history.add_savepoint("t2", "r1", "s9", 0, by="bob", expires_at=None, now=clock.now())
    marks = store.history.savepoints("t1", "r1")
    assert [(s.label, s.step_seq, s.created_by) for s in marks] == [
        ("s0", 0, "bob"),
        ("s1", 1, "step:first"),
    ]


def test_an_upload_is_committed_only_by_its_own_fence(store: Store, clock: FakeClock) -> None:
    run = claimed(store, clock)
    ref_id = store.artifacts.record(
        "t1", "r1", step="first", step_seq=1, fence=run.fence, ref=REF, parents=[], now=clock.now()
    )
    stale = store.artifacts.record(
        "t1",
        "r1",
        step="first",
        step_seq=1,
        fence=run.fence - 1,
        ref=REF,
        parents=["a" * 64],
        now=clock.now(),
    )
    commit(store, clock, run.run_id, artifacts=(ref_id, stale))
    found = {a.id: a for a in store.artifacts.find("t1", run_id="r1")}
    assert found[ref_id].status is ArtifactStatus.COMMITTED
    assert found[stale].status is ArtifactStatus.UPLOADED
    assert found[stale].parents == ("a" * 64,)
    assert [a.id for a in store.artifacts.orphan_uploads(limit=10)] == [stale]
    removed = store.artifacts.drop([stale])
    assert removed.freed == (), "the committed reference still points to the digest"
    assert store.artifacts.referenced("t1", [REF.digest, "b" * 64]) == {REF.digest}
    with pytest.raises(RunNotFoundError):
        store.artifacts.record(
            "t1", "nope", step=None, step_seq=None, fence=0, ref=REF, parents=[], now=clock.now()
        )


def test_expired_runs_are_finished_old_and_without_a_live_savepoint(
    store: Store, clock: FakeClock
) -> None:
    for rid in ("r1", "r2", "r3"):
        claimed(store, clock, rid)
        commit(store, clock, rid, next_step=None, status=RunStatus.SUCCEEDED)
    claimed(store, clock, "live")
    store.history.add_savepoint("t1", "r2", "keep", 0, by="p", expires_at=None, now=clock.now())
    soon = clock.now() + timedelta(hours=1)
    store.history.add_savepoint("t1", "r3", "brief", 0, by="p", expires_at=soon, now=clock.now())
    now = clock.now()
    assert store.retention.expired_runs(now, now) == [("t1", "r1")]
    later = clock.advance(7200)
    assert store.retention.expired_runs(later, later) == [("t1", "r1"), ("t1", "r3")]
    assert store.retention.expired_runs(later, later, exclude=["wf"]) == []
    assert store.retention.expired_runs(now - timedelta(seconds=1), later) == []


def test_deleting_runs_skips_live_ones_and_keeps_messages_a_live_run_of_the_thread_needs(
    store: Store, clock: FakeClock
) -> None:
    claimed(store, clock, "done")
    commit(
        store,
        clock,
        "done",
        next_step=None,
        status=RunStatus.SUCCEEDED,
        messages=(Message("user", "keep me"),),
    )
    claimed(store, clock, "live")
    removed = store.retention.delete_runs(
        [("t1", "done"), ("t1", "live"), ("t1", "ghost")], clock.now()
    )
    assert removed.rows["runs"] == 1
    with pytest.raises(RunNotFoundError):
        store.get_run("t1", "done")
    assert store.get_run("t1", "live").status is RunStatus.RUNNING
    [kept] = store.messages("t1", "th1")
    assert (kept.content, kept.run_id) == ("keep me", None)


def test_erasing_a_thread_removes_its_runs_and_messages_and_refuses_a_leased_run(
    store: Store, clock: FakeClock
) -> None:
    store.create_run(new_run("a", thread="conv"), clock.now())
    run = claimed(store, clock, "b")
    store.create_run(new_run("c", thread="other"), clock.now())
    with pytest.raises(RunBusyError):
        store.retention.erase_thread("t1", "th1", by="dpo", now=clock.now())
    assert store.get_run("t1", "b").fence == run.fence
    removed = store.retention.erase_thread("t1", "conv", by="dpo", now=clock.now())
    assert removed.rows["runs"] == 1
    with pytest.raises(RunNotFoundError):
        store.get_run("t1", "a")
    assert store.get_run("t1", "c").thread_id == "other"
    with pytest.raises(RunNotFoundError):
        store.retention.erase_run("t1", "a", by="dpo", now=clock.now())


def test_messages_until_cuts_the_thread_where_the_run_was_at_that_step(
    store: Store, clock: FakeClock
) -> None:
    run = claimed(store, clock)
    for n in range(1, 4):
        commit(store, clock, run.run_id, messages=(Message("assistant", f"m{n}"),))
    until = store.history.messages_until("t1", "th1", "r1", 2)
    assert [m.content for m in until] == ["m1", "m2"]
    assert store.history.messages_until("t1", "th1", "r1", 0) == []


def test_an_exported_run_is_imported_back_row_for_row(store: Store, clock: FakeClock) -> None:
    run = claimed(store, clock)
    ref_id = store.artifacts.record(
        "t1", "r1", step="first", step_seq=1, fence=run.fence, ref=REF, parents=[], now=clock.now()
    )
    commit(
        store,
        clock,
        "r1",
        state={"n": b"1"},
        artifacts=(ref_id,),
        savepoints=(SavepointMark("s", clock.now() + timedelta(days=1)),),
        messages=(Message("assistant", "hi"),),
    )
    commit(store, clock, "r1", next_step=None, status=RunStatus.SUCCEEDED)
    rows = store.archive.export_run("t1", "r1")
    assert rows[0].table == "runs"
    before = (
        store.get_run("t1", "r1"),
        store.steps("t1", "r1"),
        store.history.state_changes("t1", "r1"),
        store.history.savepoints("t1", "r1"),
        [(a.ref, a.status, a.step_seq) for a in store.artifacts.find("t1", run_id="r1")],
        [(m.role, m.content) for m in store.messages("t1", "th1")],
        [(e.type, e.data) for e in store.events("t1", "r1")],
    )
    assert store.retention.delete_runs([("t1", "r1")], clock.now()).rows["runs"] == 1
    back = store.archive.import_run("t1", rows, clock.now())
    assert back == before[0]
    after = (
        store.get_run("t1", "r1"),
        store.steps("t1", "r1"),
        store.history.state_changes("t1", "r1"),
        store.history.savepoints("t1", "r1"),
        [(a.ref, a.status, a.step_seq) for a in store.artifacts.find("t1", run_id="r1")],
        [(m.role, m.content) for m in store.messages("t1", "th1")],
        [(e.type, e.data) for e in store.events("t1", "r1")][:-1],
    )
    assert after == before
    with pytest.raises(InvalidInputError, match="already"):
        store.archive.import_run("t1", rows, clock.now())
    with pytest.raises(InvalidInputError):
        store.archive.import_run("t2", rows, clock.now())
    with pytest.raises(RunNotFoundError):
        store.archive.export_run("t2", "r1")


def test_pruning_keeps_finished_runs_and_leaves_live_ones_and_savepointed_history(
    store: Store, clock: FakeClock
) -> None:
    for rid in ("done", "marked"):
        claimed(store, clock, rid)
        commit(store, clock, rid, state={"n": b"1"}, next_step=None, status=RunStatus.SUCCEEDED)
    store.history.add_savepoint("t1", "marked", "keep", 1, by="p", expires_at=None, now=clock.now())
    claimed(store, clock, "live")
    now = clock.now()
    assert store.retention.prune_finished("events", now, now, limit=1) > 0
    while store.retention.prune_finished("events", now, now, limit=1):
        pass
    assert store.events("t1", "done") == [] and store.events("t1", "marked") == []
    assert store.events("t1", "live") != []
    while store.retention.prune_finished("history", now, now, limit=10):
        pass
    assert store.history.state_changes("t1", "done") == []
    assert store.history.state_changes("t1", "marked") != [], "a live savepoint keeps its history"
    assert store.history.state_changes("t1", "live") != []
    assert store.get_run("t1", "done").status is RunStatus.SUCCEEDED
    assert store.load_state("t1", "done") == {"n": b"1"}, "the final state stays"
    with pytest.raises(InvalidInputError):
        store.retention.prune_finished("runs", now, now, limit=1)
