"""The refund demo: a refund review that waits days for a manager, then pays exactly once.

``load_case`` reads the case, ``policy_check`` applies the refund policy, ``draft_decision`` has
the (simulated) model write a recommendation, ``approval`` waits — holding no process — for a
person with the ``refund_manager`` role, ``execute_refund`` pays through the effect protocol (a
provider that does not deduplicate, with a reconciler), and ``notify`` emails the customer.
A rejection goes to ``close_case`` instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from perdure.core.effects import EffectResult, Reconciled
from perdure.core.workflow import (
    Done,
    Next,
    Outcome,
    Workflow,
    done,
    fail,
    goto,
    step,
    wait_for_approval,
)
from perdure.demos.ledger import Ledger
from perdure.runtime.step.context import Context

CASES: dict[int, dict[str, Any]] = {
    8472: {
        "customer": "li.na@example.com",
        "order": "A-1009",
        "amount": 120.0,
        "reason": "item arrived broken",
    },
}
POLICY_LIMIT = 500.0


@dataclass
class RefundCase:
    """The case under review; ``provider`` is the simulated payments/email provider's file."""

    case: int = 8472
    provider: str = ".perdure/provider.db"
    customer: str = ""
    amount: float = 0.0
    reason: str = ""
    recommendation: str = ""
    refund_id: str = ""


def say(line: str) -> None:
    """Print a narration line at once."""
    print(line, flush=True)


def reconciler(ledger: Ledger):  # type: ignore[no-untyped-def]
    """Ask the provider what it did for an operation id."""

    def reconcile(request: Any, key: str) -> Reconciled:
        found = ledger.lookup(key)
        return Reconciled.not_found() if found is None else Reconciled.confirmed(found, found["id"])

    return reconcile


@step(next=["policy_check"])
def load_case(ctx: Context, s: RefundCase) -> Outcome:
    """Read the case from the system of record."""
    say("ENTER load_case")
    case = CASES.get(s.case)
    if case is None:
        return fail("unknown_case", f"no case {s.case}")
    s.customer, s.amount, s.reason = case["customer"], case["amount"], case["reason"]
    return goto("policy_check")


@step(next=["draft_decision"])
def policy_check(ctx: Context, s: RefundCase) -> Outcome:
    """Refunds above the limit are not for this workflow."""
    say("ENTER policy_check")
    if s.amount > POLICY_LIMIT:
        return fail("policy_rejected", f"{s.amount} is above the {POLICY_LIMIT} limit")
    return goto("draft_decision")


@step(next=["execute_refund", "close_case"])
def draft_decision(ctx: Context, s: RefundCase) -> Outcome:
    """The (simulated) model recommends; a manager must approve before money moves."""
    say("ENTER draft_decision")
    s.recommendation = f"Refund {s.amount:.2f} for case {s.case}: {s.reason}."
    ctx.add_message("assistant", s.recommendation)
    return wait_for_approval(
        "refund_manager",
        {
            "case": s.case,
            "amount": s.amount,
            "customer": s.customer,
            "recommendation": s.recommendation,
        },
        on_approve="execute_refund",
        on_reject="close_case",
    )


def pay(ledger: Ledger, request: dict[str, Any], key: str) -> EffectResult:
    """The provider call: refund, with its id as the receipt."""
    out = ledger.apply("refund", request, key)
    return EffectResult(out, receipt=out["id"])


@step(next=["notify"])
def execute_refund(ctx: Context, s: RefundCase) -> Next:
    """Pay the refund exactly once."""
    say("ENTER execute_refund")
    ledger = Ledger(s.provider)
    receipt = ctx.effect(
        "refund",
        target="payments",
        operation="refund",
        request={"case": s.case, "amount": s.amount},
        execute=lambda req, key: pay(ledger, req, key),
        reconcile=reconciler(ledger),
    )
    s.refund_id = receipt["id"]
    return goto("notify")


@step
def notify(ctx: Context, s: RefundCase) -> Done:
    """Tell the customer, exactly once."""
    say("ENTER notify")
    ledger = Ledger(s.provider)
    approval = ctx.approval
    text = (
        f"Your refund of {s.amount:.2f} was approved by {approval.decided_by if approval else '?'}."
    )
    ctx.effect(
        "email",
        target="email",
        operation="send",
        request={"to": s.customer, "text": text},
        execute=lambda req, key: ledger.apply("email", req, key),
        reconcile=reconciler(ledger),
    )
    return done({"refund": s.refund_id, "notified": s.customer})


@step
def close_case(ctx: Context, s: RefundCase) -> Done:
    """The manager said no: close without paying."""
    say("ENTER close_case")
    approval = ctx.approval
    return done({"refund": None, "rejected_by": approval.decided_by if approval else None})


refund_review = Workflow(
    "refund_review",
    version=1,
    state=RefundCase,
    steps=[load_case, policy_check, draft_decision, execute_refund, notify, close_case],
)
