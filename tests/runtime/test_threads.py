"""One writer per thread through the Runtime, on each backend: queued starts, interrupts that
cancel at the next boundary (with compensations), rejects, and messages from outside a run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from perdure import Context, Message, RunStatus, Runtime, Workflow, done, goto, step
from perdure.core.errors import ThreadBusyError
from perdure.core.threads import Delivery, ThreadPolicy
from perdure.core.workflow import wait_for_signal


@dataclass
class Log:
    seen: list[str] = field(default_factory=list)


UNDONE: list[str] = []
DURING: list[Any] = []  # what a step does while it runs, set by each test


def undo_reserve(request: Any, key: str, result: Any) -> Any:
    UNDONE.append(key)
    return None


@step(next=["reply"])
def read(ctx: Context, s: Log):  # type: ignore[no-untyped-def]
    s.seen = [m.content for m in ctx.messages]
    ctx.effect(
        "reserve",
        target="stock",
        operation="reserve",
        request={"run": ctx.run_id},
        execute=lambda request, key: {"ok": True},
        compensate=undo_reserve,
    )
    for action in DURING:
        action(ctx)
    ctx.add_message("assistant", f"reply of {ctx.run_id}")
    return goto("reply")


@step(next=["reply"])
def reply(ctx: Context, s: Log):  # type: ignore[no-untyped-def]
    return done({"seen": s.seen, "after": [m.content for m in ctx.messages]})


chat = Workflow("chat", state=Log, steps=[read, reply], compensators=[undo_reserve])


@step(next=["go_on"])
def hold(ctx: Context, s: Log):  # type: ignore[no-untyped-def]
    return wait_for_signal("go", next="go_on")


@step
def go_on(ctx: Context, s: Log):  # type: ignore[no-untyped-def]
    return done({})


waiter = Workflow("waiter", state=Log, steps=[hold, go_on])


@pytest.fixture(autouse=True)
def _clean() -> None:
    UNDONE.clear()
    DURING.clear()


def test_a_second_start_on_a_busy_thread_runs_after_the_first_and_sees_its_reply(
    runtime: Runtime,
) -> None:
    first = runtime.start(chat, thread="t", messages=[Message("user", "one")])
    second = runtime.start(chat, thread="t", messages=[Message("user", "two")])
    assert runtime.threads.get("t").queued == (second.run_id,)
    assert runtime.run_until_idle() == 2
    assert runtime.get(first.run_id).result == {
        "seen": ["one"],
        "after": ["one", f"reply of {first.run_id}"],
    }
    assert runtime.get(second.run_id).result["seen"] == ["one", f"reply of {first.run_id}", "two"]


def test_reject_raises_a_typed_error_with_a_code(runtime: Runtime) -> None:
    runtime.start(waiter, thread="t")
    runtime.run_until_idle()
    with pytest.raises(ThreadBusyError) as refused:
        runtime.start(chat, thread="t", policy="reject")
    assert refused.value.one_line().startswith("error[thread_busy]: thread t of tenant default")
    assert len(runtime.runs(thread="t")) == 1
    runtime.threads.set_policy("t", ThreadPolicy.REJECT)
    with pytest.raises(ThreadBusyError):
        runtime.start(chat, thread="t")


def test_interrupting_a_waiting_run_cancels_it_at_once_then_runs_the_new_one(
    runtime: Runtime,
) -> None:
    first = runtime.start(waiter, thread="t")
    runtime.run_until_idle()
    assert runtime.get(first.run_id).status is RunStatus.WAITING_EXTERNAL
    second = runtime.start(chat, thread="t", policy=ThreadPolicy.INTERRUPT)
    assert runtime.get(first.run_id).status is RunStatus.CANCELLED
    runtime.run_until_idle()
    assert runtime.get(second.run_id).status is RunStatus.SUCCEEDED


def test_interrupting_a_running_step_cancels_at_its_boundary_with_compensations(
    runtime: Runtime,
) -> None:
    started: list[str] = []
    DURING.append(
        lambda ctx: (
            started.append(runtime.start(chat, thread="t", policy="interrupt").run_id)
            if not started
            else None
        )
    )
    first = runtime.start(chat, thread="t")
    runtime.run_until_idle()
    run = runtime.get(first.run_id)
    assert run.status is RunStatus.CANCELLED
    assert run.steps_done == 0, "the interrupted step was not committed"
    assert [k.split("/")[2:4] for k in UNDONE] == [[first.run_id, "1.read"]]
    later = runtime.get(started[0])
    assert later.status is RunStatus.SUCCEEDED
    assert f"reply of {first.run_id}" not in later.result["seen"]


def test_a_message_from_outside_joins_the_thread_at_the_next_boundary(runtime: Runtime) -> None:
    deliveries: list[Delivery] = []
    DURING.append(lambda ctx: deliveries.append(runtime.threads.post("t", "user", "by the way")))
    run = runtime.start(chat, thread="t", messages=[Message("user", "hi")])
    runtime.run_until_idle()
    assert deliveries == [Delivery.QUEUED]
    result = runtime.get(run.run_id).result
    assert result["seen"] == ["hi"], "not visible in the middle of the step"
    assert result["after"] == ["hi", f"reply of {run.run_id}", "by the way"]
    assert runtime.threads.post("t", "user", "later") is Delivery.APPENDED
