"""Every CLI test runs on each backend, one process per command: ``db_url`` names a fresh SQLite
file, then a fresh, empty PostgreSQL database that the first ``perdure`` command migrates."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.backends import BACKENDS
from tests.conftest import fresh_db_url


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return fresh_db_url(request, tmp_path, migrated=False)
