"""``ctx.model_call``: recorded, replayed without a second call, charged to the budget, stopped
by an exhausted budget before the call, retried on a rate limit, streamed; plain and async
steps; on each backend."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from perdure import (
    Budget,
    Context,
    FakeClock,
    RetryPolicy,
    RunStatus,
    Runtime,
    TransientError,
    Workflow,
    done,
    goto,
    step,
)
from perdure.core.chat import Delta, ModelRequest, ModelResponse, Pricing
from perdure.core.effects import EffectStatus
from perdure.core.model import Message
from perdure.providers.scripted import Scripted, ScriptedModel
from perdure.runtime.step.model_calls import reply_message_id

PRICE = Pricing(input_per_million=1_000_000, output_per_million=2_000_000)  # 1 and 2 per token


@dataclass
class S:
    answers: list[str] = field(default_factory=list)
    tries: int = 0


def model(*texts: str) -> ScriptedModel:
    return ScriptedModel("scripted-1", [Scripted(t) for t in texts], pricing=PRICE)


def test_a_reexecuted_step_gets_the_recorded_reply_and_the_model_is_called_once(
    runtime: Runtime, clock: FakeClock
) -> None:
    llm = model("hello there")
    failures = [TransientError("rate_limited", retry_after=5)]

    @step
    def ask(ctx: Context, s: S):  # type: ignore[no-untyped-def]
        reply = ctx.model_call(llm, [Message("user", "hi")], params={"temperature": 0})
        s.answers.append(reply.text)

        def flaky(request: Any, key: str) -> str:
            if failures:
                raise failures.pop()
            return "sent"

        retry = RetryPolicy()
        ctx.effect("notify", target="chat", operation="post", request=1, execute=flaky, retry=retry)
        return done({"answer": reply.text, "replayed": reply.replayed, "cost": reply.cost})

    wf = Workflow("ask", state=S, steps=[ask], budget=Budget(cost=1000))
    run = runtime.start(wf)
    runtime.run_until_idle()
    assert llm.calls == 1
    clock.advance(5)
    runtime.run_until_idle()
    view = runtime.get(run.run_id)
    assert view.status is RunStatus.SUCCEEDED
    assert llm.calls == 1
    assert view.result == {"answer": "hello there", "replayed": True, "cost": 5 + 2 * 7}
    records = [e for e in runtime.effects.list(run_id=run.run_id) if e.target == "model"]
    assert len(records) == 1
    record = records[0]
    assert record.operation == "scripted-1"
    assert record.status is EffectStatus.CONFIRMED
    assert isinstance(record.request, dict)
    assert record.request["params"] == {"temperature": 0}
    assert isinstance(record.result, dict)
    assert record.result["usage"] == {"input_tokens": 4 + 1, "output_tokens": 4 + 3}
    assert record.result["message_id"] == reply_message_id(record.key)
    stored = runtime.store.get_run("default", run.run_id)
    assert stored.budget is not None
    assert stored.budget.used.cost == 5 + 2 * 7
    assert stored.budget.used.tokens == 12


def test_an_exhausted_budget_stops_the_step_before_the_next_model_call(runtime: Runtime) -> None:
    llm = model("one two three four five six seven eight")

    @step
    def ask(ctx: Context, s: S):  # type: ignore[no-untyped-def]
        ctx.model_call(llm, [Message("user", "first")])
        ctx.model_call(llm, [Message("user", "second")])
        return done(None)

    wf = Workflow("ask", state=S, steps=[ask], budget=Budget(tokens=10))
    run = runtime.start(wf)
    runtime.run_until_idle()
    view = runtime.get(run.run_id)
    assert view.status is RunStatus.NEEDS_ATTENTION
    assert view.error is not None and view.error.reason == "budget_exhausted"
    assert llm.calls == 1


def test_a_rate_limited_call_waits_its_retry_after_durably_then_succeeds(
    runtime: Runtime, clock: FakeClock
) -> None:
    class RateLimited(Exception):
        status_code = 429
        headers = {"retry-after": "7"}  # noqa: RUF012

    class Flaky:
        name = "flaky"
        calls = 0

        def complete(self, request: ModelRequest) -> ModelResponse:
            self.calls += 1
            if self.calls == 1:
                raise RateLimited("slow down")
            return ModelResponse(Message("assistant", "ok"))

        def stream(self, request: ModelRequest) -> list[Delta]:
            return []

    llm = Flaky()

    @step
    def ask(ctx: Context, s: S):  # type: ignore[no-untyped-def]
        return done(ctx.model_call(llm, [Message("user", "hi")]).text)

    run = runtime.start(Workflow("ask", state=S, steps=[ask]))
    runtime.run_until_idle()
    stored = runtime.store.get_run("default", run.run_id)
    assert stored.wake_at == clock.now() + timedelta(seconds=7)
    clock.advance(7)
    runtime.run_until_idle()
    assert runtime.get(run.run_id).result == "ok"
    assert llm.calls == 2


def test_a_streamed_call_yields_deltas_and_its_reply_has_an_id_fixed_before_the_call(
    runtime: Runtime,
) -> None:
    llm = model("a streamed answer in five")
    seen: list[str] = []

    @step
    def ask(ctx: Context, s: S):  # type: ignore[no-untyped-def]
        stream = ctx.model_call(llm, [Message("user", "hi")], stream=True)
        seen.extend(d.text for d in stream if d.text)
        reply = stream.reply
        return done({"text": reply.text, "id": reply.message_id, "key": reply.key})

    run = runtime.start(Workflow("ask", state=S, steps=[ask]))
    runtime.run_until_idle()
    result = runtime.get(run.run_id).result
    assert isinstance(result, dict)
    assert seen == ["a ", "streamed ", "answer ", "in ", "five"]
    assert result["text"] == "a streamed answer in five"
    assert result["id"] == reply_message_id(str(result["key"]))


def test_a_streamed_reply_is_written_to_its_durable_stream_and_read_back_whole(
    runtime: Runtime,
) -> None:
    llm = model("a streamed answer in five")

    @step
    def ask(ctx: Context, s: S):  # type: ignore[no-untyped-def]
        stream = ctx.model_call(llm, [Message("user", "hi")], stream=True)
        for _ in stream:
            pass
        return done(stream.reply.message_id)

    run = runtime.start(Workflow("ask", state=S, steps=[ask]))
    runtime.run_until_idle()
    message_id = runtime.get(run.run_id).result
    assert isinstance(message_id, str)
    entries = list(runtime.threads.stream(message_id))
    kinds = [str(e.kind) for e in entries]
    assert kinds == ["delta"] * 5 + ["finished"]
    assert "".join(e.text for e in entries) == "a streamed answer in five"
    assert [e.seq for e in entries] == list(range(1, 7))
    later = list(runtime.threads.stream(message_id, after=entries[2].seq))
    assert later == entries[3:], "a reader resuming after a seq sees the rest exactly once"


def test_async_steps_await_model_calls_and_stream_them(runtime: Runtime) -> None:
    llm = model("first reply", "second reply here")

    @step(next=["more"])
    async def ask(ctx: Context, s: S):  # type: ignore[no-untyped-def]
        reply = await ctx.amodel_call(llm, [Message("user", "hi")])
        s.answers.append(reply.text)
        return goto("more")

    @step
    async def more(ctx: Context, s: S):  # type: ignore[no-untyped-def]
        stream = ctx.amodel_call(llm, [Message("user", "again")], stream=True)
        pieces = [d.text async for d in stream if d.text]
        s.answers.append(stream.reply.text)
        return done({"answers": s.answers, "pieces": pieces})

    run = runtime.start(Workflow("ask", state=S, steps=[ask, more]))
    runtime.run_until_idle()
    assert runtime.get(run.run_id).result == {
        "answers": ["first reply", "second reply here"],
        "pieces": ["second ", "reply ", "here"],
    }
    assert llm.calls == 2


def test_a_retired_model_in_the_release_is_replaced_in_the_request(runtime: Runtime) -> None:
    llm = model("fine")

    @step
    def ask(ctx: Context, s: S):  # type: ignore[no-untyped-def]
        return done(ctx.model_call(llm, [Message("user", "hi")]).text)

    wf = Workflow("ask", state=S, steps=[ask], retired={"model": {"scripted-1": "scripted-2"}})
    run = runtime.start(wf, release={"model": "scripted-1"})
    runtime.run_until_idle()
    (record,) = runtime.effects.list(run_id=run.run_id)
    assert record.operation == "scripted-2"
    assert runtime.store.get_run("default", run.run_id).release.model == "scripted-1"


def test_a_workflow_model_goes_into_the_release_manifest(runtime: Runtime) -> None:
    @step
    def ask(ctx: Context, s: S):  # type: ignore[no-untyped-def]
        return done(ctx.release.model)

    run = runtime.start(Workflow("ask", state=S, steps=[ask], model="scripted-1"))
    runtime.run_until_idle()
    assert runtime.get(run.run_id).result == "scripted-1"
    assert runtime.store.get_run("default", run.run_id).release.model == "scripted-1"


def test_a_step_that_leaves_the_stream_early_still_gets_the_whole_reply_recorded(
    runtime: Runtime,
) -> None:
    llm = model("one two three four")

    @step
    def ask(ctx: Context, s: S):  # type: ignore[no-untyped-def]
        stream = ctx.model_call(llm, [Message("user", "hi")], stream=True)
        for delta in stream:
            if delta.text:
                break
        return done(stream.reply.text)

    run = runtime.start(Workflow("ask", state=S, steps=[ask]))
    runtime.run_until_idle()
    assert runtime.get(run.run_id).result == "one two three four"
    (record,) = runtime.effects.list(run_id=run.run_id)
    assert record.status is EffectStatus.CONFIRMED
