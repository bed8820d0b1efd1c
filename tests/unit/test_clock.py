"""The test clock shared by processes through a file, and the default clock that picks it."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from perdure.core.clock import SystemClock
from perdure.core.errors import ConfigError
from perdure.runtime.clock import TEST_CLOCK_VARIABLE, default_clock
from perdure.testing import FileClock

START = datetime(2026, 1, 1, tzinfo=UTC)


def test_every_reader_of_the_file_sees_the_time_the_test_moved(tmp_path: Path) -> None:
    mover = FileClock.create(tmp_path / "clock", START)
    reader = FileClock(tmp_path / "clock")
    assert reader.now() == START
    assert mover.advance(90) == START + timedelta(seconds=90)
    assert reader.now() == START + timedelta(seconds=90)
    assert reader.now() == reader.now(), "time stands still until the test moves it"


def test_the_clock_is_rewritten_whole_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    clock = FileClock.create(tmp_path / "clock")
    for _ in range(20):
        clock.advance(0.5)
    assert [p.name for p in tmp_path.iterdir()] == ["clock"]
    assert clock.now() == START + timedelta(seconds=10)


def test_the_default_clock_is_the_wall_clock_without_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(TEST_CLOCK_VARIABLE, raising=False)
    assert isinstance(default_clock(), SystemClock)


def test_the_default_clock_is_the_test_clock_the_variable_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = FileClock.create(tmp_path / "clock", START)
    monkeypatch.setenv(TEST_CLOCK_VARIABLE, str(shared.path))
    clock = default_clock()
    shared.advance(3600)
    assert clock.now() == START + timedelta(hours=1)


def test_a_missing_or_garbled_clock_file_says_how_to_fix_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TEST_CLOCK_VARIABLE, str(tmp_path / "absent"))
    with pytest.raises(ConfigError, match="does not exist") as missing:
        default_clock()
    assert "FileClock.create" in missing.value.one_line()
    (tmp_path / "naive").write_text("2026-01-01T00:00:00\n")
    with pytest.raises(ConfigError, match="time zone"):
        FileClock(tmp_path / "naive").now()


def test_another_process_reads_the_same_time(tmp_path: Path) -> None:
    shared = FileClock.create(tmp_path / "clock", START)
    shared.advance(42)
    code = "from perdure.runtime.clock import default_clock; print(default_clock().now())"
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={**{k: v for k, v in os.environ.items() if k != TEST_CLOCK_VARIABLE}, **shared.env},
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert out.stdout.strip() == str(START + timedelta(seconds=42))
