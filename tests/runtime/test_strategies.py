"""Checkpoint strategies on each backend: which boundaries are durable when each step starts
and when each effect is called, under ``per_step``, ``per_effect``, ``timed`` and ``hybrid``,
a step's own strategy, and the ``exit`` durability (which is ``per_effect``)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest

from perdure import (
    CheckpointStrategy,
    Context,
    DefinitionError,
    FakeClock,
    RunStatus,
    Runtime,
    Workflow,
    done,
    goto,
    hybrid,
    per_effect,
    per_step,
    step,
    timed,
)
from perdure.core.workflow import Outcome
from tests.apps import strategies_app
from tests.apps.strategies_app import EXPECTED, HOOKS, PLAN, Plan, plan


@pytest.fixture
def hooked(runtime: Runtime, clock: FakeClock) -> Iterator[Runtime]:
    HOOKS.advance = clock.advance
    HOOKS.durable = lambda tenant, run: runtime.store.get_run(tenant, run).steps_done
    yield runtime
    HOOKS.advance, HOOKS.durable = strategies_app.Hooks().advance, strategies_app.Hooks().durable


def events(folder: Path) -> list[tuple[str, int, int]]:
    lines = (folder / "events").read_text().splitlines()
    return [(k, int(i), int(d)) for k, i, d in (line.split() for line in lines)]


def starts_and_acts(folder: Path) -> tuple[list[int], dict[int, int]]:
    found = events(folder)
    return [d for k, _, d in found if k == "start"], {i: d for k, i, d in found if k == "act"}


def run_plan(rt: Runtime, wf: Workflow[Plan], folder: Path, durability: str = "sync") -> int:
    folder.mkdir()
    run = rt.start(wf, Plan(folder=str(folder)), durability=durability)
    rt.run_until_idle()
    done = rt.status(run.run_id).run
    assert done.status is RunStatus.SUCCEEDED, done.error
    assert done.steps_done == len(PLAN)
    return done.steps_done


@pytest.mark.parametrize("name", list(EXPECTED))
def test_each_strategy_flushes_at_its_own_points(
    hooked: Runtime, tmp_path: Path, name: str
) -> None:
    run_plan(hooked, plan(name), tmp_path / name)
    assert starts_and_acts(tmp_path / name) == EXPECTED[name]


def test_exit_durability_is_the_per_effect_strategy(hooked: Runtime, tmp_path: Path) -> None:
    run_plan(hooked, plan("hybrid"), tmp_path / "exit", durability="exit")
    assert starts_and_acts(tmp_path / "exit") == EXPECTED["per_effect"]


def test_a_step_may_choose_its_own_strategy(hooked: Runtime, tmp_path: Path) -> None:
    base = plan("per_effect")
    steps = [
        replace(s, checkpoint=per_step()) if s.name == "think" else s for s in base.steps.values()
    ]
    wf = Workflow("plan", state=Plan, steps=steps, checkpoint=per_effect())
    run_plan(hooked, wf, tmp_path / "mixed")
    starts, acts = starts_and_acts(tmp_path / "mixed")
    # a think boundary is flushed at once (with the ask or act boundary before it)
    assert starts == [0, 1, 1, 3, 3, 5, 5, 7, 7]
    assert acts == {3: 3, 7: 7}


def test_a_timer_never_counts_a_model_call_as_a_side_effect(
    hooked: Runtime, tmp_path: Path
) -> None:
    run_plan(hooked, plan("timed"), tmp_path / "timed")
    asks = {i: d for k, i, d in events(tmp_path / "timed") if k == "ask"}
    assert asks == {1: 0, 5: 3}, "a model call does not flush under timed"


@pytest.mark.parametrize(
    ("make", "fix"),
    [
        (lambda: timed(0), "greater than 0"),
        (lambda: hybrid(-1), "greater than 0"),
        (lambda: timed(float("inf")), "finite"),
        (lambda: timed("30"), "must be a number"),  # type: ignore[arg-type]
        (lambda: hybrid(True), "must be a number"),
    ],
)
def test_a_bad_timer_is_refused_when_declared(make: object, fix: str) -> None:
    with pytest.raises(DefinitionError, match=fix):
        make()  # type: ignore[operator]


def test_a_strategy_that_is_not_one_is_refused() -> None:
    with pytest.raises(DefinitionError, match="not a checkpoint strategy"):
        plan_steps = list(plan("per_step").steps.values())
        Workflow("plan", state=Plan, steps=plan_steps, checkpoint="timed")  # type: ignore[arg-type]
    with pytest.raises(DefinitionError, match="not a checkpoint strategy"):
        step(checkpoint=30)(lambda ctx, s: None)  # type: ignore[arg-type]


def test_each_strategy_names_its_recovery_point() -> None:
    strategies: list[CheckpointStrategy] = [per_step(), per_effect(), timed(30), hybrid(60)]
    assert [str(s) for s in strategies] == ["per_step()", "per_effect()", "timed(30)", "hybrid(60)"]
    assert "30 seconds" in timed(30).recovery_point
    assert "never lost" in hybrid(60).recovery_point


@dataclass
class Parent:
    seen: list[int] = field(default_factory=list)


@step
def child_step(ctx: Context, s: Parent) -> Outcome:
    return done({"child": True})


child_wf = Workflow("strategy_child", state=Parent, steps=[child_step])


@step(next=["spawn_one"])
def first(ctx: Context, s: Parent) -> Outcome:
    return goto("spawn_one")


@step(next=["after"])
def spawn_one(ctx: Context, s: Parent) -> Outcome:
    ctx.spawn(child_wf, key="only")
    s.seen.append(HOOKS.durable(ctx.tenant_id, ctx.run_id))
    return goto("after")


@step
def after(ctx: Context, s: Parent) -> Outcome:
    return done({"seen": s.seen})


@pytest.mark.parametrize("name", ["per_effect", "timed"])
def test_the_boundaries_before_a_child_run_are_durable_when_it_starts(
    hooked: Runtime, name: str
) -> None:
    strategy = strategies_app.STRATEGIES[name]
    parent = Workflow("parent", state=Parent, steps=[first, spawn_one, after], checkpoint=strategy)
    hooked.register(child_wf)
    run = hooked.start(parent, Parent())
    hooked.run_until_idle()
    done_run = hooked.get(run.run_id)
    assert done_run.status is RunStatus.SUCCEEDED, done_run.error
    assert done_run.result == {"seen": [1]}, "the first step was durable before the child began"


@step(next=["act_async"])
async def think_async(ctx: Context, s: Parent) -> Outcome:
    return goto("act_async")


@step
async def act_async(ctx: Context, s: Parent) -> Outcome:
    tenant, run = ctx.tenant_id, ctx.run_id
    seen = await ctx.aeffect(
        "act",
        target="ledger",
        operation="append",
        request={},
        execute=lambda _request, _key: HOOKS.durable(tenant, run),
    )
    return done({"seen": seen})


@pytest.mark.parametrize("name", ["per_effect", "timed", "hybrid"])
def test_async_steps_keep_the_same_flush_before_a_side_effect(hooked: Runtime, name: str) -> None:
    strategy = strategies_app.STRATEGIES[name]
    wf = Workflow("async_plan", state=Parent, steps=[think_async, act_async], checkpoint=strategy)
    run = hooked.start(wf, Parent())
    hooked.run_until_idle()
    done_run = hooked.get(run.run_id)
    assert done_run.status is RunStatus.SUCCEEDED, done_run.error
    assert done_run.result == {"seen": 1}
