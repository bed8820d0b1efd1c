"""Child runs on each backend: a parent spawns children, waits for them holding nothing, is woken
by the last child's own settling commit, and reads their outcomes as typed data; cancelling the
parent cancels the children, each compensating its own effects. Time moves only by the clock."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from perdure import Context, FakeClock, RunStatus, Runtime, Workflow, done, fail, goto, step
from perdure.core.children import child_run_id
from perdure.core.errors import ConflictingUpdatesError, DefinitionError
from perdure.core.reducers import append, total
from perdure.core.workflow import wait_for_children, wait_for_signal

COMPENSATED: list[str] = []


@dataclass
class Job:
    topic: str = ""
    mode: str = "ok"


@step(next=["hold"])
def research(ctx: Context, s: Job):  # type: ignore[no-untyped-def]
    if s.mode == "fail":
        return fail("no_sources", f"nothing found on {s.topic}")
    if s.mode == "hold":
        ctx.effect(
            "reserve",
            target="ledger",
            operation="reserve",
            request={"topic": s.topic},
            execute=lambda req, key: {"reserved": req["topic"]},
            compensate=release_reservation,
        )
        return wait_for_signal("go", next="hold")
    return done({"findings": [f"{s.topic}: found"], "cost": len(s.topic)})


@step
def hold(ctx: Context, s: Job):  # type: ignore[no-untyped-def]
    return done({"findings": [f"{s.topic}: late"], "cost": 1})


def release_reservation(request: Any, key: str, result: Any) -> None:
    COMPENSATED.append(request["topic"])


researcher = Workflow(
    "researcher", state=Job, steps=[research, hold], compensators=[release_reservation]
)


@dataclass
class Plan:
    topics: list[str] = field(default_factory=lambda: ["alpha", "beta", "gamma"])
    findings: list[str] = field(default_factory=list)
    cost: int = 0
    modes: dict[str, str] = field(default_factory=dict)
    first: bool = True


@step(next=["combine"])
def dispatch(ctx: Context, s: Plan):  # type: ignore[no-untyped-def]
    for topic in s.topics:
        ctx.spawn(researcher, {"topic": topic, "mode": s.modes.get(topic, "ok")}, key=topic)
        ctx.spawn(researcher, {"topic": topic}, key=topic)  # the same child again: no second
    return wait_for_children(on_done="combine")


@step
def combine(ctx: Context, s: Plan):  # type: ignore[no-untyped-def]
    kids = ctx.children
    merged = ctx.merge_children(s)
    statuses = {k: str(c.status) for k, c in kids.items()}
    errors = {k: c.error.reason for k, c in kids.items() if c.error is not None}
    return done(
        {"findings": merged.findings, "cost": merged.cost, "status": statuses, "errors": errors}
    )


supervisor = Workflow(
    "supervisor",
    state=Plan,
    steps=[dispatch, combine],
    reducers={"findings": append, "cost": total},
)


def fresh(db_url: str, clock: FakeClock) -> Runtime:
    return Runtime(db_url, clock=clock, owner="w", workflows=[supervisor, researcher])


def test_a_parent_waits_for_three_children_and_merges_their_results_in_key_order(
    db_url: str, clock: FakeClock
) -> None:
    with fresh(db_url, clock) as rt:
        parent = rt.start(supervisor, {"topics": ["gamma", "alpha", "beta"]})
        rt.run_until_idle()
        ended = rt.get(parent.run_id)
        kids = rt.children(parent.run_id)
    assert ended.status is RunStatus.SUCCEEDED, ended.error
    assert ended.result == {
        "findings": ["alpha: found", "beta: found", "gamma: found"],
        "cost": 14,
        "status": {"alpha": "SUCCEEDED", "beta": "SUCCEEDED", "gamma": "SUCCEEDED"},
        "errors": {},
    }
    assert [k.key for k in kids] == ["alpha", "beta", "gamma"]
    assert kids[0].run_id == child_run_id("default", parent.run_id, "alpha")
    assert all(k.status is RunStatus.SUCCEEDED for k in kids)


def test_a_waiting_parent_holds_no_lease_and_is_not_claimable_until_its_children_settle(
    db_url: str, clock: FakeClock
) -> None:
    with fresh(db_url, clock) as rt:
        parent = rt.start(supervisor, {"topics": ["alpha"]})
        assert rt.run_until_idle(max_runs=1) == 1  # the parent: spawns, then waits
        waiting = rt.get(parent.run_id)
        assert (waiting.status, waiting.owner) == (RunStatus.WAITING_EXTERNAL, None)
        assert waiting.waiting is not None and waiting.waiting.to_json()["kind"] == "children"
        rt.run_until_idle(max_runs=1)  # the child ends: its commit wakes the parent
        woken = rt.get(parent.run_id)
        assert (woken.status, woken.next_step) == (RunStatus.RUNNING, "combine")
        rt.run_until_idle()
        assert rt.get(parent.run_id).status is RunStatus.SUCCEEDED


def test_a_failed_child_reaches_the_parent_as_typed_data(db_url: str, clock: FakeClock) -> None:
    with fresh(db_url, clock) as rt:
        parent = rt.start(supervisor, {"topics": ["alpha", "beta"], "modes": {"beta": "fail"}})
        rt.run_until_idle()
        ended = rt.get(parent.run_id)
    assert ended.status is RunStatus.SUCCEEDED
    assert ended.result is not None and isinstance(ended.result, dict)
    assert ended.result["status"] == {"alpha": "SUCCEEDED", "beta": "FAILED"}
    assert ended.result["errors"] == {"beta": "no_sources"}
    assert ended.result["findings"] == ["alpha: found"]


@step(next=["collect"])
def early(ctx: Context, s: Plan):  # type: ignore[no-untyped-def]
    ctx.spawn(researcher, {"topic": "alpha"}, key="alpha")
    return wait_for_signal("collect", next="collect")


@step(next=["combine"])
def collect(ctx: Context, s: Plan):  # type: ignore[no-untyped-def]
    return wait_for_children(["alpha"], on_done="combine")


early_flow = Workflow(
    "early", state=Plan, steps=[early, collect, combine], reducers={"findings": append}
)


def test_children_that_settled_before_the_wait_commits_do_not_make_the_parent_wait(
    db_url: str, clock: FakeClock
) -> None:
    with Runtime(db_url, clock=clock, owner="w", workflows=[early_flow, researcher]) as rt:
        parent = rt.start(early_flow)
        rt.run_until_idle()
        assert rt.children(parent.run_id)[0].status is RunStatus.SUCCEEDED
        rt.signal(parent.run_id, "collect")
        rt.run_until_idle()
        ended = rt.get(parent.run_id)
    assert ended.status is RunStatus.SUCCEEDED, ended.error
    assert ended.result is not None and isinstance(ended.result, dict)
    assert ended.result["findings"] == ["alpha: found"]


@step(next=["combine"])
def wrong_key(ctx: Context, s: Plan):  # type: ignore[no-untyped-def]
    ctx.spawn(researcher, {"topic": "alpha"}, key="alpha")
    return wait_for_children(["alpha", "omega"], on_done="combine")


def test_a_wait_for_a_key_never_spawned_fails_the_run_instead_of_waiting_forever(
    db_url: str, clock: FakeClock
) -> None:
    wf = Workflow("wrong", state=Plan, steps=[wrong_key, combine])
    with Runtime(db_url, clock=clock, owner="w", workflows=[wf, researcher]) as rt:
        parent = rt.start(wf)
        rt.run_until_idle()
        ended = rt.get(parent.run_id)
    assert ended.status is RunStatus.FAILED
    assert ended.error is not None and ended.error.reason == "unknown_child"
    assert ended.error.evidence["missing"] == ["omega"]


def test_cancelling_a_parent_cancels_its_children_and_each_compensates_its_own_effects(
    db_url: str, clock: FakeClock
) -> None:
    COMPENSATED.clear()
    modes = {"alpha": "hold", "beta": "hold", "gamma": "hold"}
    with fresh(db_url, clock) as rt:
        parent = rt.start(supervisor, {"modes": modes})
        rt.run_until_idle()
        kids = rt.children(parent.run_id)
        assert [k.status for k in kids] == [RunStatus.WAITING_EXTERNAL] * 3
        rt.cancel(parent.run_id, reason="user stopped the research")
        rt.run_until_idle()
        ended = rt.get(parent.run_id)
        kids = rt.children(parent.run_id)
    assert ended.status is RunStatus.CANCELLED
    assert [k.status for k in kids] == [RunStatus.CANCELLED] * 3
    assert sorted(COMPENSATED) == ["alpha", "beta", "gamma"]


@step
def clash(ctx: Context, s: Plan):  # type: ignore[no-untyped-def]
    ctx.merge(s, {"a": {"cost": 1}, "b": {"cost": 2}})
    return done()


def test_two_writes_of_a_field_without_a_reducer_are_a_typed_error_not_last_writer_wins(
    db_url: str, clock: FakeClock
) -> None:
    wf = Workflow("clash", state=Plan, steps=[clash])
    with Runtime(db_url, clock=clock, owner="w", workflows=[wf]) as rt:
        run = rt.start(wf)
        rt.run_until_idle()
        ended = rt.get(run.run_id)
    assert ended.status is not RunStatus.SUCCEEDED
    assert ended.error is not None
    assert ConflictingUpdatesError.code in str(ended.error.to_json())


def test_a_reducer_for_a_field_the_state_lacks_is_refused_when_declared() -> None:
    with pytest.raises(DefinitionError, match="no such field"):
        Workflow("bad", state=Plan, steps=[clash], reducers={"nope": append})
    with pytest.raises(DefinitionError, match="unknown"):
        Workflow("bad", state=Plan, steps=[clash], reducers={"cost": "median"})


@step(next=["second"])
def one(ctx: Context, s: Plan):  # type: ignore[no-untyped-def]
    return goto("second")


@step
def second(ctx: Context, s: Plan):  # type: ignore[no-untyped-def]
    return done()


def test_runs_list_the_children_of_a_parent_and_none_for_a_run_without(
    db_url: str, clock: FakeClock
) -> None:
    wf = Workflow("plain", state=Plan, steps=[one, second])
    with Runtime(db_url, clock=clock, owner="w", workflows=[wf]) as rt:
        run = rt.start(wf)
        rt.run_until_idle()
        assert rt.children(run.run_id) == []


@step(next=["combine"])
async def adispatch(ctx: Context, s: Plan):  # type: ignore[no-untyped-def]
    for topic in s.topics:
        await ctx.aspawn(researcher, {"topic": topic}, key=topic, share=0.5)
    return wait_for_children(on_done="combine")


def test_an_async_step_spawns_with_a_share_of_its_budget(db_url: str, clock: FakeClock) -> None:
    from perdure.core.budget import Budget

    wf = Workflow(
        "asuper",
        state=Plan,
        steps=[adispatch, combine],
        reducers={"findings": append, "cost": total},
        budget=Budget(steps=20, cost=10.0),
    )
    with Runtime(db_url, clock=clock, owner="w", workflows=[wf, researcher]) as rt:
        parent = rt.start(wf, {"topics": ["alpha", "beta"]})
        rt.run_until_idle()
        ended = rt.get(parent.run_id)
        kids = [rt.get(k.run_id) for k in rt.children(parent.run_id)]
    assert ended.status is RunStatus.SUCCEEDED, ended.error
    assert ended.result is not None and isinstance(ended.result, dict)
    assert ended.result["findings"] == ["alpha: found", "beta: found"]
    for kid in kids:
        assert kid.budget is not None
        assert (kid.budget.limits.steps, kid.budget.limits.cost) == (10, 5.0)
        assert kid.thread_id == kid.run_id != parent.thread_id


@step
def hostile(ctx: Context, s: Plan):  # type: ignore[no-untyped-def]
    from perdure.core.errors import InvalidInputError

    seen = []
    for key in ["", "a\x00b", "k" * 500]:
        try:
            ctx.spawn(researcher, {"topic": "x"}, key=key)
        except InvalidInputError as exc:
            seen.append(exc.code)
    return done(seen)


def test_hostile_child_keys_are_refused_as_typed_input_errors(
    db_url: str, clock: FakeClock
) -> None:
    wf = Workflow("hostile", state=Plan, steps=[hostile])
    with Runtime(db_url, clock=clock, owner="w", workflows=[wf, researcher]) as rt:
        run = rt.start(wf)
        rt.run_until_idle()
        ended = rt.get(run.run_id)
        assert rt.children(run.run_id) == []
    assert ended.result == ["invalid_input"] * 3


def test_the_parents_history_names_each_child_once_and_the_wake(
    db_url: str, clock: FakeClock
) -> None:
    with fresh(db_url, clock) as rt:
        parent = rt.start(supervisor, {"topics": ["alpha", "beta"]})
        rt.run_until_idle()
        events = rt.status(parent.run_id, events=100).events
    spawned = [e.data for e in events if e.type == "child_spawned"]
    assert sorted(d["key"] for d in spawned) == ["alpha", "beta"]  # type: ignore[index]
    assert [e.type for e in events].count("children_settled") == 1


def test_a_repeated_cancel_of_a_cancelled_parent_cancels_the_children_it_left(
    db_url: str, clock: FakeClock
) -> None:
    from perdure.runtime.admin.control import cancel_run

    COMPENSATED.clear()
    with fresh(db_url, clock) as rt:
        parent = rt.start(supervisor, {"topics": ["alpha", "beta"], "modes": {
            "alpha": "hold", "beta": "hold"}})  # fmt: skip
        rt.run_until_idle()
        # only the parent is asked (as if the process that asked died before the children)
        asked = cancel_run(rt.parts, "default", parent.run_id, "stop", None)
        assert asked.status is RunStatus.CANCELLED  # nothing of its own to compensate
        assert {k.status for k in rt.children(parent.run_id)} == {RunStatus.WAITING_EXTERNAL}
        rt.cancel(parent.run_id)  # a repeat passes the cancel on to the unsettled children
        rt.run_until_idle()
        kids = rt.children(parent.run_id)
    assert [k.status for k in kids] == [RunStatus.CANCELLED] * 2
    assert sorted(COMPENSATED) == ["alpha", "beta"]


@step(next=["combine"])
def booked(ctx: Context, s: Plan):  # type: ignore[no-untyped-def]
    ctx.effect(
        "book",
        target="ledger",
        operation="reserve",
        request={"topic": "parent"},
        execute=lambda req, key: {"ok": True},
        compensate=release_reservation,
    )
    for topic in s.topics:
        ctx.spawn(researcher, {"topic": topic, "mode": "hold"}, key=topic)
    return wait_for_children(on_done="combine")


booking = Workflow(
    "booking", state=Plan, steps=[booked, combine], compensators=[release_reservation]
)


def test_a_worker_that_finishes_a_parents_cancel_cancels_its_children_first(
    db_url: str, clock: FakeClock
) -> None:
    from perdure.runtime.admin.control import cancel_run

    COMPENSATED.clear()
    with Runtime(db_url, clock=clock, owner="w", workflows=[booking, researcher]) as rt:
        parent = rt.start(booking, {"topics": ["alpha", "beta"]})
        rt.run_until_idle()
        asked = cancel_run(rt.parts, "default", parent.run_id, "stop", None)
        assert asked.status is RunStatus.CANCEL_REQUESTED  # a worker must compensate
        rt.run_until_idle()  # the parent's cancel asks its children, then each compensates
        ended = rt.get(parent.run_id)
        kids = rt.children(parent.run_id)
    assert ended.status is RunStatus.CANCELLED
    assert [k.status for k in kids] == [RunStatus.CANCELLED] * 2
    assert sorted(COMPENSATED) == ["alpha", "beta", "parent"]
