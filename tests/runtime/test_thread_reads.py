"""A step reads its thread once; after each boundary the next step reads only what joined the
thread since (its own messages, now numbered, and input that arrived meanwhile), and sees the
same thread as a full read."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from perdure import Context, FakeClock, Runtime, Workflow, done, goto, step
from perdure.core.model import RunStatus
from perdure.core.workflow import Outcome

OUTSIDE: list[Callable[[], Any]] = []
"""What a step does from outside the run while it runs (posts a message to its thread)."""


@dataclass
class Seen:
    turns: int = 0
    views: list[list[str]] = field(default_factory=list)


@step(next=["turn"])
def turn(ctx: Context, state: Seen) -> Outcome:
    state.views.append([f"{m.seq}:{m.role}:{m.content}" for m in ctx.messages])
    ctx.add_message("assistant", f"turn {state.turns}")
    if state.turns == 1:
        for post in OUTSIDE:
            post()
    state.turns += 1
    return goto("turn") if state.turns < 4 else done()


chat = Workflow("chat", state=Seen, steps=[turn])


def test_each_step_reads_only_what_joined_its_thread_since_the_last(
    db_url: str, clock: FakeClock
) -> None:
    with Runtime(db_url, clock=clock, workflows=[chat]) as rt:
        asked: list[int] = []
        full = rt.store.messages

        def counted(tenant_id: str, thread_id: str, *, after: int = 0) -> Any:
            asked.append(after)
            return full(tenant_id, thread_id, after=after)

        rt.store.messages = counted  # type: ignore[method-assign]
        run = rt.start(chat, Seen(), thread="conv")
        OUTSIDE[:] = [lambda: rt.threads.post("conv", "user", "from outside")]
        try:
            rt.run_until_idle()
        finally:
            OUTSIDE.clear()
        rt.store.messages = full  # type: ignore[method-assign]
        assert rt.get(run.run_id).status is RunStatus.SUCCEEDED
        final = [f"{m.seq}:{m.role}:{m.content}" for m in rt.store.messages("default", "conv")]
    state = rt_state(db_url, clock, run.run_id)
    assert state.views == [
        [],
        ["1:assistant:turn 0"],
        ["1:assistant:turn 0", "2:assistant:turn 1", "3:user:from outside"],
        ["1:assistant:turn 0", "2:assistant:turn 1", "3:user:from outside", "4:assistant:turn 2"],
    ]
    assert final == [*state.views[-1], "5:assistant:turn 3"]
    # the thread starts empty, so the second read asks from 0 too; then only what is new
    assert asked == [0, 0, 1, 3]


def rt_state(db_url: str, clock: FakeClock, run_id: str) -> Seen:
    with Runtime(db_url, clock=clock, workflows=[chat]) as rt:
        return chat.codec.from_fields(rt.store.load_state("default", run_id))
