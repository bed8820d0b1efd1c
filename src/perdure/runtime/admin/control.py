"""What the Runtime does to start, claim and cancel runs, kept apart from its API surface."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from perdure.core import transitions
from perdure.core.artifacts import ArtifactRef
from perdure.core.budget import Budget
from perdure.core.errors import (
    DecodeError,
    InvalidInputError,
    RunBusyError,
    RunClosedError,
    StaleStateError,
)
from perdure.core.ids import checked_id, checked_text, new_id
from perdure.core.model import JSON, Durability, Message, Release, Run, RunStatus
from perdure.core.records import RunError
from perdure.core.seal import seal_state
from perdure.core.settling import kept, needs_a_worker
from perdure.core.threads import ThreadPolicy
from perdure.core.workflow import Workflow
from perdure.runtime.admin.parts import RuntimeParts
from perdure.store.base import NewRun

WAIT_HINTS = {
    RunStatus.WAITING_APPROVAL: "it continues once a person decides: see `perdure approvals`",
    RunStatus.WAITING_EXTERNAL: "it continues when its signal arrives (`perdure signal RUN NAME`) "
    "or its timer fires",
}


@dataclass(frozen=True, slots=True)
class StartOptions:
    """How :meth:`Runtime.start` was asked to start a run (see its docstring)."""

    thread: str | None
    idempotency_key: str | None
    durability: Durability | str
    release: dict[str, str] | None
    messages: tuple[Message, ...]
    budget: Budget | None
    policy: ThreadPolicy | str | None = None


def new_run(
    parts: RuntimeParts, wf: Workflow[Any], input: Any, tenant: str, options: StartOptions
) -> NewRun:
    """The run to create: validated options, the coerced and sealed initial state."""
    try:
        mode = Durability(options.durability)
    except ValueError:
        raise InvalidInputError(
            f"durability {options.durability!r} is unknown", fix="use sync, async or exit"
        ) from None
    if options.thread is not None:
        checked_id(options.thread, "thread")
    if options.idempotency_key is not None:
        checked_id(options.idempotency_key, "idempotency key")
    extra = dict(options.release or {})
    unknown = sorted(set(extra) - {"code", "prompt", "model", "tools"})
    if unknown:
        raise InvalidInputError(
            f"release ids {unknown} are unknown", fix="use code, prompt, model and tools"
        )
    state = wf.codec.coerce({} if input is None else input)
    state_fields = wf.codec.to_fields(state)
    try:  # what a worker will decode: a default of the wrong type is refused now, not there
        wf.codec.from_fields(state_fields)
    except DecodeError as exc:
        raise InvalidInputError(
            f"the initial state of {wf.name} would not decode: {exc.message}",
            fix="give each state field a value (or a default) of its declared type, e.g. "
            "`items: list[str] = field(default_factory=list)` or `items: list[str] | None = None`",
        ) from exc
    refs: tuple[ArtifactRef, ...] = ()
    if parts.artifacts is not None:
        state_fields, refs = parts.artifacts.offload_new(tenant, state_fields, wf.codec.lazy)
    now = parts.clock.now()
    run_id = new_id(now)
    if wf.model is not None:
        extra.setdefault("model", wf.model)
    manifest = Release(wf.version, wf.state_schema, mode, **extra)
    sealed = seal_state(
        parts.keyring, tenant, run_id, parts.checked(state_fields), previous=None, steps=0
    )
    new = NewRun(
        run_id=run_id,
        tenant_id=tenant,
        thread_id=options.thread or run_id,
        workflow=wf.name,
        start_step=wf.start,
        release=manifest,
        state=sealed.fields,
        state_seal=sealed.seal,
        idempotency_key=options.idempotency_key,
        messages=options.messages,
        budget=limits.start() if (limits := options.budget or wf.budget) is not None else None,
        policy=None if options.policy is None else ThreadPolicy.parse(options.policy),
        artifacts=refs,
    )
    return new


def not_claimable(current: Run, now: datetime, holder: str | None = None) -> RunBusyError:
    """Why a run that is not finished could not be claimed, with what to do (``holder`` is the
    run that holds its thread)."""
    if holder is not None and holder != current.run_id:
        return RunBusyError(
            f"run {current.run_id} waits for run {holder}, which holds thread "
            f"{current.thread_id} (one run of a thread runs at a time)",
            fix="it runs when that run ends; cancel that run, or start with --policy interrupt",
        )
    if current.wake_at is not None and current.wake_at > now:
        return RunBusyError(
            f"run {current.run_id} waits to retry {current.next_step} until "
            f"{current.wake_at:%Y-%m-%d %H:%M:%S} UTC",
            fix="let a worker pick it up then, or cancel it",
        )
    if current.status in WAIT_HINTS:
        return RunBusyError(
            f"run {current.run_id} is {current.status}", fix=WAIT_HINTS[current.status]
        )
    return RunBusyError(
        f"run {current.run_id} is {current.status} and leased by {current.owner} "
        f"until {current.lease_until:%Y-%m-%d %H:%M:%S} UTC"
        if current.owner and current.lease_until
        else f"run {current.run_id} is {current.status}, which does not run now"
    )


def cancel_run(
    parts: RuntimeParts,
    tenant: str,
    run_id: str,
    reason: str,
    request_id: str | None,
    *,
    by: str | None = None,
    via: str | None = None,
) -> Run:
    """See :meth:`Runtime.cancel`: the request's ``status`` event records ``by`` and ``via``
    when given."""
    asked: dict[str, JSON] = {"reason": reason or "cancel requested", "request_id": request_id}
    if by is not None:
        asked["by"] = by
    if via is not None:
        asked["via"] = via
    checked_text(reason, "cancel reason")
    if request_id is not None:
        checked_id(request_id, "request id")
    for _ in range(10):
        run = parts.store.get_run(tenant, run_id)
        if run.status.terminal:
            return run
        try:
            if run.status is not RunStatus.CANCEL_REQUESTED:
                transitions.check(run.status, RunStatus.CANCEL_REQUESTED)
                run = parts.store.set_status(
                    tenant,
                    run_id,
                    expected_status=run.status,
                    expected_version=run.state_version,
                    status=RunStatus.CANCEL_REQUESTED,
                    fence=None,
                    now=parts.clock.now(),
                    data=asked,
                )
            leased = run.lease_until is not None and run.lease_until > parts.clock.now()
            effects = parts.effects(run)
            if leased or needs_a_worker(effects):
                return run  # a worker settles its effects (see perdure.core.settling)
            return parts.store.set_status(
                tenant,
                run_id,
                expected_status=RunStatus.CANCEL_REQUESTED,
                expected_version=run.state_version,
                status=RunStatus.CANCELLED,
                fence=None,
                now=parts.clock.now(),
                data=RunError(
                    "cancelled", reason, run.next_step, kept_effects=tuple(kept(effects))
                ).to_json(),
                release_lease=True,
            )
        except (StaleStateError, RunClosedError):
            continue
    raise StaleStateError(f"run {run_id} kept changing while it was being cancelled")
