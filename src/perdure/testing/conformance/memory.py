"""Long-term memory: written only with a boundary, read by any run of the tenant, versioned,
expiring through "now", erased by namespace prefix."""

from __future__ import annotations

from datetime import timedelta

import pytest

from perdure.core.clock import FakeClock
from perdure.core.errors import LeaseLostError
from perdure.core.memory import MemoryWrite
from perdure.core.model import Run, RunStatus
from perdure.store.base import CommitRequest, Store
from perdure.testing.conformance.support import boundary, claim, claimed, needs, new_run


@pytest.fixture(autouse=True)
def needs_memory_wing(store: Store) -> None:
    """Every test here needs the memory wing: skipped on a store without."""
    needs(store, "memory")


def put(ns: tuple[str, ...], key: str, value: object, **kw: object) -> MemoryWrite:
    return MemoryWrite(ns, key, value, **kw)  # type: ignore[arg-type]


def started(store: Store, clock: FakeClock, run_id: str) -> Run:
    """A new run of tenant t1 on a thread of its own, claimed."""
    store.create_run(new_run(run_id, thread=run_id), clock.now())
    run = claim(store, clock, run_id=run_id, tenant_id="t1")
    assert run is not None
    return run


def commit(store: Store, clock: FakeClock, *writes: MemoryWrite, run_id: str = "r1") -> None:
    run = started(store, clock, run_id)
    b = boundary(clock, memory=writes)
    store.commit("t1", run_id, run.fence, run.state_version, [b], clock.now())


def test_a_committed_boundary_writes_its_memory_and_any_run_reads_it(
    store: Store, clock: FakeClock
) -> None:
    assert store.memory.get("t1", ("user", "u1"), "prefs", clock.now()) is None
    commit(store, clock, put(("user", "u1"), "prefs", {"lang": "fr"}))
    item = store.memory.get("t1", ("user", "u1"), "prefs", clock.now())
    assert item is not None
    assert (item.namespace, item.key, item.value, item.version) == (
        ("user", "u1"),
        "prefs",
        {"lang": "fr"},
        1,
    )
    assert item.run_id == "r1" and item.expires_at is None
    assert store.memory.get("t2", ("user", "u1"), "prefs", clock.now()) is None, "tenant-scoped"


def test_each_committed_put_bumps_the_version_and_a_delete_removes_the_item(
    store: Store, clock: FakeClock
) -> None:
    commit(store, clock, put(("user", "u1"), "prefs", 1))
    commit(store, clock, put(("user", "u1"), "prefs", 2), run_id="r2")
    item = store.memory.get("t1", ("user", "u1"), "prefs", clock.now())
    assert item is not None and (item.value, item.version, item.run_id) == (2, 2, "r2")
    commit(store, clock, MemoryWrite(("user", "u1"), "prefs", deleted=True), run_id="r3")
    assert store.memory.get("t1", ("user", "u1"), "prefs", clock.now()) is None


def test_writes_of_one_boundary_apply_in_order(store: Store, clock: FakeClock) -> None:
    ns = ("task", "t")
    commit(store, clock, put(ns, "a", 1), MemoryWrite(ns, "a", deleted=True), put(ns, "b", None))
    assert store.memory.get("t1", ns, "a", clock.now()) is None
    b = store.memory.get("t1", ns, "b", clock.now())
    assert b is not None and b.value is None


def test_a_refused_commit_writes_no_memory(store: Store, clock: FakeClock) -> None:
    store.create_run(new_run("r1"), clock.now())
    old = claim(store, clock, "w1")
    clock.advance(31)
    assert old is not None and claim(store, clock, "w2") is not None
    b = boundary(clock, memory=(put(("user", "u1"), "k", 1),))
    with pytest.raises(LeaseLostError):
        store.commit("t1", "r1", old.fence, old.state_version, [b], clock.now())
    assert store.memory.get("t1", ("user", "u1"), "k", clock.now()) is None


def test_a_boundary_that_ends_the_run_commits_its_memory(store: Store, clock: FakeClock) -> None:
    run = claimed(store, clock)
    b = boundary(clock, "first", None, RunStatus.SUCCEEDED, memory=(put(("a",), "k", "v"),))
    store.commit("t1", "r1", run.fence, run.state_version, [b], clock.now())
    item = store.memory.get("t1", ("a",), "k", clock.now())
    assert item is not None and item.value == "v"


def test_an_expired_item_reads_as_absent_and_expiry_removes_it(
    store: Store, clock: FakeClock
) -> None:
    later = clock.now() + timedelta(seconds=60)
    commit(store, clock, put(("s",), "short", 1, expires_at=later), put(("s",), "long", 2))
    assert store.memory.get("t1", ("s",), "short", clock.now()) is not None
    assert store.memory.expire(clock.now(), limit=10) == 0
    clock.advance(60)
    assert store.memory.get("t1", ("s",), "short", clock.now()) is None
    assert [i.key for i in store.memory.search("t1", ("s",), clock.now())] == ["long"]
    assert store.memory.expire(clock.now(), limit=10) == 1
    assert store.memory.expire(clock.now(), limit=10) == 0
    assert store.memory.get("t1", ("s",), "long", clock.now()) is not None


def test_search_reads_a_prefix_and_its_namespaces_below_in_order_with_a_filter(
    store: Store, clock: FakeClock
) -> None:
    commit(
        store,
        clock,
        put(("user", "u1"), "b", {"kind": "fact", "n": 1}),
        put(("user", "u1"), "a", {"kind": "pref", "n": True}),
        put(("user", "u1", "notes"), "x", {"kind": "fact", "n": 2}),
        put(("user", "u10"), "c", {"kind": "fact"}),
        put(("user_x",), "d", {"kind": "fact"}),
    )
    now = clock.now()

    def keys(prefix: tuple[str, ...], **kw: object) -> list[str]:
        return [i.key for i in store.memory.search("t1", prefix, now, **kw)]  # type: ignore[arg-type]

    assert keys(("user", "u1")) == ["a", "b", "x"], "u10 is not under u1"
    assert keys(("user",)) == ["a", "b", "x", "c"]
    assert keys(()) == ["a", "b", "x", "c", "d"]
    assert keys(("user",), filter={"kind": "fact"}) == ["b", "x", "c"]
    assert keys(("user",), filter={"kind": "fact"}, limit=2) == ["b", "x"]
    assert keys(("user",), filter={"n": 1}) == ["b"], "true is not 1"
    assert keys(("user",), limit=0) == []
    assert store.memory.search("t2", ("user",), now) == []


def test_a_group_commit_writes_each_runs_memory(store: Store, clock: FakeClock) -> None:
    r1 = started(store, clock, "r1")
    r2 = started(store, clock, "r2")
    requests = [
        CommitRequest(
            "t1", r.run_id, r.fence, r.state_version, [boundary(clock, memory=(put(("g",), k, k),))]
        )
        for r, k in ((r1, "one"), (r2, "two"))
    ]
    answers = store.commit_many(requests, clock.now())
    assert all(isinstance(a, int) for a in answers)
    assert [i.value for i in store.memory.search("t1", ("g",), clock.now())] == ["one", "two"]
