"""Runs: creation, idempotency keys, tenants, reading and listing (see
perdure.store.base.Store)."""

from __future__ import annotations

import threading

import pytest

from perdure import FakeClock
from perdure.core.errors import (
    RunNotFoundError,
)
from perdure.core.model import RunStatus
from perdure.store.base import Store
from tests.conformance.conftest import new_run


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
