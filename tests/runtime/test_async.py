"""``async def`` steps and async effect callables: they run on the runtime's event loop, many
runs at once, with the same records as plain steps."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field

import pytest

from perdure import (
    Context,
    FakeClock,
    RetryPolicy,
    RunStatus,
    Runtime,
    TransientError,
    Worker,
    Workflow,
    done,
    goto,
    step,
)
from perdure.core.errors import DefinitionError


@dataclass
class Chat:
    replies: list[str] = field(default_factory=list)


class Model:
    """A stand-in for an async model client: counts calls and how many were in flight at once."""

    def __init__(self) -> None:
        self.calls = 0
        self.in_flight = 0
        self.most_in_flight = 0
        self._lock = threading.Lock()

    async def complete(self, request: dict[str, str], key: str) -> str:
        with self._lock:
            self.calls += 1
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await asyncio.sleep(0.02)  # the model's latency, not a timer the test waits for
        finally:
            with self._lock:
                self.in_flight -= 1
        return f"answer to {request['q']}"


def chat_workflow(model: Model) -> Workflow[Chat]:
    @step(next=["reply"])
    async def ask(ctx: Context, s: Chat):  # type: ignore[no-untyped-def]
        answer = await ctx.aeffect(
            "model",
            target="model",
            operation="complete",
            request={"q": ctx.run_id[-4:]},
            execute=model.complete,
        )
        s.replies.append(answer)
        ctx.add_message("assistant", answer)
        return goto("reply")

    @step
    async def reply(ctx: Context, s: Chat):  # type: ignore[no-untyped-def]
        await asyncio.sleep(0)
        return done({"replies": s.replies, "messages": len(ctx.messages)})

    return Workflow("chat", state=Chat, steps=[ask, reply])


def test_an_async_step_awaits_an_async_effect_and_commits_like_a_plain_one(
    runtime: Runtime,
) -> None:
    model = Model()
    wf = chat_workflow(model)
    run = runtime.start(wf)
    runtime.run_until_idle()
    view = runtime.status(run.run_id)
    assert view.run.status is RunStatus.SUCCEEDED
    assert view.completed_steps == ["ask", "reply"]
    assert view.run.result == {"replies": [f"answer to {run.run_id[-4:]}"], "messages": 1}
    (effect,) = view.effects
    assert (effect.status, effect.attempts, model.calls) == ("confirmed", 1, 1)


def test_a_plain_step_may_pass_an_async_execute_to_ctx_effect(runtime: Runtime) -> None:
    model = Model()

    @step
    def ask(ctx: Context, s: Chat):  # type: ignore[no-untyped-def]
        answer = ctx.effect(
            "model", target="m", operation="c", request={"q": "x"}, execute=model.complete
        )
        return done({"answer": answer})

    run = runtime.start(Workflow("plain", state=Chat, steps=[ask]))
    runtime.run_until_idle()
    assert runtime.get(run.run_id).result == {"answer": "answer to x"}


def test_ctx_effect_in_an_async_step_is_refused_with_the_fix(runtime: Runtime) -> None:
    model = Model()

    @step
    async def ask(ctx: Context, s: Chat):  # type: ignore[no-untyped-def]
        ctx.effect("model", target="m", operation="c", request={}, execute=model.complete)
        return done()

    run = runtime.start(Workflow("blocking", state=Chat, steps=[ask]))
    runtime.run_until_idle()
    after = runtime.get(run.run_id)
    assert after.error is not None
    assert "aeffect" in after.error.message + str(after.error.evidence)
    assert model.calls == 0


def test_many_async_runs_share_one_event_loop_in_one_worker(db_url: str) -> None:
    model = Model()
    wf = chat_workflow(model)
    with Runtime(db_url, workflows=[wf]) as rt:
        ids = [rt.start(wf).run_id for _ in range(40)]
        assert Worker(rt, concurrency=40).run(until_idle=True) == 40
        for run_id in ids:
            view = rt.status(run_id)
            assert view.run.status is RunStatus.SUCCEEDED
            assert view.completed_steps == ["ask", "reply"]
    assert model.calls == 40
    assert model.most_in_flight > 1, "the model calls of different runs overlapped"


def test_a_generator_is_not_a_step() -> None:
    def chatter(ctx: Context, s: Chat):  # type: ignore[no-untyped-def]
        yield done()

    with pytest.raises(DefinitionError, match="generator"):
        step(chatter)


def test_a_lambda_cannot_be_a_compensator() -> None:
    @step
    def only(ctx: Context, s: Chat):  # type: ignore[no-untyped-def]
        return done()

    with pytest.raises(DefinitionError, match="lambda"):
        Workflow("w", state=Chat, steps=[only], compensators=[lambda r, k, x: None])


def test_an_effect_retry_and_an_escalation_leave_an_async_step_like_a_plain_one(
    runtime: Runtime, clock: FakeClock
) -> None:
    calls = {"n": 0}

    async def flaky(request: dict[str, int], key: str) -> dict[str, int]:
        calls["n"] += 1
        if calls["n"] == 1:
            raise TransientError("rate_limited", retry_after=5)
        return {"ok": request["a"]}

    @step
    async def pay(ctx: Context, s: Chat):  # type: ignore[no-untyped-def]
        result = await ctx.aeffect(
            "pay",
            target="p",
            operation="pay",
            request={"a": 1},
            execute=flaky,
            retry=RetryPolicy(max_attempts=3, jitter=False),
        )
        return done(result)

    run = runtime.start(Workflow("retrying", state=Chat, steps=[pay]))
    runtime.run_until_idle()
    waiting = runtime.get(run.run_id)
    assert waiting.status is RunStatus.RUNNING and waiting.wake_at is not None, "a durable wait"
    clock.advance(5)
    runtime.run_until_idle()
    assert runtime.get(run.run_id).result == {"ok": 1}
    assert calls["n"] == 2

    async def unknown(request: object, key: str) -> None:
        raise TimeoutError("no reply")

    @step
    async def send(ctx: Context, s: Chat):  # type: ignore[no-untyped-def]
        await ctx.aeffect("send", target="t", operation="o", request={}, execute=unknown)
        return done()

    other = runtime.start(Workflow("ambiguous", state=Chat, steps=[send]))
    runtime.run_until_idle()
    paused = runtime.get(other.run_id)
    assert paused.status is RunStatus.NEEDS_ATTENTION
    assert paused.error is not None and paused.error.reason == "ambiguous_effect"
