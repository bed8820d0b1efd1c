"""The store conformance suite: one test body per store behaviour, run on every backend."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from perdure.store.base import Store
from tests.backends import BACKENDS, Backend, PostgresBackend, SqliteBackend


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
