"""A rebuildable cache field across crashes: a process killed after the cache was stored finds
it again in a new process (a hit, no rebuild); killed after its bytes were uploaded but before
the boundary recorded them, the step sets it again; and when the stored bytes are gone by the
time a new process reads them, it rebuilds the cache once and records the miss."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from perdure import Runtime
from perdure.core.model import RunStatus
from perdure.testing import FileClock
from tests.apps.cache_app import TURNS, rag
from tests.conftest import ROOT, cli_env

APP = [sys.executable, "-m", "tests.apps.cache_app"]


def run_app(verb: str, db_url: str, objects: Path, *args: str, crash: str = "") -> None:
    env = cli_env(PERDURE_ARTIFACTS=str(objects), **({"PERDURE_CRASH_AT": crash} if crash else {}))
    done = subprocess.run(
        [*APP, verb, db_url, *args], check=False, env=env, cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == (75 if crash else 0), done.stderr
    if crash:
        assert f"CRASH {crash.split(':', maxsplit=1)[0]}" in done.stderr


def finished(db_url: str) -> list[str]:
    """The run succeeded with every answer reading the whole cache; its rebuild reasons."""
    with Runtime(db_url, workflows=[rag], migrate=False) as rt:
        (run,) = rt.runs(limit=10)
        assert run.status is RunStatus.SUCCEEDED, run.error
        assert run.result == {"turns": TURNS, "seen": 20 * TURNS}
        events = rt.store.events(run.tenant_id, run.run_id, limit=1000)
        return [str(e.data["reason"]) for e in events if e.type == "cache_rebuilt"]  # type: ignore[index]


@pytest.mark.slow
@pytest.mark.parametrize("point", ["before_commit:answer", "after_upload:fetch"])
def test_a_crash_finds_the_stored_cache_again(
    db_url: str, tmp_path: Path, shared_clock: FileClock, point: str
) -> None:
    log, objects = tmp_path / "rebuilds", tmp_path / "objects"
    run_app("start", db_url, objects, str(log), crash=point)
    shared_clock.advance(31)  # the dead process's lease runs out
    run_app("resume", db_url, objects)
    assert finished(db_url) == []
    assert not log.exists(), "the cache was read back, never rebuilt"


@pytest.mark.slow
def test_a_cache_lost_with_the_process_is_rebuilt_once(
    db_url: str, tmp_path: Path, shared_clock: FileClock
) -> None:
    log, objects = tmp_path / "rebuilds", tmp_path / "objects"
    run_app("start", db_url, objects, str(log), crash="before_commit:answer")
    shutil.rmtree(objects)  # the object store lost the cache's bytes too
    shared_clock.advance(31)
    run_app("resume", db_url, objects)
    assert finished(db_url) == ["artifact_missing"]
    assert log.read_text() == "rebuilt why\n"
