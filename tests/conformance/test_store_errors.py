"""Errors at the store boundary: a driver exception never reaches a caller, on any backend."""

from __future__ import annotations

from collections.abc import Callable

from perdure import FakeClock
from perdure.core.effects import EffectStatus
from perdure.core.errors import StoreError
from perdure.core.model import RunStatus
from perdure.store.base import Store
from perdure.testing.conformance.support import LEASE, boundary, new_run
from tests.backends import Backend


def every_method(store: Store, clock: FakeClock) -> dict[str, Callable[[], object]]:
    """One call of each store method that touches the schema, by method name."""
    now = clock.now()
    e = EffectStatus
    return {
        "create_run": lambda: store.create_run(new_run("r1"), now),
        "get_run": lambda: store.get_run("t1", "r1"),
        "list_runs": lambda: store.list_runs("t1"),
        "load_state": lambda: store.load_state("t1", "r1"),
        "claim": lambda: store.claim("w1", now + LEASE, now, ["wf"]),
        "claim_one_run": lambda: store.claim("w1", now + LEASE, now, ["wf"], run_id="r1"),
        "heartbeat": lambda: store.heartbeat("t1", "r1", "w1", 1, now + LEASE),
        "renew_leases": lambda: store.renew_leases("w1", [("t1", "r1", 1)], now + LEASE),
        "release": lambda: store.release("t1", "r1", "w1", 1, now),
        "commit": lambda: store.commit("t1", "r1", 1, 1, [boundary(clock)], now),
        "set_status": lambda: store.set_status(
            "t1",
            "r1",
            expected_status=RunStatus.RUNNING,
            expected_version=1,
            status=RunStatus.CANCELLED,
            fence=None,
            now=now,
        ),
        "defer": lambda: store.defer(
            "t1", "r1", fence=1, expected_version=1, wake_at=now, step_attempts=1, now=now
        ),
        "get_effect": lambda: store.get_effect("t1", "k"),
        "update_effect": lambda: store.update_effect(
            "t1", "k", expected_status=e.PLANNED, status=e.EXECUTING, fence=None, now=now
        ),
        "list_effects": lambda: store.list_effects("t1"),
        "approvals": lambda: store.approvals("t1"),
        "decide_approval": lambda: store.decide_approval(
            "t1", 1, approve=True, by="ann", role="ops", comment=None, request_id=None, now=now
        ),
        "deliver_signal": lambda: store.deliver_signal(
            "t1", "r1", signal_id="s1", name="go", payload=None, now=now
        ),
        "signals": lambda: store.signals("t1", "r1"),
        "reopen": lambda: store.reopen(
            "t1",
            "r1",
            expected_status=RunStatus.NEEDS_ATTENTION,
            expected_version=1,
            next_step="first",
            state={},
            budget=None,
            now=now,
            data=None,
        ),
        "record_event": lambda: store.record_event("t1", "r1", "note", None, now),
        "recall_request": lambda: store.recall_request("t1", "q1"),
        "remember_request": lambda: store.remember_request("t1", "q1", "start", None, now),
        "delete_run_messages": lambda: store.delete_run_messages("t1", "r1"),
        "upgrade_run": lambda: store.upgrade_run(
            "t1",
            "r1",
            fence=1,
            expected_version=1,
            fields={},
            drop=(),
            next_step=None,
            workflow_version=1,
            state_schema=1,
            now=now,
            data=None,
        ),
        "scan_runs": lambda: store.scan_runs([RunStatus.QUARANTINED]),
        "requeue_too_new": lambda: store.requeue_too_new(
            "wf", workflow_version=1, state_schema=1, now=now
        ),
        "worker_beat": lambda: store.worker_beat(
            "w1", host="h", pid=1, concurrency=1, runs_held=0, now=now
        ),
        "worker_stopped": lambda: store.worker_stopped("w1", now),
        "workers": lambda: store.workers(now),
        "stuck_runs": lambda: store.stuck_runs(now),
        "next_wake": lambda: store.next_wake(now),
        "steps": lambda: store.steps("t1", "r1"),
        "events": lambda: store.events("t1", "r1"),
        "messages": lambda: store.messages("t1", "th1"),
    }


def test_every_method_on_an_unmigrated_database_is_a_store_error_naming_migrate(
    backend: Backend, clock: FakeClock
) -> None:
    store = backend.unmigrated_store()
    try:
        assert store.schema_version() == 0
        wrong: dict[str, str] = {}
        for name, call in every_method(store, clock).items():
            try:
                call()
            except StoreError as exc:
                if exc.code != "store_error" or "perdure migrate" not in exc.fix:
                    wrong[name] = exc.one_line()
            except Exception as exc:  # a driver exception: the failure this test looks for
                wrong[name] = f"{type(exc).__module__}.{type(exc).__name__}: {exc}"
            else:
                wrong[name] = "no error"
        assert wrong == {}
    finally:
        backend.dispose(store)


def test_a_migrated_database_accepts_what_an_unmigrated_one_refused(
    backend: Backend, clock: FakeClock
) -> None:
    store = backend.unmigrated_store()
    try:
        store.migrate(clock.now())
        run, created = store.create_run(new_run("r1"), clock.now())
        assert created and store.get_run("t1", "r1") == run
    finally:
        backend.dispose(store)


def test_each_data_exception_gets_its_own_hint(store: Store) -> None:
    """A negative limit and a NUL in text are different mistakes: each error names its own
    fix (on PostgreSQL the SQLSTATE decides; SQLite refuses or ignores them itself)."""
    from perdure.core.errors import InvalidInputError, PerdureError

    hints: set[str] = set()
    for call in (
        lambda: store.list_runs("t", limit=-1),
        lambda: store.get_run("t", "run\x00id"),
    ):
        try:
            call()
        except InvalidInputError as exc:
            assert exc.fix, exc
            hints.add(exc.fix)
        except PerdureError as exc:  # SQLite: no such run
            assert exc.code == "run_not_found", exc
    if store.url.startswith("postgresql"):
        assert len(hints) == 2, hints
        assert any("limit" in h for h in hints) and any("NUL" in h for h in hints), hints
