"""Runs: creation, idempotency keys, tenants, reading and listing (see
perdure.store.base.Store)."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest

from perdure.core.clock import FakeClock
from perdure.core.errors import (
    RunNotFoundError,
)
from perdure.core.listing import RunCursor
from perdure.core.model import RunStatus
from perdure.store.base import Store
from perdure.testing.conformance.support import new_run


def test_a_new_run_is_pending_with_its_release_manifest(store: Store, clock: FakeClock) -> None:
    run, created = store.create_run(new_run("r1"), clock.now())
    assert created
    assert run.status is RunStatus.PENDING
    assert run.next_step == "first"
    assert run.release.code == "abc"
    assert store.load_state("t1", "r1") == {"n": b"0"}


def test_the_same_idempotency_key_gives_one_run(store: Store, clock: FakeClock) -> None:
    first, created1 = store.create_run(new_run("r1", key="k"), clock.now())
    again, created2 = store.create_run(new_run("r2", key="k"), clock.now())
    assert (created1, created2) == (True, False)
    assert again.run_id == first.run_id
    assert [r.run_id for r in store.list_runs("t1")] == ["r1"]


def test_idempotency_keys_are_per_tenant(store: Store, clock: FakeClock) -> None:
    store.create_run(new_run("r1", key="k"), clock.now())
    _, created = store.create_run(new_run("r2", key="k", tenant="t2"), clock.now())
    assert created


def test_concurrent_creates_with_one_idempotency_key_make_one_run(
    store: Store, clock: FakeClock
) -> None:
    start = threading.Barrier(4)
    got: list[tuple[str, bool]] = []
    lock = threading.Lock()

    def create(i: int) -> None:
        start.wait()
        run, created = store.create_run(new_run(f"r{i}", key="same"), clock.now())
        with lock:
            got.append((run.run_id, created))

    threads = [threading.Thread(target=create, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({run_id for run_id, _ in got}) == 1
    assert sorted(created for _, created in got) == [False, False, False, True]
    assert len(store.list_runs("t1")) == 1


def test_another_tenants_run_is_not_found(store: Store, clock: FakeClock) -> None:
    store.create_run(new_run("r1"), clock.now())
    with pytest.raises(RunNotFoundError):
        store.get_run("t2", "r1")
    assert store.list_runs("t2") == []
    assert store.load_state("t2", "r1") == {}


def test_list_runs_filters_by_status_workflow_and_thread(store: Store, clock: FakeClock) -> None:
    store.create_run(new_run("r1", thread="a"), clock.now())
    clock.advance(1)
    store.create_run(new_run("r2", thread="b", workflow="other"), clock.now())
    assert [r.run_id for r in store.list_runs("t1")] == ["r2", "r1"]
    assert [r.run_id for r in store.list_runs("t1", thread_id="a")] == ["r1"]
    assert [r.run_id for r in store.list_runs("t1", workflow="other")] == ["r2"]
    assert store.list_runs("t1", statuses=[RunStatus.RUNNING]) == []
    assert len(store.list_runs("t1", statuses=[RunStatus.PENDING, RunStatus.RUNNING])) == 2


def test_list_runs_pages_by_a_keyset_that_neither_repeats_nor_skips(
    store: Store, clock: FakeClock
) -> None:
    for n in range(5):  # r0..r4, created one second apart; r5 and r6 share r4's moment
        store.create_run(new_run(f"r{n}", thread=f"th{n % 2}"), clock.now())
        clock.advance(1)
    clock.advance(-1)
    store.create_run(new_run("r5"), clock.now())
    store.create_run(new_run("r6"), clock.now())
    first = store.list_runs("t1", limit=3)
    assert [r.run_id for r in first] == ["r6", "r5", "r4"]
    clock.advance(10)
    store.create_run(new_run("late"), clock.now())  # a run started meanwhile shifts nothing
    after = RunCursor.of(first[-1])
    second = store.list_runs("t1", limit=3, after=RunCursor.parse(after.token()))
    assert [r.run_id for r in second] == ["r3", "r2", "r1"]
    third = store.list_runs("t1", limit=3, after=RunCursor.of(second[-1]))
    assert [r.run_id for r in third] == ["r0"]
    odd = store.list_runs("t1", thread_id="th1", limit=1, after=RunCursor.of(first[-1]))
    assert [r.run_id for r in odd] == ["r3"]


def test_list_runs_filters_by_time_and_searches_ids(store: Store, clock: FakeClock) -> None:
    start = clock.now()
    store.create_run(new_run("alpha-1", thread="chat-9", key="order-77"), clock.now())
    clock.advance(60)
    store.create_run(new_run("beta-2"), clock.now())
    later = clock.now()
    clock.advance(60)
    store.create_run(new_run("gamma-3"), clock.now())
    assert [r.run_id for r in store.list_runs("t1", since=later)] == ["gamma-3", "beta-2"]
    assert [r.run_id for r in store.list_runs("t1", until=later)] == ["alpha-1"]
    window = store.list_runs("t1", since=start, until=later + timedelta(seconds=1))
    assert [r.run_id for r in window] == ["beta-2", "alpha-1"]
    for text in ("pha", "chat-9", "order-7"):  # the run id, the thread id, the idempotency key
        assert [r.run_id for r in store.list_runs("t1", search=text)] == ["alpha-1"]
    assert store.list_runs("t1", search="%") == []  # text, not a pattern
    assert store.list_runs("t1", search="ALPHA") == []
