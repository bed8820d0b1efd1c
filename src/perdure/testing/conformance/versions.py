"""Versions of stored runs: upgrades to the running code and rollback re-queues."""

from __future__ import annotations

from perdure.core.clock import FakeClock
from perdure.core.model import RunStatus
from perdure.store.base import Store
from perdure.testing.conformance.support import claimed


def test_an_upgrade_rewrites_state_and_versions(store: Store, clock: FakeClock) -> None:
    run = claimed(store, clock)
    up = store.upgrade_run(
        "t1",
        "r1",
        fence=run.fence,
        expected_version=run.state_version,
        fields={"m": b"1"},
        drop=["n"],
        next_step="renamed",
        workflow_version=2,
        state_schema=3,
        now=clock.now(),
        data={},
    )
    assert (up.next_step, up.workflow_version, up.state_schema) == ("renamed", 2, 3)
    assert store.load_state("t1", "r1") == {"m": b"1"}
    assert up.release.state_schema == 1, "the manifest keeps what the run started under"


def test_runs_too_new_are_requeued_by_code_that_reads_them(store: Store, clock: FakeClock) -> None:
    run = claimed(store, clock)
    store.set_status(
        "t1",
        "r1",
        expected_status=RunStatus.RUNNING,
        expected_version=run.state_version,
        status=RunStatus.QUARANTINED,
        fence=run.fence,
        now=clock.now(),
        data={"reason": "schema_too_new"},
    )
    assert store.requeue_too_new("wf", workflow_version=0, state_schema=9, now=clock.now()) == []
    assert store.requeue_too_new("wf", workflow_version=1, state_schema=1, now=clock.now()) == [
        ("t1", "r1")
    ]
    assert store.get_run("t1", "r1").status is RunStatus.RUNNING
    assert [r.run_id for r in store.scan_runs([RunStatus.RUNNING])] == ["r1"]
