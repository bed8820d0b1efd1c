"""Another tenant's runs do not exist: every verb, called for the wrong tenant, says "not
found" (or lists nothing) and changes nothing."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from perdure import Context, RunStatus, Runtime, Workflow, step
from perdure.core.effects import UnknownOutcomeError
from perdure.core.errors import EffectNotFoundError, RunNotFoundError
from perdure.core.model import Principal
from perdure.core.workflow import wait_for_approval

OWNER = Principal("t1", "olga", frozenset({"approver"}))
STRANGER = Principal("t2", "mallory", frozenset({"approver"}))


@dataclass
class S:
    n: int = 0


def lost(request: Any, key: str) -> Any:
    raise UnknownOutcomeError("timeout")


@step(next=["ask"])
def touch(ctx: Context, s: S):  # type: ignore[no-untyped-def]
    ctx.effect("call", target="t", operation="o", request={}, execute=lost)
    return wait_for_approval("approver", {}, on_approve="ask", on_reject="ask")


@step(next=["ask"])
def ask(ctx: Context, s: S):  # type: ignore[no-untyped-def]
    return wait_for_approval("approver", {}, on_approve="ask", on_reject="ask")


wf = Workflow("tenanted", state=S, steps=[ask, touch])
effecting = Workflow("effecting", state=S, steps=[touch, ask])


VERBS: dict[str, Callable[[Runtime, str], Any]] = {
    "get": lambda rt, r: rt.get(r, tenant=STRANGER),
    "status": lambda rt, r: rt.status(r, tenant=STRANGER),
    "cancel": lambda rt, r: rt.cancel(r, tenant=STRANGER),
    "resume": lambda rt, r: rt.resume(r, tenant=STRANGER),
    "approve": lambda rt, r: rt.approve(r, STRANGER),
    "reject": lambda rt, r: rt.reject(r, STRANGER),
    "signal": lambda rt, r: rt.signal(r, "go", tenant=STRANGER),
    "repair": lambda rt, r: rt.versions.repair(r, tenant=STRANGER, at="ask"),
    "fail": lambda rt, r: rt.versions.fail(r, tenant=STRANGER, reason="x"),
}


@pytest.mark.parametrize("verb", list(VERBS))
def test_every_verb_on_another_tenants_run_is_not_found(runtime: Runtime, verb: str) -> None:
    runtime.register(wf)
    run = runtime.start(wf, tenant=OWNER)
    runtime.run_until_idle()
    before = runtime.get(run.run_id, tenant=OWNER)
    assert before.status is RunStatus.WAITING_APPROVAL
    with pytest.raises(RunNotFoundError):
        VERBS[verb](runtime, run.run_id)
    assert runtime.get(run.run_id, tenant=OWNER) == before


def test_listings_of_another_tenant_show_nothing(runtime: Runtime) -> None:
    runtime.register(effecting)
    run = runtime.start(effecting, tenant=OWNER)
    runtime.run_until_idle()
    assert runtime.get(run.run_id, tenant=OWNER).status is RunStatus.NEEDS_ATTENTION
    assert runtime.runs(tenant=STRANGER) == []
    assert runtime.effects.list(tenant=STRANGER) == []
    assert runtime.approvals(tenant=STRANGER) == []
    assert runtime.versions.check(tenant="t2") == []
    (effect,) = runtime.effects.list(tenant=OWNER)
    with pytest.raises(EffectNotFoundError):
        runtime.effects.resolve(effect.key, applied=True, by="mallory", reason="x", tenant=STRANGER)
    assert runtime.effects.list(tenant=OWNER)[0].status == "ambiguous"


def test_run_ids_are_unguessable_uuid7(runtime: Runtime) -> None:
    runtime.register(wf)
    ids = {runtime.start(wf).run_id for _ in range(50)}
    assert len(ids) == 50
    assert all(i[14] == "7" for i in ids), "UUID version 7"
    assert len({i[19:] for i in ids}) == 50, "random bits differ even at the same millisecond"
