"""The bound on a transaction's wait for its client, on every pooled PostgreSQL session."""

from __future__ import annotations

import pytest

from perdure.core.errors import ConfigError
from perdure.store.postgres.driver import IDLE_TRANSACTION_ENV, PostgresDriver


def test_sessions_bound_a_transaction_by_a_third_of_the_lease(pg_url: str) -> None:
    driver = PostgresDriver(pg_url, lease_seconds=45)
    try:
        with driver.read() as tx:
            row = tx.conn.execute(b"SHOW idle_in_transaction_session_timeout").fetchone()
        assert row is not None and row["idle_in_transaction_session_timeout"] == "15s"
    finally:
        driver.close()


def test_a_bound_that_is_not_a_number_of_seconds_is_one_line_with_the_fix(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(IDLE_TRANSACTION_ENV, "soon")
    with pytest.raises(ConfigError) as caught:
        PostgresDriver(pg_url)
    line = caught.value.one_line()
    assert "\n" not in line and IDLE_TRANSACTION_ENV in line and "0 (no bound)" in line
