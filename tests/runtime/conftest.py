"""Every runtime test runs on each backend: ``db_url`` (and so the ``runtime`` fixture) names a
fresh SQLite file, then a fresh PostgreSQL database (see tests/backends.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.backends import BACKENDS


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'perdure.db'}"
    url: str = request.getfixturevalue("pg_url")
    return url
