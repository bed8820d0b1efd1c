"""The Runtime's operations on waiting runs: approvals and signals."""

from __future__ import annotations

import uuid

from perdure.core.errors import ApprovalStateError, NotAuthorizedError, RunClosedError
from perdure.core.ids import checked_id, checked_text
from perdure.core.model import JSON, Approval, Principal, Signal
from perdure.runtime.admin.parts import DEFAULT_TENANT, RuntimeParts, Tenant, tenant_of
from perdure.runtime.admin.verbs import verb


class Waits:
    """The Runtime's part for approvals and signals: the kernel verbs ``rt.approvals``,
    ``rt.approve``, ``rt.reject`` and ``rt.signal`` are bound from it."""

    def __init__(self, parts: RuntimeParts) -> None:
        self.parts = parts

    @verb
    def approvals(
        self, *, tenant: Tenant = DEFAULT_TENANT, run_id: str | None = None, pending: bool = True
    ) -> list[Approval]:
        """Approval requests of a tenant (pending ones by default), oldest first."""
        tenant = tenant_of(tenant)
        return self.parts.store.approvals(tenant, run_id=run_id, pending=pending)

    @verb
    def approve(
        self,
        run_id: str,
        principal: Principal,
        *,
        comment: str | None = None,
        request_id: str | None = None,
    ) -> Approval:
        """Approve the run's pending request; it continues with its ``on_approve`` step.

        The principal must belong to the run's tenant (another tenant's run is "not found")
        and hold the role the request requires (else :class:`NotAuthorizedError`). A repeated
        ``request_id`` returns the first decision. A decision on a finished run is recorded as
        a late event and raises :class:`RunClosedError`.
        """
        return self._decide(run_id, principal, True, comment, request_id)

    @verb
    def reject(
        self,
        run_id: str,
        principal: Principal,
        *,
        comment: str | None = None,
        request_id: str | None = None,
    ) -> Approval:
        """Reject the run's pending request; it continues with its ``on_reject`` step. Same
        rules as :meth:`approve`."""
        return self._decide(run_id, principal, False, comment, request_id)

    def _decide(
        self,
        run_id: str,
        principal: Principal,
        approve: bool,
        comment: str | None,
        request_id: str | None,
    ) -> Approval:
        tenant = principal.tenant_id
        if comment is not None:
            checked_text(comment, "comment")
        if request_id is not None:
            checked_id(request_id, "request id")
        run = self.parts.store.get_run(tenant, run_id)
        pending = self.parts.store.approvals(tenant, run_id=run_id, pending=True)
        if request_id is not None and not pending:
            done = [
                a
                for a in self.parts.store.approvals(tenant, run_id=run_id)
                if a.status != "pending"
            ]
            if done:
                decided, _ = self.parts.store.decide_approval(
                    tenant,
                    done[-1].id,
                    approve=approve,
                    by=principal.subject,
                    role="",
                    comment=comment,
                    request_id=request_id,
                    now=self.parts.clock.now(),
                    via=principal.via,
                )
                return decided
        if run.status.terminal:
            info = {
                "by": principal.subject,
                "via": principal.via,
                "approve": approve,
                "comment": comment,
            }
            self.parts.store.record_event(
                tenant, run_id, "late_approval", info, self.parts.clock.now()
            )
            raise RunClosedError(
                f"run {run_id} already ended {run.status}; the decision was recorded and ignored"
            )
        if not pending:
            raise ApprovalStateError(f"run {run_id} is {run.status}, not waiting for an approval")
        request = pending[-1]
        if request.role not in principal.roles:
            held = ", ".join(sorted(principal.roles)) or "none"
            raise NotAuthorizedError(
                f"deciding on run {run_id} needs role {request.role!r}; "
                f"{principal.subject} holds {held}"
            )
        decided, _ = self.parts.store.decide_approval(
            tenant,
            request.id,
            approve=approve,
            by=principal.subject,
            role=request.role,
            comment=comment,
            request_id=request_id,
            now=self.parts.clock.now(),
            via=principal.via,
        )
        return decided

    @verb
    def signal(
        self,
        run_id: str,
        name: str,
        payload: JSON = None,
        *,
        tenant: Tenant = DEFAULT_TENANT,
        signal_id: str | None = None,
    ) -> tuple[Signal, str]:
        """Deliver signal ``name`` to a run; return it and ``woke``, ``queued`` or
        ``duplicate``.

        A run waiting for ``name`` continues at once (any worker picks it up); otherwise the
        signal waits in the run's inbox for a later ``wait_for_signal(name)``. ``signal_id``
        (default: a new id) makes delivery idempotent: the same id twice changes nothing. A
        signal to a finished run is recorded as a late event and raises
        :class:`RunClosedError`.
        """
        tenant = tenant_of(tenant)
        return self.parts.store.deliver_signal(
            tenant,
            run_id,
            signal_id=str(uuid.uuid4())
            if signal_id is None
            else checked_id(signal_id, "signal id"),
            name=checked_id(name, "signal name"),
            payload=payload,
            now=self.parts.clock.now(),
        )
