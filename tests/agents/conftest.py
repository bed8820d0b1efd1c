"""Agent-layer tests run on each backend where a store is involved (``db_url``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.backends import BACKENDS
from tests.conftest import fresh_db_url


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return fresh_db_url(request, tmp_path, migrated=True)
