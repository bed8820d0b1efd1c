"""The audit trail, on each backend: every decision (approve, reject, resolve, resume, fail,
cancel) is listed with who made it and the credential it came through, read from the events
each decision wrote in its own transaction."""

from __future__ import annotations

from perdure import Runtime
from perdure.core.model import Principal, RunStatus
from tests.apps import server_app

ALICE = Principal("t1", "alice", frozenset({"approver", "admin"}), via="session:00aa11bb22cc33dd")
BOB = Principal("t1", "bob", frozenset({"approver", "admin"}), via="key:0123456789abcdef")


def _waiting(rt: Runtime, workflow: str, status: RunStatus) -> str:
    run = rt.start(workflow, {"ticks": 0} if workflow == "job" else None, tenant="t1")
    rt.run_until_idle()
    assert rt.get(run.run_id, tenant="t1").status is status
    return run.run_id


def test_every_decision_is_listed_with_who_and_the_credential_it_came_through(
    runtime: Runtime,
) -> None:
    runtime.register(server_app.job, server_app.charge, server_app.plain)
    approved = _waiting(runtime, "job", RunStatus.WAITING_APPROVAL)
    rejected = _waiting(runtime, "job", RunStatus.WAITING_APPROVAL)
    resolved = _waiting(runtime, "charge", RunStatus.NEEDS_ATTENTION)
    failed = _waiting(runtime, "charge", RunStatus.NEEDS_ATTENTION)
    resumed = _waiting(runtime, "charge", RunStatus.NEEDS_ATTENTION)
    cancelled = runtime.start("plain", tenant="t1").run_id
    runtime.approve(approved, ALICE, comment="fine")
    runtime.reject(rejected, BOB, comment="too much")
    (effect,) = runtime.effects.list(tenant="t1", run_id=resolved)
    runtime.effects.resolve(
        effect.key, applied=True, by="alice", reason="the bank has it", tenant=ALICE
    )
    runtime.versions.fail(failed, tenant=BOB, reason="not worth it")
    runtime.versions.repair(resumed, tenant=ALICE)
    runtime.cancel(cancelled, tenant=BOB, reason="changed my mind")
    runtime.cancel(cancelled, tenant="t1", reason="again, from the command line")  # no change
    trail = runtime.activity.audit(tenant="t1")
    assert [(d.run_id, d.verb, d.by, d.via) for d in trail] == [
        (approved, "approve", "alice", ALICE.via),
        (rejected, "reject", "bob", BOB.via),
        (resolved, "resolve", "alice", ALICE.via),
        (failed, "fail", "bob", BOB.via),
        (resumed, "resume", "alice", ALICE.via),
        (cancelled, "cancel", "bob", BOB.via),
    ]
    assert [d.detail for d in trail][:2] == ["fine", "too much"]
    assert "the bank has it" in trail[2].detail and trail[3].detail == "not worth it"
    assert trail[5].detail == "changed my mind"
    assert [d.seq for d in trail] == sorted(d.seq for d in trail)
    assert runtime.activity.audit(tenant="t1", after=trail[3].seq) == trail[4:]
    assert runtime.activity.audit(tenant="t1", limit=2) == trail[:2]
    assert runtime.activity.audit(tenant="t2") == []
