"""Every process-level test runs on each backend: ``db_url`` names a fresh SQLite file, then a
fresh, empty PostgreSQL database that the first ``perdure`` command migrates."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.backends import BACKENDS


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "db_url" in metafunc.fixturenames:
        metafunc.parametrize("db_url", BACKENDS, indirect=True)


@pytest.fixture
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'perdure.db'}"
    url: str = request.getfixturevalue("pg_empty_url")
    return url
