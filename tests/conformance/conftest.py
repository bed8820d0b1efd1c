"""The store conformance suite: one test body per store behaviour, run on every backend."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from ratchet import FakeClock
from ratchet.model import Durability, Release
from ratchet.store.base import NewRun, Store
from ratchet.store.sqlite import SqliteStore

BACKENDS = ["sqlite"]
LEASE = timedelta(seconds=30)


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock) -> Iterator[Store]:
    s = SqliteStore(tmp_path / "conformance.db")
    s.migrate(clock.now())
    yield s
    s.close()


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
