"""A step that raises never strands its run: transient failures are retried by the step's
policy (Retry-After honoured), anything else hands the run to a person, who resumes it after a
fix at the same step."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from perdure import Context, FakeClock, RetryPolicy, RunStatus, Runtime, Workflow, done, goto, step


@dataclass
class Job:
    tries: int = 0


class RateLimited(Exception):
    """Shaped like an SDK's error: an HTTP status and the response's headers."""

    def __init__(self, retry_after: str) -> None:
        super().__init__("429 Too Many Requests")
        self.status_code = 429
        self.headers = {"retry-after": retry_after}


class Flaky:
    """Raises the queued exceptions one per call, then answers."""

    def __init__(self, *failures: Exception) -> None:
        self.failures = list(failures)
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        if self.failures:
            raise self.failures.pop(0)
        return "ok"


def one_step(call: Flaky, retry: RetryPolicy | None = None) -> Workflow[Job]:
    @step(retry=retry)
    def work(ctx: Context, s: Job):  # type: ignore[no-untyped-def]
        s.tries += 1
        return done({"answer": call(), "tries": s.tries})

    return Workflow("work", state=Job, steps=[work])


def test_a_timeout_twice_then_success_is_retried_and_succeeds(
    runtime: Runtime, clock: FakeClock
) -> None:
    call = Flaky(TimeoutError("read timed out"), TimeoutError("read timed out"))
    run = runtime.start(one_step(call, RetryPolicy(max_attempts=5, initial_delay=2, jitter=False)))
    for _ in range(3):
        runtime.run_until_idle()
        clock.advance(10)
    after = runtime.get(run.run_id)
    assert after.status is RunStatus.SUCCEEDED
    assert after.result == {"answer": "ok", "tries": 1}, "a failed attempt commits nothing"
    assert call.calls == 3


def test_a_429_waits_at_least_its_retry_after(runtime: Runtime, clock: FakeClock) -> None:
    call = Flaky(RateLimited("120"))
    policy = RetryPolicy(max_attempts=3, initial_delay=1, max_delay=5, jitter=False)
    run = runtime.start(one_step(call, policy))
    runtime.run_until_idle()
    waiting = runtime.get(run.run_id)
    assert waiting.status is RunStatus.RUNNING and waiting.wake_at is not None
    assert waiting.wake_at - clock.now() >= timedelta(seconds=120), "never before Retry-After"
    clock.advance(119)
    runtime.run_until_idle()
    assert call.calls == 1, "not retried early"
    clock.advance(1)
    runtime.run_until_idle()
    assert runtime.get(run.run_id).status is RunStatus.SUCCEEDED
    assert call.calls == 2


def test_a_client_error_is_not_retried_and_needs_a_person(runtime: Runtime) -> None:
    class BadRequest(Exception):
        status_code = 400

    call = Flaky(BadRequest("400 Bad Request"))
    run = runtime.start(one_step(call, RetryPolicy(max_attempts=5)))
    runtime.run_until_idle()
    after = runtime.get(run.run_id)
    assert after.status is RunStatus.NEEDS_ATTENTION
    assert after.error is not None
    assert after.error.evidence["error"]["status"] == 400
    assert call.calls == 1


def test_retry_on_retries_a_class_the_classifier_does_not_know(
    runtime: Runtime, clock: FakeClock
) -> None:
    class Overloaded(Exception):
        pass

    call = Flaky(Overloaded("busy"))
    policy = RetryPolicy(initial_delay=1, jitter=False, retry_on=(Overloaded,))
    run = runtime.start(one_step(call, policy))
    runtime.run_until_idle()
    clock.advance(1)
    runtime.run_until_idle()
    assert runtime.get(run.run_id).status is RunStatus.SUCCEEDED


def test_exhausted_retries_need_a_person_unless_the_policy_says_fail(
    runtime: Runtime, clock: FakeClock
) -> None:
    for on_exhausted, status in (
        ("needs_attention", RunStatus.NEEDS_ATTENTION),
        ("fail", RunStatus.FAILED),
    ):
        call = Flaky(*[ConnectionResetError("reset") for _ in range(3)])
        policy = RetryPolicy(
            max_attempts=2, initial_delay=1, jitter=False, on_exhausted=on_exhausted
        )
        run = runtime.start(one_step(call, policy))
        runtime.run_until_idle()
        clock.advance(1)
        runtime.run_until_idle()
        after = runtime.get(run.run_id)
        assert after.status is status
        assert after.error is not None and after.error.reason == "retries_exhausted"
        assert after.error.evidence["attempts"] == 2


BROKEN = {"yes": True}


@step(next=["finish"])
def prepare(ctx: Context, s: Job):  # type: ignore[no-untyped-def]
    s.tries += 1
    return goto("finish")


@step
def finish(ctx: Context, s: Job):  # type: ignore[no-untyped-def]
    if BROKEN["yes"]:
        raise ValueError("the parser cannot read the reply")
    return done({"prepared": s.tries})


def test_a_bug_pauses_the_run_and_resume_after_the_fix_continues_at_that_step(
    runtime: Runtime,
) -> None:
    BROKEN["yes"] = True
    wf = Workflow("buggy", state=Job, steps=[prepare, finish])
    run = runtime.start(wf)
    runtime.run_until_idle()
    paused = runtime.get(run.run_id)
    assert paused.status is RunStatus.NEEDS_ATTENTION
    assert paused.error is not None
    assert (paused.error.step, paused.error.resume_at, paused.error.completed_steps) == (
        "finish",
        "finish",
        1,
    )
    BROKEN["yes"] = False  # the fix is deployed
    resumed = runtime.resume(run.run_id, by="ops")
    assert resumed.status is RunStatus.SUCCEEDED
    assert resumed.result == {"prepared": 1}, "prepare was not run again"
    assert runtime.status(run.run_id).completed_steps == ["prepare", "finish"]


def test_an_undeclared_goto_needs_a_person_instead_of_failing(runtime: Runtime) -> None:
    @step(next=["b"])
    def a(ctx: Context, s: Job):  # type: ignore[no-untyped-def]
        return goto("c")

    @step
    def b(ctx: Context, s: Job):  # type: ignore[no-untyped-def]
        return done()

    @step
    def c(ctx: Context, s: Job):  # type: ignore[no-untyped-def]
        return done()

    run = runtime.start(Workflow("typo", state=Job, steps=[a, b, c]))
    runtime.run_until_idle()
    after = runtime.get(run.run_id)
    assert after.status is RunStatus.NEEDS_ATTENTION
    assert after.error is not None and after.error.reason == "undeclared_transition"
