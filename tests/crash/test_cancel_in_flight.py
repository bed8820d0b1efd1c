"""A cancel (or a thread interrupt, or a parent's cancel) that lands while an effect is in
flight: the worker was killed at a crash point inside the effect, then the run is cancelled and
any worker finishes the cancel. Every effect ends accounted for, on a light that applies every
call it gets: never sent (rejected), compensated, kept (listed in the run's error), or in a
person's hands (NEEDS_ATTENTION, ``ambiguous_effect``) when nobody can tell what happened.
The table of these cells is in ``docs/recovery.md``."""

from __future__ import annotations

import json
import signal
from dataclasses import dataclass
from pathlib import Path

import pytest

from perdure import InvalidInputError, Runtime
from perdure.core.effects import EffectStatus
from perdure.core.model import RunStatus
from perdure.demos.light import SmartLight
from tests.apps.cancel_app import booking, trip
from tests.conftest import Gates, cli_env, run_cli, start_worker
from tests.waypoints import Waypoint

APP = "tests.apps.cancel_app"
S = EffectStatus


@dataclass(frozen=True)
class Cell:
    """Where the worker dies, how the booking is declared, and what the cancel must leave."""

    crash: dict[str, str]
    reconcile: bool
    compensate: bool
    status: RunStatus
    effects: dict[str, S]  # effect name -> status
    commands: int  # calls the light applied in all (a booking and its undo are two)
    brightness: int  # 80 when nothing was booked or the booking was undone


BOOKED = 85
CELLS = {
    "planned": Cell(
        {"PERDURE_CRASH_AT": "after_intent:book"},
        True,
        True,
        RunStatus.CANCELLED,
        {"book": S.REJECTED},
        0,
        80,
    ),
    "executing, applied, reconciled and compensated": Cell(
        {"PERDURE_CRASH_AT": "after_call:book"},
        True,
        True,
        RunStatus.CANCELLED,
        {"book": S.COMPENSATED, "book.compensate": S.CONFIRMED},
        2,
        80,
    ),
    "executing, applied, reconciled, no compensator: kept": Cell(
        {"PERDURE_CRASH_AT": "after_call:book"},
        True,
        False,
        RunStatus.CANCELLED,
        {"book": S.CONFIRMED},
        1,
        BOOKED,
    ),
    "executing, applied, no reconciler: a person decides": Cell(
        {"PERDURE_CRASH_AT": "after_call:book"},
        False,
        True,
        RunStatus.NEEDS_ATTENTION,
        {"book": S.AMBIGUOUS},
        1,
        BOOKED,
    ),
    "executing, not applied, reconciled": Cell(
        {"BOOKING_DIE_BEFORE_APPLY": "1"},
        True,
        True,
        RunStatus.CANCELLED,
        {"book": S.REJECTED},
        0,
        80,
    ),
    "executing, not applied, no reconciler: a person decides": Cell(
        {"BOOKING_DIE_BEFORE_APPLY": "1"},
        False,
        True,
        RunStatus.NEEDS_ATTENTION,
        {"book": S.AMBIGUOUS},
        0,
        80,
    ),
    "confirmed and compensated": Cell(
        {"PERDURE_CRASH_AT": "after_outcome:book"},
        False,
        True,
        RunStatus.CANCELLED,
        {"book": S.COMPENSATED, "book.compensate": S.CONFIRMED},
        2,
        80,
    ),
}


def crashed_booking(db_url: str, tmp_path: Path, cell: Cell) -> tuple[str, Path]:
    """A booking whose worker died inside its effect (a real process, ended at a crash point)."""
    light = tmp_path / "light.db"
    state = {"light": str(light), "reconcile": cell.reconcile, "compensate": cell.compensate}
    started = run_cli(db_url, "start", "booking", "--app", APP, "--input", json.dumps(state))
    assert started.returncode == 0, started.stderr
    run_id = started.stdout.split()[1]
    died = run_cli(db_url, "resume", run_id, "--app", APP, env=cli_env(**cell.crash))
    assert died.returncode == 75, died.stderr
    return run_id, light


def settled(rt: Runtime, run_id: str) -> dict[str, S]:
    return {e.name: e.status for e in rt.effects.list(run_id=run_id)}


@pytest.mark.parametrize("how", ["cancel", "interrupt"])
@pytest.mark.parametrize("name", list(CELLS))
def test_a_cancel_settles_every_effect_in_flight(
    db_url: str, tmp_path: Path, name: str, how: str
) -> None:
    cell = CELLS[name]
    run_id, light = crashed_booking(db_url, tmp_path, cell)
    with Runtime(db_url, workflows=[booking]) as rt:
        if how == "cancel":
            asked = rt.cancel(run_id, reason="changed my mind")
        else:
            thread = rt.get(run_id).thread_id
            rt.start(
                booking, {"light": str(tmp_path / "other.db")}, thread=thread, policy="interrupt"
            )
            asked = rt.get(run_id)
        assert asked.status is RunStatus.CANCEL_REQUESTED, "a worker must settle its effect"
        run = rt.resume(run_id)
        assert run.status is cell.status, run.error
        assert settled(rt, run_id) == cell.effects
        status = SmartLight(light).status()
        assert (status["commands"], status["brightness"]) == (cell.commands, cell.brightness)
        if cell.status is RunStatus.NEEDS_ATTENTION:
            assert run.error is not None and run.error.reason == "ambiguous_effect"
            assert run.error.evidence["cancel_requested"] is True
            listed = rt.effects.list(status=["ambiguous"])
            assert [e.name for e in listed] == ["book"]
        elif cell.effects.get("book") is S.CONFIRMED:
            assert run.error is not None
            assert [k["effect"] for k in run.error.kept_effects] == [
                listed.key for listed in rt.effects.list(run_id=run_id)
            ]
        assert rt.resume(run_id).status is cell.status, "settling twice changes nothing"
        assert SmartLight(light).status()["commands"] == cell.commands


def test_a_person_resolves_the_effect_and_the_cancel_then_ends_with_its_undo(
    db_url: str, tmp_path: Path
) -> None:
    cell = CELLS["executing, applied, no reconciler: a person decides"]
    run_id, light = crashed_booking(db_url, tmp_path, cell)
    with Runtime(db_url, workflows=[booking]) as rt:
        rt.cancel(run_id)
        assert rt.resume(run_id).status is RunStatus.NEEDS_ATTENTION
        (effect,) = rt.effects.list(run_id=run_id)
        rt.effects.resolve(effect.key, applied=True, reason="the light shows it", by="ops")
        assert rt.cancel(run_id).status is RunStatus.CANCEL_REQUESTED
        run = rt.resume(run_id)
        assert run.status is RunStatus.CANCELLED
        assert settled(rt, run_id) == {"book": S.COMPENSATED, "book.compensate": S.CONFIRMED}
    assert SmartLight(light).status() == {"brightness": 80, "commands": 2}


def test_a_parents_cancel_settles_its_childs_effect_in_flight(db_url: str, tmp_path: Path) -> None:
    light = tmp_path / "light.db"
    started = run_cli(
        db_url, "start", "trip", "--app", APP, "--input", json.dumps({"light": str(light)})
    )
    parent = started.stdout.split()[1]
    assert run_cli(db_url, "resume", parent, "--app", APP).returncode == 0
    with Runtime(db_url, workflows=[trip, booking]) as rt:
        (child,) = rt.children(parent)
    died = run_cli(
        db_url,
        "resume",
        child.run_id,
        "--app",
        APP,
        env=cli_env(PERDURE_CRASH_AT="after_call:book"),
    )
    assert died.returncode == 75, died.stderr
    with Runtime(db_url, workflows=[trip, booking]) as rt:
        rt.cancel(parent, reason="trip off")
        assert rt.get(child.run_id).status is RunStatus.CANCEL_REQUESTED
        assert rt.resume(child.run_id).status is RunStatus.CANCELLED
        assert settled(rt, child.run_id) == {"book": S.COMPENSATED, "book.compensate": S.CONFIRMED}
    assert SmartLight(light).status() == {"brightness": 80, "commands": 2}


def test_a_crash_during_the_cancels_compensation_leaves_it_to_a_person(
    db_url: str, tmp_path: Path
) -> None:
    cell = CELLS["confirmed and compensated"]
    run_id, light = crashed_booking(db_url, tmp_path, cell)
    with Runtime(db_url, workflows=[booking]) as rt:
        rt.cancel(run_id)
    died = run_cli(
        db_url,
        "resume",
        run_id,
        "--app",
        APP,
        env=cli_env(PERDURE_CRASH_AT="after_call:book.compensate"),
    )
    assert died.returncode == 75, died.stderr
    with Runtime(db_url, workflows=[booking]) as rt:
        run = rt.resume(run_id)
        assert run.status is RunStatus.NEEDS_ATTENTION
        assert settled(rt, run_id) == {"book": S.CONFIRMED, "book.compensate": S.AMBIGUOUS}
    assert SmartLight(light).status() == {"brightness": 80, "commands": 2}, "undo applied once"


def test_a_fork_refuses_to_remake_an_effect_whose_outcome_is_unknown(
    db_url: str, tmp_path: Path
) -> None:
    cell = CELLS["executing, applied, no reconciler: a person decides"]
    run_id, light = crashed_booking(db_url, tmp_path, cell)
    with Runtime(db_url, workflows=[booking]) as rt:
        with pytest.raises(InvalidInputError, match="outcome is unknown"):
            rt.history.fork(run_id, at=0)
        assert len(rt.runs()) == 1, "nothing was created"
        assert rt.resume(run_id).status is RunStatus.NEEDS_ATTENTION  # no reconciler: ambiguous
        with pytest.raises(InvalidInputError, match="outcome is unknown"):
            rt.history.fork(run_id, at=0)
        (effect,) = rt.effects.list(run_id=run_id)
        rt.effects.resolve(effect.key, applied=True, reason="the light shows it", by="ops")
        fork = rt.history.fork(run_id, at=0)
        assert fork.status is RunStatus.PENDING
    assert SmartLight(light).status()["commands"] == 1


def test_a_drain_lets_the_effect_in_flight_finish_and_commit_before_the_worker_leaves(
    db_url: str, tmp_path: Path
) -> None:
    light = tmp_path / "light.db"
    state = json.dumps({"light": str(light)})
    started = run_cli(
        db_url, "start", "charging", "--app", "tests.apps.outage_app", "--input", state
    )
    run_id = started.stdout.split()[1]
    gates = Gates(tmp_path / "gates", "charge")
    in_flight = Waypoint(gates.folder / "charge.reached")
    env = cli_env(**gates.env("charge"))
    worker = start_worker(db_url, "tests.apps.outage_app", "--poll", "0.05", env=env)
    try:
        in_flight.wait(worker)  # the call is in flight
        worker.send_signal(signal.SIGTERM)  # drain: finish the running step, then leave
        gates.open("charge")
        _, err = worker.communicate(timeout=60)
    finally:
        gates.open_all()
        in_flight.close()
        if worker.poll() is None:
            worker.kill()
    assert worker.returncode == 0, err
    with Runtime(db_url, workflows=[]) as rt:
        run = rt.get(run_id)
        assert run.status is RunStatus.SUCCEEDED, "the step and its effect were committed"
        assert settled(rt, run_id) == {"charge": S.CONFIRMED}
    assert SmartLight(light).status()["commands"] == 1
