"""The Runtime's effect operations: listing effects and a person's decision on one."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from perdure.core import transitions
from perdure.core.effects import EffectRecord, EffectStatus
from perdure.core.errors import EffectNotFoundError, EffectStateError, InvalidInputError
from perdure.core.ids import checked_text
from perdure.core.model import RunStatus
from perdure.runtime.admin.parts import (
    DEFAULT_TENANT,
    RuntimeParts,
    Tenant,
    acting,
    statuses_of,
    tenant_of,
)
from perdure.runtime.admin.verbs import renamed, verb


class EffectAdmin:
    """The Runtime's part for effects a person lists and resolves (``rt.effects``):
    ``rt.effects.list(status=["ambiguous"])``, ``rt.effects.resolve(key, applied=...)``."""

    def __init__(self, parts: RuntimeParts) -> None:
        self.parts = parts

    @verb
    def resolve(
        self,
        key: str,
        *,
        applied: bool,
        by: str,
        reason: str,
        tenant: Tenant = DEFAULT_TENANT,
        receipt: str | None = None,
        result: Any = None,
        request_id: str | None = None,
    ) -> EffectRecord:
        """Record a person's decision about an ``ambiguous`` effect and let its run continue.

        ``applied=True`` marks it confirmed (with the ``receipt`` and ``result`` found at the
        provider): the step gets that result without a call. ``applied=False`` marks it not
        applied: the step calls the provider again with the same key. Who decided, when and
        why is stored on the effect and in the run's events. A run waiting in
        NEEDS_ATTENTION is moved back to RUNNING for any worker to pick up. A repeated
        ``request_id`` returns the effect as the first decision left it. When ``tenant`` is a
        principal, the credential it came through is recorded with the decision (``via``: the
        audit trail).
        """
        _, via = acting(tenant)
        tenant = tenant_of(tenant)
        checked_text(by, "who decided")
        checked_text(reason, "reason")
        if receipt is not None:
            checked_text(receipt, "receipt")
        if not by or not reason:
            raise InvalidInputError(
                "a resolution needs who decided and why", fix="pass --as NAME and --reason TEXT"
            )
        record = self.parts.store.get_effect(tenant, key)
        if record is None:
            raise EffectNotFoundError(f"no effect {key} in tenant {tenant}")
        earlier = record.resolution if isinstance(record.resolution, dict) else {}
        if request_id is not None and earlier.get("request_id") == request_id:
            return record
        if record.status is not EffectStatus.AMBIGUOUS:
            raise EffectStateError(
                f"effect {key} is {record.status}; only ambiguous effects are resolved by hand",
                fix="see the effects that need a decision: `perdure effects --status ambiguous`",
            )
        now = self.parts.clock.now()
        decision = {
            "by": by,
            "at": now.isoformat(timespec="seconds"),
            "reason": reason,
            "decision": "applied" if applied else "not_applied",
            "request_id": request_id,
        }
        if via is not None:
            decision["via"] = via
        updated = self.parts.store.update_effect(
            tenant,
            key,
            expected_status=EffectStatus.AMBIGUOUS,
            status=EffectStatus.CONFIRMED if applied else EffectStatus.PLANNED,
            fence=None,
            now=now,
            attempts_delta=0 if applied or record.attempts == 0 else -1,
            result=result,
            receipt=receipt,
            resolution=decision,
        )
        run = self.parts.store.get_run(tenant, record.run_id)
        if run.status is RunStatus.NEEDS_ATTENTION:
            transitions.check(run.status, RunStatus.RUNNING)
            self.parts.store.set_status(
                tenant,
                run.run_id,
                expected_status=RunStatus.NEEDS_ATTENTION,
                expected_version=run.state_version,
                status=RunStatus.RUNNING,
                fence=None,
                now=now,
                data={"reason": "effect_resolved", "effect": key, **decision},
                release_lease=True,
            )
        return updated

    # ``list`` comes last: below it, ``list[...]`` in an annotation would name this method.
    @verb
    def list(
        self,
        *,
        tenant: Tenant = DEFAULT_TENANT,
        run_id: str | None = None,
        status: Sequence[EffectStatus | str] = (),
        limit: int = 1000,
    ) -> list[EffectRecord]:
        """Effects of a tenant (or of one run), filtered by status, in the order planned."""
        tenant = tenant_of(tenant)
        statuses = statuses_of(EffectStatus, status, upper=False)
        return self.parts.store.list_effects(tenant, run_id=run_id, statuses=statuses, limit=limit)

    __call__ = renamed(list, "Runtime.effects(...)", "Runtime.effects.list(...)")
