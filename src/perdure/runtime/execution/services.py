"""What every execution of a runtime shares, and how an execution reports why it stopped."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from perdure.core.clock import Clock
from perdure.core.effects import EffectMove, EffectPlan, EffectRecord
from perdure.core.model import RunStatus
from perdure.core.records import StopReason
from perdure.core.seal import Keyring
from perdure.core.serde import Limits
from perdure.runtime.aio import EventLoop
from perdure.runtime.artifacts import Artifacts
from perdure.runtime.execution.group_commit import Group, GroupCommitter
from perdure.runtime.execution.state_writes import APPEND_FROM
from perdure.runtime.leases import Heartbeat
from perdure.runtime.telemetry import Telemetry
from perdure.store.base import Store

SUGGESTIONS = {
    "ambiguous_effect": (
        "check at the provider whether the effect happened, then run "
        "`perdure effects resolve KEY --confirmed --receipt ID --result JSON --as YOU "
        "--reason WHY` (--result: what the provider returned, which the step receives) or "
        "`perdure effects resolve KEY --not-applied --as YOU --reason WHY`"
    ),
    "retries_exhausted": "fix the cause of the error, then `perdure resume RUN --app MODULE`",
    "step_raised": (
        "read the error and traceback, fix the code or its input, deploy, then "
        "`perdure resume RUN --app MODULE`: the run continues at this step"
    ),
    "invalid_outcome": "make the step return an outcome, deploy, then resume the run",
    "undeclared_transition": "add the step to next=[...] (or fix the goto), deploy, then resume",
    "budget_exhausted": "raise the budget (`perdure resume RUN --add-steps N ...`) or end the run",
    "no_progress": "the run repeats itself; patch the state or resume at another step",
    "state_too_large": (
        "keep large values out of the state (ctx.put_artifact, or a lazy field) or raise the "
        "limits (Runtime(limits=Limits(...))), deploy, then `perdure resume RUN --app MODULE`"
    ),
    "object_store_unavailable": (
        "make the artifact store reachable and writable again (its directory or bucket, "
        "endpoint, credentials), then `perdure resume RUN --app MODULE`"
    ),
    "artifact_missing": (
        "restore the object into the artifact store (its digest is in the evidence), then "
        "`perdure resume RUN --app MODULE`; or `perdure fork RUN --at STEP` from before it"
    ),
    "artifact_corrupt": (
        "restore the original bytes (the digest in the evidence names them), then "
        "`perdure resume RUN --app MODULE`; or `perdure fork RUN --at STEP` from before it"
    ),
}


@dataclass(frozen=True, slots=True)
class Stopped:
    """Why an execution stopped: ``ended`` (terminal), ``waiting`` (for an approval, a signal or
    a timer), ``retry_scheduled`` (sleeping until a retry), ``needs_attention``, ``released``
    (shutdown), ``lost`` (lease lost or run moved on), ``quarantined``, ``cancelled``, or
    ``store_error`` (the database failed; the lease is left to expire). ``status`` is the
    status the run was left in when the execution knows it (every ``ended`` stop does)."""

    reason: StopReason
    run_id: str
    status: RunStatus | None = None

    def describe(self) -> str:
        """The stop in words, with the run's final status when it ended: ``ended SUCCEEDED``."""
        return str(self.reason) if self.status is None else f"{self.reason} {self.status}"


@dataclass(frozen=True, slots=True)
class Services:
    """What every execution of a runtime shares."""

    store: Store
    clock: Clock
    heartbeat: Heartbeat
    shutdown: threading.Event
    keyring: Keyring | None
    limits: Limits
    loop: EventLoop
    artifacts: Artifacts
    effect_plans: Group[EffectPlan, EffectRecord]
    """Where executions record their effects' intents, grouped when they coincide."""
    effect_moves: Group[EffectMove, EffectRecord]
    """Where executions move their effects' records, grouped when they coincide."""
    telemetry: Telemetry = field(default_factory=Telemetry)
    group: GroupCommitter | None = None
    """Where executions' commits are grouped (None: each commits alone)."""
    append_from: int = APPEND_FROM
    """Size in bytes from which a state field that only grows is kept as a log."""
