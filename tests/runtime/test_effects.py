"""The effect protocol in one process, on each backend, with an injected clock.

Crash windows are exercised with real processes in tests/crash/; here the provider is an object
that counts the calls it receives and applies each one (it does not deduplicate).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from perdure import Context, FakeClock, RunStatus, Runtime, Workflow, done, fail, goto, step
from perdure.core.effects import (
    BudgetExhaustedError,
    EffectRejectedError,
    EffectResult,
    EffectStatus,
    PermanentError,
    Reconciled,
    TransientError,
    UnknownOutcomeError,
)
from perdure.core.errors import DefinitionError, EffectStateError
from perdure.core.retry import RetryPolicy


@dataclass
class Provider:
    """An external system that applies every call it receives."""

    applied: list[tuple[str, Any]] = field(default_factory=list)
    failures: list[Exception] = field(default_factory=list)

    def call(self, request: Any, key: str) -> Any:
        if self.failures:
            raise self.failures.pop(0)
        self.applied.append((key, request))
        return EffectResult(
            {"ok": True, "n": len(self.applied)}, receipt=f"rcpt-{len(self.applied)}"
        )

    def lookup(self, request: Any, key: str) -> Reconciled:
        for k, _ in self.applied:
            if k == key:
                return Reconciled.confirmed({"ok": True}, receipt="found")
        return Reconciled.not_found()


@dataclass
class S:
    amount: int = 10
    results: list[Any] = field(default_factory=list)


def one_effect(provider: Provider, **kw: Any) -> Workflow[S]:
    @step
    def pay(ctx: Context, s: S):  # type: ignore[no-untyped-def]
        s.results.append(
            ctx.effect(
                "charge",
                target="payments",
                operation="charge",
                request={"amount": s.amount},
                execute=provider.call,
                **kw,
            )
        )
        return done({"results": s.results})

    return Workflow("pay", state=S, steps=[pay])


def run_once(rt: Runtime, wf: Workflow[S]) -> str:
    run = rt.start(wf)
    rt.run_until_idle()
    return run.run_id


def test_an_effect_runs_once_and_is_recorded_with_its_receipt(runtime: Runtime) -> None:
    provider = Provider()
    run_id = run_once(runtime, one_effect(provider))
    assert runtime.get(run_id).status is RunStatus.SUCCEEDED
    (effect,) = runtime.effects.list(run_id=run_id)
    assert effect.key == f"default/pay/{run_id}/1.pay/charge"
    assert (effect.status, effect.attempts, effect.receipt) == ("confirmed", 1, "rcpt-1")
    assert effect.result == {"ok": True, "n": 1}
    assert provider.applied == [(effect.key, {"amount": 10})]


def test_a_transient_error_waits_durably_then_retries_with_the_same_key(
    runtime: Runtime, clock: FakeClock
) -> None:
    provider = Provider(failures=[TransientError("rate_limited", retry_after=7)])
    wf = one_effect(provider, retry=RetryPolicy(max_attempts=3, jitter=False))
    run_id = run_once(runtime, wf)
    waiting = runtime.get(run_id)
    assert waiting.status is RunStatus.RUNNING
    assert waiting.owner is None, "a waiting run holds no lease"
    assert waiting.wake_at == clock.now().replace() + __import__("datetime").timedelta(seconds=7)
    assert runtime.run_until_idle() == 0, "not claimable before the delay is over"
    clock.advance(7)
    assert runtime.run_until_idle() == 1
    assert runtime.get(run_id).status is RunStatus.SUCCEEDED
    (effect,) = runtime.effects.list(run_id=run_id)
    assert effect.attempts == 2
    assert [k for k, _ in provider.applied] == [effect.key]


def test_retries_are_bounded_and_exhaustion_follows_the_policy(
    runtime: Runtime, clock: FakeClock
) -> None:
    exhausted = Provider(failures=[TransientError("timeout") for _ in range(5)])
    default = RetryPolicy(max_attempts=2, initial_delay=1, jitter=False)
    paused_id = run_once(runtime, one_effect(exhausted, retry=default))
    clock.advance(1)
    runtime.run_until_idle()
    paused = runtime.get(paused_id)
    assert (paused.status, paused.error.reason) == (
        RunStatus.NEEDS_ATTENTION,
        "retries_exhausted",
    ), "by default a person looks once the retries are used up"

    provider = Provider(failures=[TransientError("timeout") for _ in range(5)])
    policy = RetryPolicy(max_attempts=2, initial_delay=1, jitter=False, on_exhausted="fail")
    run_id = run_once(runtime, one_effect(provider, retry=policy))
    clock.advance(1)
    runtime.run_until_idle()
    failed = runtime.get(run_id)
    assert failed.status is RunStatus.FAILED
    assert failed.error.reason == "retries_exhausted"
    assert failed.error.evidence["attempts"] == 2
    assert provider.applied == []


def test_a_permanent_error_is_rejected_and_never_retried(runtime: Runtime) -> None:
    provider = Provider(failures=[PermanentError("permission_denied", "no refunds today")])
    run_id = run_once(runtime, one_effect(provider, retry=RetryPolicy(max_attempts=5)))
    run = runtime.get(run_id)
    assert (run.status, run.error.reason) == (RunStatus.FAILED, "effect_rejected")
    (effect,) = runtime.effects.list(run_id=run_id)
    assert (effect.status, effect.attempts) == ("rejected", 1)
    assert effect.last_error["kind"] == "permission_denied"


def test_a_rejection_can_be_handled_by_the_step(runtime: Runtime) -> None:
    provider = Provider(failures=[PermanentError("invalid_request")])

    @step
    def pay(ctx: Context, s: S):  # type: ignore[no-untyped-def]
        try:
            ctx.effect("charge", target="p", operation="charge", request={}, execute=provider.call)
        except EffectRejectedError as exc:
            return done({"rejected": exc.error["kind"]})
        return done()

    run_id = run_once(runtime, Workflow("handled", state=S, steps=[pay]))
    assert runtime.get(run_id).result == {"rejected": "invalid_request"}


def test_an_unknown_outcome_without_reconciler_needs_a_person(runtime: Runtime) -> None:
    provider = Provider(failures=[UnknownOutcomeError("timeout", "no answer in 30 s")])
    run_id = run_once(runtime, one_effect(provider, retry=RetryPolicy(max_attempts=5)))
    run = runtime.get(run_id)
    assert run.status is RunStatus.NEEDS_ATTENTION
    assert run.owner is None
    assert run.error.reason == "ambiguous_effect"
    assert run.error.step == "pay"
    assert "perdure effects resolve" in run.error.suggested_action
    assert run.error.evidence["request"] == {"amount": 10}
    (effect,) = runtime.effects.list(status=["ambiguous"])
    assert effect.attempts == 1
    assert runtime.run_until_idle() == 0, "never retried blindly"


def test_a_person_confirms_an_ambiguous_effect_and_the_run_continues(runtime: Runtime) -> None:
    provider = Provider(failures=[UnknownOutcomeError("timeout")])
    run_id = run_once(runtime, one_effect(provider))
    (effect,) = runtime.effects.list(run_id=run_id)
    resolved = runtime.effects.resolve(
        effect.key,
        applied=True,
        by="alice",
        reason="seen in the provider dashboard",
        receipt="ch_123",
        result={"ok": True, "manual": True},
    )
    assert resolved.resolution["by"] == "alice"
    assert runtime.get(run_id).status is RunStatus.RUNNING
    runtime.run_until_idle()
    final = runtime.get(run_id)
    assert final.status is RunStatus.SUCCEEDED
    assert final.result == {"results": [{"ok": True, "manual": True}]}
    assert provider.applied == [], "the step got the recorded result, no second call"
    with pytest.raises(EffectStateError):
        runtime.effects.resolve(effect.key, applied=True, by="bob", reason="again")


def test_a_person_says_not_applied_and_the_same_key_is_called_again(runtime: Runtime) -> None:
    provider = Provider(failures=[UnknownOutcomeError("timeout")])
    run_id = run_once(runtime, one_effect(provider))
    (effect,) = runtime.effects.list(run_id=run_id)
    runtime.effects.resolve(effect.key, applied=False, by="alice", reason="not in provider logs")
    runtime.run_until_idle()
    assert runtime.get(run_id).status is RunStatus.SUCCEEDED
    assert [k for k, _ in provider.applied] == [effect.key]


def test_an_unknown_outcome_is_reconciled_instead_of_resent(runtime: Runtime) -> None:
    provider = Provider()

    def applied_then_lost(request: Any, key: str) -> Any:
        provider.call(request, key)
        raise TimeoutError("response lost")

    @step
    def pay(ctx: Context, s: S):  # type: ignore[no-untyped-def]
        out = ctx.effect(
            "charge",
            target="p",
            operation="charge",
            request={"a": 1},
            execute=applied_then_lost,
            reconcile=provider.lookup,
        )
        return done(out)

    run_id = run_once(runtime, Workflow("reconciled", state=S, steps=[pay]))
    assert runtime.get(run_id).result == {"ok": True}
    assert len(provider.applied) == 1
    (effect,) = runtime.effects.list(run_id=run_id)
    assert (effect.status, effect.receipt) == ("confirmed", "found")


@pytest.mark.parametrize(
    ("policy", "status"),
    [
        (None, RunStatus.NEEDS_ATTENTION),
        (RetryPolicy(max_attempts=9, on_exhausted="needs_attention"), RunStatus.NEEDS_ATTENTION),
        (RetryPolicy(max_attempts=9, on_exhausted="fail"), RunStatus.FAILED),
    ],
)
def test_budget_exhaustion_is_escalated_by_policy_not_retried(
    runtime: Runtime, policy: RetryPolicy | None, status: RunStatus
) -> None:
    provider = Provider(failures=[BudgetExhaustedError("cost", "monthly budget used")])
    run_id = run_once(runtime, one_effect(provider, retry=policy))
    run = runtime.get(run_id)
    assert (run.status, run.error.reason) == (status, "budget_exhausted")
    assert run.wake_at is None
    (effect,) = runtime.effects.list(run_id=run_id)
    assert (effect.status, effect.attempts) == ("planned", 1)


def test_a_changed_request_under_the_same_key_is_refused(
    runtime: Runtime, clock: FakeClock
) -> None:
    provider = Provider(failures=[TransientError("rate_limited")])
    calls = {"n": 0}

    @step
    def pay(ctx: Context, s: S):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        ctx.effect(
            "charge",
            target="p",
            operation="charge",
            request={"amount": calls["n"]},
            execute=provider.call,
            retry=RetryPolicy(initial_delay=1, jitter=False),
        )
        return done()

    run_id = run_once(runtime, Workflow("drift", state=S, steps=[pay]))
    clock.advance(1)
    runtime.run_until_idle()
    run = runtime.get(run_id)
    assert (run.status, run.error.reason) == (
        RunStatus.NEEDS_ATTENTION,
        "effect_request_changed",
    ), "the code changed what it asks: a person decides, the run is not lost"
    assert provider.applied == []


def undo(request: Any, key: str, result: Any) -> Any:
    UNDONE.append(key)
    return {"undone": True}


UNDONE: list[str] = []


def test_a_failing_run_compensates_confirmed_effects_newest_first(runtime: Runtime) -> None:
    UNDONE.clear()
    provider = Provider()

    @step(next=["second"])
    def first(ctx: Context, s: S):  # type: ignore[no-untyped-def]
        ctx.effect(
            "reserve",
            target="stock",
            operation="reserve",
            request={"sku": 1},
            execute=provider.call,
            compensate=undo,
        )
        ctx.effect("log", target="audit", operation="write", request={}, execute=provider.call)
        return goto("second")

    @step
    def second(ctx: Context, s: S):  # type: ignore[no-untyped-def]
        ctx.effect(
            "charge",
            target="pay",
            operation="charge",
            request={"a": 5},
            execute=provider.call,
            compensate=undo,
        )
        return fail("invoice_broken", "the invoice service is broken")

    wf = Workflow("saga", state=S, steps=[first, second], compensators=[undo])
    run_id = run_once(runtime, wf)
    run = runtime.get(run_id)
    assert run.status is RunStatus.FAILED
    assert [k.split("/")[3:] for k in UNDONE] == [
        ["2.second", "charge", "compensate"],
        ["1.first", "reserve", "compensate"],
    ]
    statuses = {e.name: e.status for e in runtime.effects.list(run_id=run_id)}
    assert statuses == {
        "reserve": "compensated",
        "log": "confirmed",
        "charge": "compensated",
        "charge.compensate": "confirmed",
        "reserve.compensate": "confirmed",
    }


def test_cancelling_a_run_compensates_before_it_ends(runtime: Runtime, clock: FakeClock) -> None:
    UNDONE.clear()
    provider = Provider(failures=[])

    @step(next=["wait"])
    def reserve(ctx: Context, s: S):  # type: ignore[no-untyped-def]
        ctx.effect(
            "reserve",
            target="stock",
            operation="reserve",
            request={"sku": 1},
            execute=provider.call,
            compensate=undo,
        )
        return goto("wait")

    @step
    def wait(ctx: Context, s: S):  # type: ignore[no-untyped-def]
        raise TransientError("dependency_unavailable")

    wait_retry = step(name="wait", retry=RetryPolicy(initial_delay=60, jitter=False))(wait.fn)
    wf = Workflow("cancel-saga", state=S, steps=[reserve, wait_retry], compensators=[undo])
    run_id = run_once(runtime, wf)
    assert runtime.get(run_id).wake_at is not None
    cancelled = runtime.cancel(run_id)
    assert cancelled.status is RunStatus.CANCEL_REQUESTED, "compensation needs the workflow code"
    runtime.run_until_idle()
    assert runtime.get(run_id).status is RunStatus.CANCELLED
    assert len(UNDONE) == 1


def test_a_step_retry_policy_can_route_to_a_failure_step(
    runtime: Runtime, clock: FakeClock
) -> None:
    @step(
        next=["fallback"],
        retry=RetryPolicy(max_attempts=2, initial_delay=1, jitter=False, on_exhausted="fallback"),
    )
    def flaky(ctx: Context, s: S):  # type: ignore[no-untyped-def]
        raise TransientError("dependency_unavailable")

    @step
    def fallback(ctx: Context, s: S):  # type: ignore[no-untyped-def]
        return done("used the fallback")

    run_id = run_once(runtime, Workflow("fallback", state=S, steps=[flaky, fallback]))
    assert runtime.get(run_id).step_attempts == 1
    clock.advance(1)
    runtime.run_until_idle()
    run = runtime.get(run_id)
    assert (run.status, run.result) == (RunStatus.SUCCEEDED, "used the fallback")
    assert [s.name for s in runtime.status(run_id).steps] == ["flaky", "fallback"]


def test_an_unknown_failure_step_is_refused_at_declaration() -> None:
    @step(retry=RetryPolicy(on_exhausted="nowhere"))
    def a(ctx: Context, s: S):  # type: ignore[no-untyped-def]
        return done()

    with pytest.raises(DefinitionError, match="on_exhausted"):
        Workflow("bad", state=S, steps=[a])


def test_a_compensator_must_be_declared(runtime: Runtime) -> None:
    provider = Provider()

    @step
    def a(ctx: Context, s: S):  # type: ignore[no-untyped-def]
        ctx.effect(
            "x", target="t", operation="o", request={}, execute=provider.call, compensate=undo
        )
        return done()

    run_id = run_once(runtime, Workflow("undeclared", state=S, steps=[a]))
    assert runtime.get(run_id).error.reason == "invalid_definition"
    assert provider.applied == [], "refused before any call"


def test_effect_statuses_listed_by_filter(runtime: Runtime) -> None:
    run_once(runtime, one_effect(Provider()))
    assert len(runtime.effects.list(status=[EffectStatus.CONFIRMED])) == 1
    assert runtime.effects.list(status=["ambiguous"]) == []
