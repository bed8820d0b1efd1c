"""A process killed while a field log is being compacted (the boundary that writes the log
whole because its tails reached their thresholds): before the boundary is durable the log is as
it was (its base and tails) and the step runs again; after it, the log is the new base. Either
way the next process loads every document once, in order, and goes on appending; a SIGKILL
that lands anywhere in that boundary's write leaves one of the two. On each backend."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from perdure import Runtime
from perdure.core.logs import COMPACT_BYTES
from perdure.core.model import RunStatus
from perdure.core.serde import dumps, loads
from perdure.runtime.crashpoints import EXIT_CODE
from tests.apps.log_app import DOC, Reading, document, library
from tests.conftest import ROOT, cli_env, perdure_cmd
from tests.waypoints import Waypoint

APP = "tests.apps.log_app"
UNTIL = 10
FIRST_COMPACTION = 5
"""Step 1 makes the list a log; steps 2-4 append a tail of ~300 KB each; step 5's tail would
take them past COMPACT_BYTES, so step 5 writes the list whole."""


def docs_of(rt: Runtime, run_id: str) -> list[dict[str, object]]:
    value = loads(rt.store.load_state("default", run_id)["docs"])
    assert isinstance(value, list)
    return value


def whole_writes(rt: Runtime, run_id: str) -> list[int]:
    changes = rt.store.history.state_changes("default", run_id)
    return [c.step_seq for c in changes if c.field == "docs" and not c.appended]


def worker(db_url: str, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        perdure_cmd(db_url, "worker", "--app", APP, "--until-idle"),
        env=cli_env(**env),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish_and_check(rt: Runtime, run_id: str) -> None:
    """Resume the run here; every document is there once, in order."""
    rt.register(library)
    rt.run_until_idle()
    assert rt.get(run_id).status is RunStatus.SUCCEEDED
    assert docs_of(rt, run_id) == [document(n) for n in range(UNTIL)]
    assert whole_writes(rt, run_id)[:3] == [0, 1, FIRST_COMPACTION]


def test_the_documents_make_the_first_compaction_happen_at_step_five() -> None:
    tail = len(b"," + dumps(document(0)))
    assert 3 * tail <= COMPACT_BYTES < 4 * tail, (DOC, tail)


@pytest.mark.parametrize("point", ["before_compact", "after_compact"])
def test_a_crash_around_a_compaction_loses_nothing(db_url: str, point: str) -> None:
    with Runtime(db_url) as rt:
        run = rt.start(library, Reading(until=UNTIL))
        proc = worker(db_url, PERDURE_CRASH_AT=f"{point}:docs")
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == EXIT_CODE, err
        assert f"CRASH {point}:docs" in err
        crashed = rt.get(run.run_id)
        stored = rt.store.load_state("default", run.run_id)
        if point == "before_compact":  # the log as it was: its base and three tails
            assert crashed.steps_done == FIRST_COMPACTION - 1
            assert stored.logs == {"docs": 3}
        else:  # the new base, no tails
            assert crashed.steps_done == FIRST_COMPACTION
            assert stored.logs == {"docs": 0}
        assert docs_of(rt, run.run_id) == [document(n) for n in range(crashed.steps_done)]
        finish_and_check(rt, run.run_id)


def test_a_sigkill_while_the_compacting_boundary_is_written_loses_nothing(
    db_url: str, tmp_path: Path
) -> None:
    reached = Waypoint(tmp_path / "compacting")
    hold = tmp_path / "hold"
    os.mkfifo(hold)  # the step after the compacting one waits here until the kill
    try:
        with Runtime(db_url) as rt:
            run = rt.start(library, Reading(until=UNTIL))
            proc = worker(
                db_url,
                LOG_APP_WAYPOINT=str(reached.path),
                LOG_APP_KILL_AT=str(FIRST_COMPACTION),
                LOG_APP_HOLD=str(hold),
            )
            reached.wait(proc)  # the compacting step's code ran; its boundary is being written
            proc.send_signal(signal.SIGKILL)
            proc.communicate(timeout=60)
            assert proc.returncode == -signal.SIGKILL
            crashed = rt.get(run.run_id)
            assert crashed.steps_done in (FIRST_COMPACTION - 1, FIRST_COMPACTION)
            expected = {"docs": 3} if crashed.steps_done < FIRST_COMPACTION else {"docs": 0}
            assert rt.store.load_state("default", run.run_id).logs == expected
            assert docs_of(rt, run.run_id) == [document(n) for n in range(crashed.steps_done)]
            finish_and_check(rt, run.run_id)
    finally:
        reached.close()
