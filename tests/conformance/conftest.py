"""The store conformance suite: one test body per store behaviour, run on every backend."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from perdure.core.model import Durability, Release
from perdure.store.base import NewRun, Store
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
