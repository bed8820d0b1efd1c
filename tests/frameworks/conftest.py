"""Framework integrations in real processes, on each backend: ``db_url`` names a fresh SQLite
file, then a fresh, empty PostgreSQL database that the first ``perdure`` command migrates; the
model is perdure's stub server in this process (``stub``), which counts the requests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from perdure.providers.stub import StubServer
from tests.backends import BACKENDS
from tests.conftest import fresh_db_url


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return fresh_db_url(request, tmp_path, migrated=False)


@pytest.fixture
def stub() -> Iterator[StubServer]:
    with StubServer() as server:
        yield server
