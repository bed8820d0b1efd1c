"""Every process-level test runs on each backend: ``db_url`` names a fresh SQLite file, then a
fresh, empty PostgreSQL database that the first ``ratchet`` command migrates."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.backends import BACKENDS

SQLITE_ONLY = {
    # The brightness demo keeps its simulated light next to an SQLite file, and for any other
    # database in .ratchet/light.db of the working directory, which tests would share.
    "test_the_brightness_contract_holds_at_every_crash_point",
}


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "db_url" in metafunc.fixturenames:
        only_sqlite = metafunc.function.__name__ in SQLITE_ONLY
        metafunc.parametrize("db_url", ["sqlite"] if only_sqlite else BACKENDS, indirect=True)


@pytest.fixture
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'ratchet.db'}"
    url: str = request.getfixturevalue("pg_empty_url")
    return url
