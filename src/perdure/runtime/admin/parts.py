"""What every part of the Runtime shares: its store, clock, workflows and settings, in one
object that each part is given (composition, not inheritance)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from enum import StrEnum
from typing import Any, TypeVar

from perdure.core import transitions
from perdure.core.budget import Budget
from perdure.core.clock import Clock
from perdure.core.effects import EffectRecord
from perdure.core.errors import InvalidInputError, PerdureError, WorkflowNotFoundError
from perdure.core.ids import checked_id
from perdure.core.model import Principal, Run, RunStatus
from perdure.core.seal import Keyring, open_for_repair, seal_state
from perdure.core.serde import Limits, dumps
from perdure.core.workflow import Workflow
from perdure.runtime.artifacts import Artifacts
from perdure.store.base import Store

DEFAULT_TENANT = "default"

Tenant = str | Principal
"""Who a call acts for: a tenant id, or a :class:`~perdure.core.model.Principal` (its tenant)."""


def tenant_of(who: Tenant) -> str:
    """The tenant id a call is scoped to."""
    return checked_id(who.tenant_id if isinstance(who, Principal) else who, "tenant")


def acting(who: Tenant) -> tuple[str | None, str | None]:
    """Who a call acts as and the credential it came through (``subject``, ``via``) when it
    names a :class:`~perdure.core.model.Principal`; ``(None, None)`` for a bare tenant id.
    Decisions record both in their events: the audit trail."""
    return (who.subject, who.via) if isinstance(who, Principal) else (None, None)


class RuntimeParts:
    """The store, clock, owner, keyring, limits and registered workflows of one
    :class:`~perdure.runtime.runtime.Runtime`, and the helpers its parts all use."""

    def __init__(
        self, store: Store, clock: Clock, owner: str, keyring: Keyring | None, limits: Limits
    ) -> None:
        self.store = store
        self.clock = clock
        self.owner = owner
        self.keyring = keyring
        self.limits = limits
        self.workflows: dict[str, Workflow[Any]] = {}
        self.artifacts: Artifacts | None = None
        """The artifact service (set by the Runtime that owns these parts)."""

    def workflow(self, name: str) -> Workflow[Any]:
        """A registered workflow by name, or :class:`WorkflowNotFoundError`."""
        try:
            return self.workflows[name]
        except KeyError:
            known = ", ".join(sorted(self.workflows)) or "none"
            raise WorkflowNotFoundError(
                f"workflow {name!r} is not loaded (loaded: {known})"
            ) from None

    def checked(self, fields: dict[str, bytes]) -> dict[str, bytes]:
        """Refuse state over the limits as bad input (before anything is written)."""
        try:
            self.limits.check(fields)
        except PerdureError as exc:
            raise InvalidInputError(exc.message, fix=exc.fix) from exc
        return fields

    def effects(self, run: Run) -> list[EffectRecord]:
        """The run's effects, oldest first."""
        return self.store.list_effects(run.tenant_id, run_id=run.run_id)

    def reopen(
        self,
        run: Run,
        wf: Workflow[Any],
        at: str | None,
        patch: dict[str, Any] | None,
        add_budget: Budget | None,
        by: str | None,
        *,
        via: str | None = None,
    ) -> Run:
        """Bring a run that needs a person back to RUNNING at ``at`` (default: where it
        stopped), with ``patch`` and ``add_budget``; the ``resumed`` event records ``by`` and,
        when given, ``via`` (the credential the decision came through)."""
        error = run.error
        step = at or run.next_step or (error and (error.resume_at or error.step))
        if step not in wf.steps:
            raise InvalidInputError(
                f"step {step!r} is not declared by workflow {wf.name}",
                fix=f"pick one of {', '.join(wf.steps)} with --at",
            )
        patched: dict[str, bytes] = {}
        state_seal: str | None = None
        if patch:
            if not isinstance(patch, dict):
                raise InvalidInputError("a state patch must be a JSON object of fields")
            patched = {k: dumps(v) for k, v in patch.items()}
            stored = self.store.load_state(run.tenant_id, run.run_id)
            current, after = open_for_repair(
                self.keyring, run.tenant_id, run.run_id, stored, run.state_seal
            )
            wf.codec.coerce_fields(self.checked({**current, **patched}))
            # A patch re-seals the whole state: the fields not patched are kept as stored (the
            # operator's decision), under a new record the replayed or tampered ones cannot match.
            sealed = seal_state(
                self.keyring,
                run.tenant_id,
                run.run_id,
                {**current, **patched} if self.keyring else patched,
                previous=None,
                steps=run.steps_done,
                after=after,
            )
            patched, state_seal = sealed.fields, sealed.seal
        budget = run.budget
        if add_budget is not None:
            budget = (budget or Budget().start()).extended(add_budget)
        elif budget is not None:
            budget = replace(budget, guard=None)
        transitions.check(run.status, RunStatus.RUNNING)
        return self.store.reopen(
            run.tenant_id,
            run.run_id,
            expected_status=run.status,
            expected_version=run.state_version,
            next_step=step,
            state=patched,
            state_seal=state_seal,
            budget=budget,
            now=self.clock.now(),
            data={
                "by": by or self.owner,
                "at": step,
                "patched": sorted(patch or {}),
                "from": str(run.status),
                **({"via": via} if via is not None else {}),
            },
        )


E = TypeVar("E", bound=StrEnum)


def statuses_of(kind: type[E], given: Sequence[E | str], *, upper: bool) -> list[E]:
    """Status filters given as members or names (any case) of ``kind``; else
    :class:`InvalidInputError` naming the allowed values."""
    try:
        return [kind(str(s).upper() if upper else str(s).lower()) for s in given]
    except ValueError as exc:
        allowed = ", ".join(s.value for s in kind)
        raise InvalidInputError(str(exc), fix=f"use one of {allowed}") from None
