"""The store conformance suite: one test body per store behaviour, run on every backend."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from perdure import FakeClock
from perdure.core.model import Durability, Release, Run, RunStatus
from perdure.store.base import Boundary, NewRun, Store
from tests.backends import BACKENDS, Backend, PostgresBackend, SqliteBackend

LEASE = timedelta(seconds=30)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    """Each backend in turn; PostgreSQL needs PERDURE_TEST_PG_DSN (see tests/backends.py)."""
    if request.param == "sqlite":
        return SqliteBackend(tmp_path)
    return PostgresBackend(request.getfixturevalue("pg_server"))


@pytest.fixture
def store(backend: Backend) -> Iterator[Store]:
    """A fresh, migrated store of each backend, isolated from every other test."""
    s = backend.new_store()
    yield s
    backend.dispose(s)


def new_run(
    run_id: str,
    *,
    tenant: str = "t1",
    thread: str = "th1",
    key: str | None = None,
    workflow: str = "wf",
) -> NewRun:
    return NewRun(
        run_id=run_id,
        tenant_id=tenant,
        thread_id=thread,
        workflow=workflow,
        start_step="first",
        release=Release(1, 1, Durability.SYNC, code="abc"),
        state={"n": b"0"},
        idempotency_key=key,
    )


def claimed(store: Store, clock: FakeClock, run_id: str = "r1", owner: str = "w1") -> Run:
    """A new run of tenant t1, claimed by ``owner``."""
    store.create_run(new_run(run_id), clock.now())
    run = store.claim(
        owner, clock.now() + LEASE, clock.now(), ["wf"], tenant_id="t1", run_id=run_id
    )
    assert run is not None
    return run


def claim(store: Store, clock: FakeClock, owner: str = "w1", **kw: str | None) -> Run | None:
    """Claim for ``owner`` (workflow ``wf``, a 30-second lease); ``kw`` as :meth:`Store.claim`."""
    return store.claim(owner, clock.now() + LEASE, clock.now(), ["wf"], **kw)


def boundary(
    clock: FakeClock,
    step: str = "first",
    next_step: str | None = "second",
    status: RunStatus = RunStatus.RUNNING,
    **kw: object,
) -> Boundary:
    """A boundary committed now: ``next`` while RUNNING, else ``done``; ``kw`` as Boundary."""
    now = clock.now()
    outcome = "next" if status is RunStatus.RUNNING else "done"
    return Boundary(step, outcome, next_step, status, now, now, **kw)  # type: ignore[arg-type]


def patched_by_a_person(store: Store, clock: FakeClock, state: dict[str, bytes]) -> Run:
    """Run r1 of t1 (RUNNING, held) handed to a person (NEEDS_ATTENTION), who continues it at
    ``second`` with ``state`` patched in; returns the run reopened."""
    current = store.get_run("t1", "r1")
    store.set_status(
        "t1",
        "r1",
        expected_status=RunStatus.RUNNING,
        expected_version=current.state_version,
        status=RunStatus.NEEDS_ATTENTION,
        fence=current.fence,
        now=clock.now(),
    )
    stopped = store.get_run("t1", "r1")
    return store.reopen(
        "t1",
        "r1",
        expected_status=RunStatus.NEEDS_ATTENTION,
        expected_version=stopped.state_version,
        next_step="second",
        state=state,
        budget=None,
        now=clock.now(),
        data=None,
    )
