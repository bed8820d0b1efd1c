"""The run page's timeline is drawn from the run's events as they happened, on each database:
a step nobody has claimed yet is waiting for a worker (not in progress since the run was
created), an attempt a crash killed has its own bar up to the takeover, and a step that raised
(the run stopped for a person) has a red mark."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from perdure import FakeClock, Runtime
from perdure.server.timeline import Chart, Lane, chart
from tests.apps import dashboard_app
from tests.backends import BACKENDS
from tests.conftest import fresh_db_url


@pytest.fixture(params=BACKENDS)
def db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return fresh_db_url(request, tmp_path, migrated=True)


@pytest.fixture
def clock() -> Iterator[FakeClock]:
    clock = FakeClock()
    dashboard_app.CLOCK = clock
    dashboard_app.FAILS["think"] = 0
    yield clock


def runtime(db: str, clock: FakeClock, owner: str) -> Runtime:
    workflows = [dashboard_app.research, dashboard_app.broken]
    return Runtime(db, clock=clock, workflows=workflows, owner=owner, lease_seconds=10)


def drawn(rt: Runtime, run_id: str) -> Chart:
    view = rt.status(run_id, tenant="t1", events=500)
    return chart(view.run, view.steps, view.events, view.effects, rt.clock.now())


def lane(c: Chart, step: str) -> Lane:
    (found,) = [x for x in c.lanes if x.label == step]
    return found


def test_an_unclaimed_step_is_waiting_for_a_worker_not_in_progress(
    db: str, clock: FakeClock
) -> None:
    with runtime(db, clock, "w1") as rt:
        run_id = rt.start("research", tenant="t1").run_id
        clock.advance(5)
        c = drawn(rt, run_id)
    (bar,) = lane(c, "fetch").bars
    assert bar.kind == "queued" and "waiting for a worker" in bar.title
    assert all(b.kind != "running" for x in c.lanes for b in x.bars)


def test_an_attempt_killed_by_a_crash_has_a_bar_up_to_the_takeover(
    db: str, clock: FakeClock
) -> None:
    with runtime(db, clock, "dead") as gone:
        run_id = gone.start("research", tenant="t1").run_id
        assert gone.claim_next(tenant="t1") is not None  # claimed; its worker then dies
    clock.advance(30)  # the lease runs out
    with runtime(db, clock, "w2") as rt:
        rt.run_until_idle(max_runs=1)  # takes the run over: fetch runs again (2 s) and on
        c = drawn(rt, run_id)
    fetch = lane(c, "fetch")
    killed = [b for b in fetch.bars if b.kind == "killed"]
    assert len(killed) == 1 and "30.000 s" in killed[0].title
    assert [m.kind for m in fetch.marks] == ["takeover"]
    assert fetch.attempt == 2


def test_a_step_that_raised_has_a_red_mark_and_is_not_in_progress(
    db: str, clock: FakeClock
) -> None:
    with runtime(db, clock, "w1") as rt:
        run_id = rt.start("broken", tenant="t1").run_id
        rt.run_until_idle()
        assert str(rt.get(run_id, tenant="t1").status) == "NEEDS_ATTENTION"
        c = drawn(rt, run_id)
    explode = lane(c, "explode")
    assert [m.kind for m in explode.marks] == ["failed"]
    assert [b.kind for b in explode.bars] == ["stopped"]
