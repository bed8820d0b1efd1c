"""Parallel branches inside one step, on each backend: the calls really overlap (a barrier only
two concurrent calls can pass), results come back in branch-id order, each branch has its own
effect key, and a step that runs again replays confirmed branches without calling them."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field
from typing import Any

import pytest

from perdure import Context, FakeClock, RunStatus, Runtime, Workflow, done, step
from perdure.core.effects import EffectStatus
from perdure.core.retry import RetryPolicy
from perdure.runtime.step.parallel import EffectCall

CALLS: list[str] = []
BARRIER = threading.Barrier(2, timeout=30)


@dataclass
class Fan:
    tries: int = 0
    order: list[str] = field(default_factory=list)


def lookup(request: Any, key: str) -> Any:
    BARRIER.wait()  # passes only when both branches are in their call at once
    CALLS.append(request["q"])
    return {"answer": request["q"].upper()}


class Flaky(Exception):
    """Raised once after the branches, so the step runs again."""


@step(retry=RetryPolicy(max_attempts=2, initial_delay=1, jitter=False, retry_on=(Flaky,)))
def fan(ctx: Context, s: Fan):  # type: ignore[no-untyped-def]
    results = ctx.parallel(
        {
            "b": EffectCall("lookup", "search", "get", {"q": "bee"}, lookup),
            "a": EffectCall("lookup", "search", "get", {"q": "ant"}, lookup),
        }
    )
    if ctx.signal("again") is None and not CALLS_SEEN.is_set():
        CALLS_SEEN.set()
        raise Flaky("once")
    return done({"order": list(results), "answers": [r["answer"] for r in results.values()]})


CALLS_SEEN = threading.Event()
fan_flow = Workflow("fan", state=Fan, steps=[fan])


def test_two_branches_overlap_and_a_rerun_step_replays_them_without_calling_again(
    db_url: str, clock: FakeClock
) -> None:
    CALLS.clear()
    CALLS_SEEN.clear()
    BARRIER.reset()
    with Runtime(db_url, clock=clock, owner="w", workflows=[fan_flow]) as rt:
        run = rt.start(fan_flow)
        rt.run_until_idle()
        clock.advance(5)
        rt.run_until_idle()
        ended = rt.get(run.run_id)
        effects = rt.effects.list(run_id=run.run_id)
    assert ended.status is RunStatus.SUCCEEDED, ended.error
    assert ended.result == {"order": ["a", "b"], "answers": ["ANT", "BEE"]}
    assert sorted(CALLS) == ["ant", "bee"], "each branch was called once"
    assert sorted(e.name for e in effects) == ["a/lookup", "b/lookup"]
    assert all(e.status is EffectStatus.CONFIRMED and e.attempts == 1 for e in effects)


async def ping(request: Any, key: str) -> Any:
    mine, other = EVENTS[request["me"]], EVENTS[request["other"]]
    mine.set()
    await asyncio.wait_for(other.wait(), timeout=30)  # only if both run as tasks at once
    return request["me"]


EVENTS: dict[str, asyncio.Event] = {}


@step
async def agather(ctx: Context, s: Fan):  # type: ignore[no-untyped-def]
    EVENTS.clear()
    EVENTS.update(x=asyncio.Event(), y=asyncio.Event())
    results = await ctx.gather(
        {
            "y": EffectCall("ping", "peer", "ping", {"me": "y", "other": "x"}, ping),
            "x": EffectCall("ping", "peer", "ping", {"me": "x", "other": "y"}, ping),
        }
    )
    return done(list(results.values()))


gather_flow = Workflow("agather", state=Fan, steps=[agather])


def test_async_branches_run_as_tasks_at_once_and_combine_in_branch_order(
    db_url: str, clock: FakeClock
) -> None:
    with Runtime(db_url, clock=clock, owner="w", workflows=[gather_flow]) as rt:
        run = rt.start(gather_flow)
        rt.run_until_idle()
        ended = rt.get(run.run_id)
    assert ended.status is RunStatus.SUCCEEDED, ended.error
    assert ended.result == ["x", "y"]


def refuse(request: Any, key: str) -> Any:
    from perdure.core.effects import PermanentError

    if request["q"] == "bad":
        raise PermanentError("invalid_request", "no such query")
    return request["q"]


@step
def mixed(ctx: Context, s: Fan):  # type: ignore[no-untyped-def]
    ctx.parallel(
        {
            "ok": EffectCall("q", "search", "get", {"q": "fine"}, refuse),
            "no": EffectCall("q", "search", "get", {"q": "bad"}, refuse),
        }
    )
    return done()


def test_a_failing_branch_lets_the_others_record_their_outcome_then_fails_the_step(
    db_url: str, clock: FakeClock
) -> None:
    wf = Workflow("mixed", state=Fan, steps=[mixed])
    with Runtime(db_url, clock=clock, owner="w", workflows=[wf]) as rt:
        run = rt.start(wf)
        rt.run_until_idle()
        ended = rt.get(run.run_id)
        effects = {e.name: e.status for e in rt.effects.list(run_id=run.run_id)}
    assert ended.status is not RunStatus.SUCCEEDED
    assert effects == {"ok/q": EffectStatus.CONFIRMED, "no/q": EffectStatus.REJECTED}


def test_model_call_branches_overlap_and_replay_by_branch_id(db_url: str, clock: FakeClock) -> None:
    from perdure import Message
    from perdure.providers.scripted import Scripted, ScriptedModel
    from perdure.runtime.step.parallel import ModelCall

    meeting = threading.Barrier(2, timeout=30)

    def script(request: Any) -> Scripted:
        meeting.wait()  # both calls are in flight at once
        return Scripted(text=f"re: {request.messages[-1].content}")

    model = ScriptedModel("m-1", script)

    @step
    def ask(ctx: Context, s: Fan):  # type: ignore[no-untyped-def]
        replies = ctx.parallel(
            {
                "q2": ModelCall(model, [Message("user", "two")]),
                "q1": ModelCall(model, [Message("user", "one")]),
            }
        )
        return done({bid: r.text for bid, r in replies.items()})

    wf = Workflow("ask", state=Fan, steps=[ask])
    with Runtime(db_url, clock=clock, owner="w", workflows=[wf]) as rt:
        run = rt.start(wf)
        rt.run_until_idle()
        ended = rt.get(run.run_id)
        names = sorted(e.name for e in rt.effects.list(run_id=run.run_id))
    assert ended.status is RunStatus.SUCCEEDED, ended.error
    assert ended.result == {"q1": "re: one", "q2": "re: two"}
    assert list(ended.result) == ["q1", "q2"]
    assert names == ["q1/model", "q2/model"] and model.calls == 2


@dataclass
class Tally:
    items: list[str] = field(default_factory=list)
    best: int = 0
    tags: dict[str, int] = field(default_factory=dict)


ORDERS = ["abc", "acb", "bac", "bca", "cab", "cba"]


@pytest.mark.parametrize("order", ORDERS)
def test_any_order_of_branch_completions_gives_the_same_state(
    db_url: str, clock: FakeClock, order: str
) -> None:
    from perdure.core.reducers import append, maximum, merge

    turn = {b: threading.Event() for b in "abc"}
    returned = {b: threading.Event() for b in "abc"}
    finished: list[str] = []

    def work(request: Any, key: str) -> Any:
        bid = request["b"]
        assert turn[bid].wait(timeout=30)
        finished.append(bid)
        returned[bid].set()
        return {"items": [bid], "best": request["v"], "tags": {"k": request["v"], bid: 1}}

    def conduct() -> None:
        for bid in order:  # the calls end in this order
            turn[bid].set()
            assert returned[bid].wait(timeout=30)

    @step
    def tally(ctx: Context, s: Tally):  # type: ignore[no-untyped-def]
        values = {"a": 5, "b": 9, "c": 2}
        conductor = threading.Thread(target=conduct)
        conductor.start()
        found = ctx.parallel(
            {b: EffectCall("w", "t", "op", {"b": b, "v": values[b]}, work) for b in "cab"}
        )
        conductor.join()
        out = ctx.merge(s, found)
        return done({"items": out.items, "best": out.best, "tags": out.tags})

    wf = Workflow(
        "tally",
        state=Tally,
        steps=[tally],
        reducers={"items": append, "best": maximum, "tags": merge},
    )
    with Runtime(db_url, clock=clock, owner="w", workflows=[wf]) as rt:
        run = rt.start(wf)
        rt.run_until_idle()
        ended = rt.get(run.run_id)
    assert "".join(finished) == order
    assert ended.status is RunStatus.SUCCEEDED, ended.error
    assert ended.result == {
        "items": ["a", "b", "c"],
        "best": 9,
        "tags": {"k": 2, "a": 1, "b": 1, "c": 1},
    }
