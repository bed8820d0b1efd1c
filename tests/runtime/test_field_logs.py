"""A state field that only grows is stored as a log: each boundary writes what was appended,
the full list comes back on load, in history and after a crash, and it may outgrow the byte
limit without failing the run."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from perdure import Context, FakeClock, Runtime, Workflow, done, goto, step
from perdure.core.logs import COMPACT_BYTES, COMPACT_EVERY
from perdure.core.model import RunStatus
from perdure.core.serde import Limits, loads
from perdure.core.workflow import Outcome, wait_for_signal

ITEM = "x" * 200


@dataclass
class Notes:
    items: list[dict[str, object]] = field(default_factory=list)
    count: int = 0
    until: int = 10
    pause: int = -1
    blob: str = ""


@step(next=["grow"])
def grow(ctx: Context, state: Notes) -> Outcome:
    state.items.append({"n": len(state.items), "text": ITEM})
    state.count += 1
    if state.count == state.pause:
        return wait_for_signal("go", next="grow")
    return goto("grow") if state.count < state.until else done({"items": len(state.items)})


notes = Workflow("notes", state=Notes, steps=[grow])


@step
def swell(ctx: Context, state: Notes) -> Outcome:
    state.blob = "y" * 5_000
    return done()


bloat = Workflow("bloat", state=Notes, steps=[swell])


@pytest.fixture
def rt(db_url: str, clock: FakeClock, tmp_path: Path) -> Iterator[Runtime]:
    runtime = Runtime(
        db_url,
        clock=clock,
        workflows=[notes, bloat],
        append_from=1_000,
        artifacts=str(tmp_path / "objects"),
    )
    yield runtime
    runtime.close()


def items_of(rt: Runtime, run_id: str) -> list[dict[str, object]]:
    value = loads(rt.store.load_state("default", run_id)["items"])
    assert isinstance(value, list)
    return value


def test_a_growing_list_stores_only_what_each_step_appended(rt: Runtime) -> None:
    run = rt.start(notes, Notes(until=30))
    rt.run_until_idle()
    assert rt.get(run.run_id).status is RunStatus.SUCCEEDED
    changes = [
        c for c in rt.store.history.state_changes("default", run.run_id) if c.field == "items"
    ]
    whole = [c for c in changes if not c.appended]
    tails = [c for c in changes if c.appended]
    # items grows by ~220 bytes a step: written whole until it passes 1,000 bytes (step 5),
    # then only its tails
    assert [c.step_seq for c in whole] == [0, 1, 2, 3, 4, 5]
    assert [c.step_seq for c in tails] == list(range(6, 31))
    assert all(c.size is not None and c.size < 250 for c in tails)
    assert items_of(rt, run.run_id) == [{"n": i, "text": ITEM} for i in range(30)]
    assert rt.store.load_state("default", run.run_id).logs == {"items": 25}


def test_history_rebuilds_a_log_at_every_step(rt: Runtime) -> None:
    run = rt.start(notes, Notes(until=12))
    rt.run_until_idle()
    for seq in (0, 3, 5, 6, 9, 12):
        at = rt.store.history.state_at("default", run.run_id, seq)
        assert loads(at["items"]) == [{"n": i, "text": ITEM} for i in range(seq)], seq


def test_a_log_is_compacted_and_a_new_process_goes_on_appending(
    rt: Runtime, db_url: str, clock: FakeClock, tmp_path: Path
) -> None:
    total = 5 + COMPACT_EVERY + 10
    run = rt.start(notes, Notes(until=total, pause=20))
    rt.run_until_idle()
    assert rt.get(run.run_id).status is RunStatus.WAITING_EXTERNAL
    assert rt.store.load_state("default", run.run_id).logs == {"items": 15}
    rt.close()
    objects = str(tmp_path / "objects")
    with Runtime(
        db_url, clock=clock, workflows=[notes], append_from=1_000, artifacts=objects
    ) as again:
        again.signal(run.run_id, "go", None)
        again.run_until_idle()  # loads the log (base and 15 tails) and goes on appending
        assert again.get(run.run_id).status is RunStatus.SUCCEEDED
        changes = again.store.history.state_changes("default", run.run_id)
        whole = [c.step_seq for c in changes if c.field == "items" and not c.appended]
        assert whole == [0, 1, 2, 3, 4, 5, 5 + COMPACT_EVERY + 1], "compacted once"
        assert items_of(again, run.run_id) == [{"n": i, "text": ITEM} for i in range(total)]
        assert again.store.load_state("default", run.run_id).logs == {"items": 9}


@step(next=["file"])
def file(ctx: Context, state: Notes) -> Outcome:
    state.items.append({"n": len(state.items), "text": "d" * 300_000})
    state.count += 1
    if state.count == state.pause:
        return wait_for_signal("go", next="file")
    return goto("file") if state.count < state.until else done()


filing = Workflow("filing", state=Notes, steps=[file])


def test_a_log_of_large_items_is_compacted_by_size_across_processes(
    db_url: str, clock: FakeClock, tmp_path: Path
) -> None:
    # each tail is ~300 KB: three fit in COMPACT_BYTES, the fourth compacts the log
    assert 3 * 300_000 < COMPACT_BYTES < 4 * 300_000
    objects = str(tmp_path / "objects")
    with Runtime(db_url, clock=clock, workflows=[filing], artifacts=objects) as rt:
        run = rt.start(filing, Notes(until=12, pause=7))
        rt.run_until_idle()
        stored = rt.store.load_state("default", run.run_id)
        assert stored.logs == {"items": 2} and stored.tail_bytes["items"] > 600_000
    with Runtime(db_url, clock=clock, workflows=[filing], artifacts=objects) as again:
        again.signal(run.run_id, "go", None)
        again.run_until_idle()  # knows the bytes its tails hold: compacts at step 9, not later
        assert again.get(run.run_id).status is RunStatus.SUCCEEDED
        changes = again.store.history.state_changes("default", run.run_id)
        whole = [c.step_seq for c in changes if c.field == "items" and not c.appended]
        assert whole == [0, 1, 5, 9]
        assert [i["n"] for i in items_of(again, run.run_id)] == list(range(12))
        assert again.store.load_state("default", run.run_id).logs == {"items": 3}
        for seq in (4, 5, 6, 8, 9, 10):  # history (state_at, forks) across the compactions
            at = loads(again.store.history.state_at("default", run.run_id, seq)["items"])
            assert [i["n"] for i in at] == list(range(seq)), seq


def test_a_log_may_outgrow_the_byte_limit(db_url: str, clock: FakeClock, tmp_path: Path) -> None:
    big = [{"n": i, "text": ITEM} for i in range(6_000)]  # about 1.3 MB, over the 1 MB limit
    with Runtime(db_url, clock=clock, workflows=[notes], artifacts=str(tmp_path)) as rt:
        run = rt.start(notes, Notes(items=big, until=5))  # the start offloads it
        rt.run_until_idle()
        assert rt.get(run.run_id).status is RunStatus.SUCCEEDED
        assert len(items_of(rt, run.run_id)) == 6_005
        tails = [c for c in rt.store.history.state_changes("default", run.run_id) if c.appended]
        assert len(tails) == 4, "step 1 made it a log; steps 2-5 appended"


def test_state_over_the_limits_needs_a_person_and_loses_nothing(
    db_url: str, clock: FakeClock
) -> None:
    with Runtime(db_url, clock=clock, workflows=[bloat], limits=Limits(max_bytes=1_000)) as rt:
        run = rt.start(bloat, Notes())
        rt.run_until_idle()
        stopped = rt.get(run.run_id)
        assert stopped.status is RunStatus.NEEDS_ATTENTION
        assert stopped.error is not None and stopped.error.reason == "state_too_large"
        assert stopped.error.resume_at == "swell"
        assert stopped.steps_done == 0


def test_perdure_history_shows_what_a_step_appended(rt: Runtime, db_url: str) -> None:
    from click.testing import CliRunner

    from perdure.cli.main import main

    run = rt.start(notes, Notes(until=7))
    rt.run_until_idle()
    shown = CliRunner().invoke(main, ["--db", db_url, "history", run.run_id])
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    step5 = next(line for line in lines if line.lstrip().startswith("5 "))
    step6 = next(line for line in lines if line.lstrip().startswith("6 "))
    assert "appended" not in step5 and "items" in step5
    assert "items (+" in step6 and "bytes appended)" in step6
