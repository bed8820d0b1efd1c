"""Durable token streams through the Runtime, on each backend: steps (plain and async) write
through ``ctx.open_stream``; readers read, follow and reconnect."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field

import pytest

from perdure import (
    AsyncRuntime,
    Context,
    FakeClock,
    RetryPolicy,
    RunStatus,
    Runtime,
    TransientError,
    Workflow,
    done,
    step,
)
from perdure.core.errors import InvalidInputError, StreamClosedError
from perdure.core.streams import StreamEntry
from perdure.core.streams import StreamEventKind as K

WORDS = [f"w{i} " for i in range(100)]


@dataclass
class Reply:
    flushes: list[int] = field(default_factory=list)


def text_of(entries: list[StreamEntry]) -> str:
    return "".join(e.text for e in entries if e.kind is K.DELTA)


def streaming(batch: int = 32) -> Workflow[Reply]:
    @step
    def answer(ctx: Context, s: Reply):  # type: ignore[no-untyped-def]
        sink = ctx.open_stream(f"msg-{ctx.run_id}", batch=batch)
        for word in WORDS:
            sink.write(word)
        sink.finish()
        return done({"flushes": getattr(sink, "flushes", None)})

    return Workflow("streaming", state=Reply, steps=[answer])


def test_a_step_streams_in_batches_and_a_reader_gets_every_entry_in_order(
    runtime: Runtime,
) -> None:
    run = runtime.start(streaming(batch=32))
    runtime.run_until_idle()
    done_run = runtime.get(run.run_id)
    assert done_run.status is RunStatus.SUCCEEDED
    assert done_run.result == {"flushes": 4}, "3 full batches of 32, then the rest with finish"
    entries = list(runtime.threads.stream(f"msg-{run.run_id}"))
    assert [e.seq for e in entries] == list(range(1, 102))
    assert {e.attempt for e in entries} == {1}
    assert entries[-1].kind is K.FINISHED
    assert text_of(entries) == "".join(WORDS)


def test_an_async_step_streams_through_the_bridge_without_blocking_the_loop(
    runtime: Runtime,
) -> None:
    @step
    async def answer(ctx: Context, s: Reply):  # type: ignore[no-untyped-def]
        sink = ctx.open_stream("async-msg", batch=10)
        for word in WORDS[:25]:
            sink.write(word)
        sink.finish()
        return done({})

    run = runtime.start(Workflow("async_stream", state=Reply, steps=[answer]))
    runtime.run_until_idle()
    assert runtime.get(run.run_id).status is RunStatus.SUCCEEDED
    entries = list(runtime.threads.stream("async-msg"))
    assert text_of(entries) == "".join(WORDS[:25])
    assert [e.kind for e in entries][-1] is K.FINISHED and len(entries) == 26


def test_the_buffer_is_written_before_an_effect_runs(runtime: Runtime) -> None:
    seen: list[str] = []

    @step
    def answer(ctx: Context, s: Reply):  # type: ignore[no-untyped-def]
        sink = ctx.open_stream("m", batch=1000)
        sink.write("before ")
        ctx.effect(
            "send",
            target="mail",
            operation="send",
            request={},
            execute=lambda request, key: seen.append(text_of(list(runtime.threads.stream("m")))),
        )
        sink.write("after")
        return done({})  # never finished: the boundary still writes the rest

    run = runtime.start(Workflow("effect_stream", state=Reply, steps=[answer]))
    runtime.run_until_idle()
    assert runtime.get(run.run_id).status is RunStatus.SUCCEEDED
    assert seen == ["before "]
    assert text_of(list(runtime.threads.stream("m"))) == "before after"


def test_a_retried_step_supersedes_its_cut_draft(runtime: Runtime, clock: FakeClock) -> None:
    attempts: list[int] = []

    @step(retry=RetryPolicy(max_attempts=3, initial_delay=5, jitter=False))
    def answer(ctx: Context, s: Reply):  # type: ignore[no-untyped-def]
        sink = ctx.open_stream("m", batch=2)
        attempts.append(getattr(sink, "attempt", 0))
        sink.write("dra")
        sink.write("ft ")
        if len(attempts) == 1:
            raise TransientError("the model connection dropped")
        sink.write("final")
        sink.finish()
        return done({})

    run = runtime.start(Workflow("retry_stream", state=Reply, steps=[answer]))
    runtime.run_until_idle()
    first = list(runtime.threads.stream("m"))
    assert [(e.seq, e.attempt, str(e.kind)) for e in first] == [(1, 1, "delta"), (2, 1, "delta")]
    clock.advance(10)
    runtime.run_until_idle()
    assert runtime.get(run.run_id).status is RunStatus.SUCCEEDED
    rest = list(runtime.threads.stream("m", after=first[-1].seq))
    assert [(e.attempt, str(e.kind), e.text) for e in rest] == [
        (2, "superseded", ""),
        (2, "delta", "dra"),
        (2, "delta", "ft "),
        (2, "delta", "final"),
        (2, "finished", ""),
    ]
    assert [e.seq for e in rest] == [3, 4, 5, 6, 7]
    assert attempts == [1, 2]


def test_a_follower_sees_entries_as_they_are_written_and_ends_with_the_message(
    runtime: Runtime,
) -> None:
    got_first = threading.Event()
    received: list[StreamEntry] = []
    reader = runtime.threads.stream("live", follow=True, poll=0.01)

    def follow() -> None:
        for entry in reader:
            received.append(entry)
            if len(received) == 2:
                got_first.set()

    @step
    def answer(ctx: Context, s: Reply):  # type: ignore[no-untyped-def]
        sink = ctx.open_stream("live", batch=2)
        sink.write("a")
        sink.write("b")
        assert got_first.wait(30), "the follower saw the first batch while the step ran"
        sink.write("c")
        sink.finish()
        return done({})

    follower = threading.Thread(target=follow)
    follower.start()
    runtime.start(Workflow("live_stream", state=Reply, steps=[answer]))
    runtime.run_until_idle()
    follower.join(30)
    assert not follower.is_alive()
    assert [e.text for e in received] == ["a", "b", "c", ""]
    assert reader.last_seq == 4


def test_a_follower_of_a_run_that_ended_unfinished_stops(runtime: Runtime) -> None:
    @step
    def answer(ctx: Context, s: Reply):  # type: ignore[no-untyped-def]
        ctx.open_stream("cut").write("half")
        return done({})

    runtime.start(Workflow("cut_stream", state=Reply, steps=[answer]))
    runtime.run_until_idle()
    assert [e.text for e in runtime.threads.stream("cut", follow=True, poll=0.01)] == ["half"]


def test_a_finished_sink_takes_no_more_text_and_bad_readers_are_refused(
    runtime: Runtime,
) -> None:
    errors: list[str] = []

    @step
    def answer(ctx: Context, s: Reply):  # type: ignore[no-untyped-def]
        sink = ctx.open_stream("done")
        sink.finish()
        try:
            sink.write("more")
        except StreamClosedError as exc:
            errors.append(exc.code)
        return done({})

    runtime.start(Workflow("closed_stream", state=Reply, steps=[answer]))
    runtime.run_until_idle()
    assert errors == ["stream_closed"]
    with pytest.raises(InvalidInputError):
        runtime.threads.stream("done", after=-1)
    with pytest.raises(InvalidInputError):
        runtime.threads.stream("x\x00y")
    assert list(runtime.threads.stream("done", tenant="other")) == []


def test_a_worker_that_lost_the_run_mid_stream_writes_nothing_more(
    runtime: Runtime, clock: FakeClock, db_url: str
) -> None:
    taken: list[str] = []

    @step
    def answer(ctx: Context, s: Reply):  # type: ignore[no-untyped-def]
        sink = ctx.open_stream("m", batch=2)
        sink.write("a")
        sink.write("b")  # stored
        if not taken:
            clock.advance(
                runtime.services.heartbeat.lease.total_seconds() + 1
            )  # this worker stalls past its lease
            with Runtime(db_url, clock=clock, owner="other", workflows=[wf]) as other:
                claimed = other.claim_next()
                assert claimed is not None
                taken.append(claimed.owner or "")
        sink.write("c")
        sink.write("d")  # refused: the fence moved on
        sink.finish()
        return done({})

    wf = Workflow("lost_stream", state=Reply, steps=[answer])
    run = runtime.start(wf)
    runtime.run_until_idle()
    assert taken == ["other"]
    assert [e.text for e in runtime.threads.stream("m")] == ["a", "b"]
    assert runtime.get(run.run_id).status is RunStatus.RUNNING, "the new owner continues it"


def test_an_async_application_reads_a_stream_with_async_for(runtime: Runtime) -> None:
    run = runtime.start(streaming(batch=50))
    runtime.run_until_idle()
    art = AsyncRuntime(runtime)

    async def read(after: int) -> list[StreamEntry]:
        return [e async for e in art.threads.stream(f"msg-{run.run_id}", after=after, follow=True)]

    entries = asyncio.run(read(90))
    assert [e.seq for e in entries] == list(range(91, 102))
    assert entries[-1].kind is K.FINISHED


def test_a_superseded_sink_that_still_holds_text_hands_the_run_to_a_person(
    runtime: Runtime,
) -> None:
    @step
    def answer(ctx: Context, s: Reply):  # type: ignore[no-untyped-def]
        old = ctx.open_stream("twice", batch=100)
        old.write("stale")
        ctx.open_stream("twice").finish()
        return done({})  # the boundary writes old's buffer, which its stream refuses

    run = runtime.start(Workflow("twice_stream", state=Reply, steps=[answer]))
    runtime.run_until_idle()
    stopped = runtime.get(run.run_id)
    assert stopped.status is RunStatus.NEEDS_ATTENTION
    assert stopped.error is not None and stopped.error.reason == "stream_closed"
    assert [str(e.kind) for e in runtime.threads.stream("twice")] == ["superseded", "finished"]


def test_a_slow_model_s_deltas_are_written_once_they_waited_max_delay(
    runtime: Runtime, clock: FakeClock
) -> None:
    stored: list[int] = []

    @step
    def answer(ctx: Context, s: Reply):  # type: ignore[no-untyped-def]
        sink = ctx.open_stream("slow", batch=32, max_delay=0.5)
        sink.write("a")
        sink.write("b")
        stored.append(len(list(runtime.threads.stream("slow"))))  # both wait in the buffer
        clock.advance(0.5)  # the model takes its time
        sink.write("c")
        stored.append(len(list(runtime.threads.stream("slow"))))  # written with the late one
        sink.write("d")
        stored.append(len(list(runtime.threads.stream("slow"))))
        sink.finish()
        return done({})

    runtime.start(Workflow("slow_stream", state=Reply, steps=[answer]))
    runtime.run_until_idle()
    assert stored == [0, 3, 3]
    assert [e.text for e in runtime.threads.stream("slow")] == ["a", "b", "c", "d", ""]


def test_many_followers_of_one_reply_each_get_it_whole(runtime: Runtime) -> None:
    readers = [runtime.threads.stream("shared", follow=True, poll=0.01) for _ in range(20)]
    got: list[list[str]] = [[] for _ in readers]
    started = threading.Barrier(len(readers) + 1)

    def follow(i: int) -> None:
        started.wait()
        got[i].extend(e.text for e in readers[i])

    followers = [threading.Thread(target=follow, args=(i,)) for i in range(len(readers))]
    for t in followers:
        t.start()

    @step
    def answer(ctx: Context, s: Reply):  # type: ignore[no-untyped-def]
        started.wait()
        sink = ctx.open_stream("shared", batch=3)
        for word in WORDS[:10]:
            sink.write(word)
        sink.finish()
        return done({})

    runtime.start(Workflow("shared_stream", state=Reply, steps=[answer]))
    runtime.run_until_idle()
    for t in followers:
        t.join(30)
    assert all(not t.is_alive() for t in followers)
    assert got == [[*WORDS[:10], ""]] * len(readers)
