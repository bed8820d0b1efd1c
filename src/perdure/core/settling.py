"""What a run that ends early owes its effects: every effect is settled before the run becomes
CANCELLED (or FAILED), and a run never pretends about one whose outcome nobody knows.

An effect of an ending run is in one of four situations:

* **not sent** (``planned``: its intent is recorded, no call was made, or a failed call is
  waiting for its retry): it is moved to ``rejected`` with :data:`NOT_SENT` as its error, so it
  can never be sent later;
* **in doubt** (``executing``: a call may have reached the provider; ``ambiguous``): its
  reconciler, run by the step's own code in a settling pass (see
  :mod:`perdure.runtime.execution.execution`), tells confirmed from not applied; when nobody
  can tell, the run goes to NEEDS_ATTENTION (``ambiguous_effect``) instead of ending;
* **applied** (``confirmed``) with a compensator: it is compensated, newest first;
* **applied** without one: it is kept, and listed as such in the run's error
  (``kept_effects``).
"""

from __future__ import annotations

from collections.abc import Iterable

from perdure.core.effects import EffectRecord, EffectStatus
from perdure.core.model import JSON

S = EffectStatus

IN_DOUBT = frozenset({S.EXECUTING, S.AMBIGUOUS})
"""Effects whose call may have happened."""

UNSETTLED = IN_DOUBT | {S.PLANNED}
"""Effects an ending run must settle before it ends."""

NOT_SENT: dict[str, JSON] = {
    "class": "not_sent",
    "kind": "run_ended",
    "message": "the run ended before this effect's call was made; it will never be sent",
}
"""The error an effect gets when its run ends before its call was made."""


def in_doubt(effects: Iterable[EffectRecord]) -> list[EffectRecord]:
    """The effects whose call may have happened and whose outcome is not recorded."""
    return [e for e in effects if e.status in IN_DOUBT]


def not_sent(effects: Iterable[EffectRecord]) -> list[EffectRecord]:
    """The effects whose intent is recorded and whose call was not made."""
    return [e for e in effects if e.status is S.PLANNED]


def kept(effects: Iterable[EffectRecord]) -> list[dict[str, JSON]]:
    """The applied effects that declare no compensator (kept when the run ends), as evidence."""
    return [
        {"effect": e.key, "target": e.target, "operation": e.operation, "receipt": e.receipt}
        for e in effects
        if e.status is S.CONFIRMED and not e.compensator
    ]


def needs_a_worker(effects: Iterable[EffectRecord]) -> bool:
    """True when ending the run needs the workflow's code (a worker): an effect to compensate,
    to reconcile, or to mark not sent under the run's fence."""
    return any(
        e.status in UNSETTLED or (e.status is S.CONFIRMED and e.compensator) for e in effects
    )


def doubt_evidence(effects: Iterable[EffectRecord]) -> dict[str, JSON]:
    """Evidence for a person when an ending run meets effects nobody could reconcile."""
    return {
        "cancel_requested": True,
        "effects": [
            {
                "effect": e.key,
                "target": e.target,
                "operation": e.operation,
                "status": str(e.status),
                "attempts": e.attempts,
                "error": e.last_error,
            }
            for e in effects
        ],
    }
