"""``ctx.context``: a summary of what fell out of the window is a recorded model call, appended
to the thread with the range it covers; a re-executed step does not summarize again."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from perdure import (
    Context,
    FakeClock,
    Message,
    RetryPolicy,
    Runtime,
    TransientError,
    Workflow,
    done,
    goto,
    step,
)
from perdure.core.window import summary_range
from perdure.providers.scripted import Scripted, ScriptedModel


@dataclass
class S:
    pass


def test_older_messages_are_summarized_once_and_the_summary_is_used_next_time(
    runtime: Runtime, clock: FakeClock
) -> None:
    summarizer = ScriptedModel("summarizer", [Scripted("they greeted and asked twice")])
    fail_once = [TransientError("timeout")]
    seen: list[list[str]] = []

    @step(next=["again"])
    def first(ctx: Context, s: S):  # type: ignore[no-untyped-def]
        window = ctx.context(recent=2, summarize=summarizer)
        seen.append([m.content for m in window])

        def flaky(request: Any, key: str) -> str:
            if fail_once:
                raise fail_once.pop()
            return "ok"

        ctx.effect("x", target="x", operation="x", request=1, execute=flaky, retry=RetryPolicy())
        ctx.add_message("assistant", "noted")
        return goto("again")

    @step
    def again(ctx: Context, s: S):  # type: ignore[no-untyped-def]
        before = summarizer.calls
        return done([before, *(m.content for m in ctx.context(recent=2, summarize=summarizer))])

    history = [
        Message("system", "prompt"),
        Message("user", "hello"),
        Message("assistant", "hi"),
        Message("user", "what now?"),
        Message("user", "and then?"),
    ]
    run = runtime.start(Workflow("ctx", state=S, steps=[first, again]), messages=history)
    runtime.run_until_idle()
    clock.advance(60)
    runtime.run_until_idle()
    view = runtime.get(run.run_id)
    summary = "Summary of messages 2 to 3: they greeted and asked twice"
    assert seen[-1] == ["prompt", summary, "what now?", "and then?"]
    later = "Summary of messages 2 to 4: they greeted and asked twice"
    assert view.result == [1, "prompt", later, "and then?", "noted"], (
        "the re-executed first step got the recorded summary; the next step summarized what "
        "fell out of its window since, with the earlier summary"
    )
    assert summarizer.calls == 2
    thread = runtime.store.messages("default", view.thread_id)
    stored = [m for m in thread if summary_range(m) is not None]
    assert [summary_range(m) for m in stored] == [(2, 3), (2, 4)]
    assert stored[0].content == summary


def test_an_async_step_rebuilds_its_context_with_a_recorded_summary(runtime: Runtime) -> None:
    summarizer = ScriptedModel("summarizer", [Scripted("short")])

    @step
    async def first(ctx: Context, s: S):  # type: ignore[no-untyped-def]
        window = await ctx.acontext(recent=1, summarize=summarizer)
        return done([m.content for m in window])

    history = [Message("user", "a"), Message("assistant", "b"), Message("user", "c")]
    run = runtime.start(Workflow("actx", state=S, steps=[first]), messages=history)
    runtime.run_until_idle()
    assert runtime.get(run.run_id).result == ["Summary of messages 1 to 2: short", "c"]
    (record,) = runtime.effects.list(run_id=run.run_id)
    assert (record.target, record.name) == ("model", "context.summary.1-2")
