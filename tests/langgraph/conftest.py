"""Fixtures for the LangGraph checkpointers: a fresh migrated database of each backend."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from perdure import FakeClock, Runtime
from perdure.langgraph import PerdureSaver
from tests.backends import BACKENDS
from tests.conftest import fresh_db_url


@pytest.fixture(params=BACKENDS)
def graph_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh, migrated database of each backend, as a URL."""
    return fresh_db_url(request, tmp_path, migrated=True)


@pytest.fixture
def graph_runtime(graph_url: str, clock: FakeClock) -> Iterator[Runtime]:
    rt = Runtime(graph_url, clock=clock, owner="test-host:1")
    yield rt
    rt.close()


@pytest.fixture
def saver(graph_runtime: Runtime) -> PerdureSaver:
    return PerdureSaver(graph_runtime, renew=False)
