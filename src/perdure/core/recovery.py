"""The recovery gate: from a run checkpoint and an effect record to exactly one action.

Pure and total: every combination of inputs yields one :class:`Action` or a
:class:`GateRefusal` naming what is wrong with the evidence. The runtime consults it each time a
step reaches an effect, so a re-executed step never repeats a confirmed call and never resends
one whose outcome is unknown.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from perdure.core.effects import EffectStatus
from perdure.core.errors import PerdureError
from perdure.core.model import TERMINAL, Durability, RunStatus


class Action(StrEnum):
    """``execute`` the call (same key), ``advance`` with the recorded outcome, ``reconcile``
    with the provider, or ``stop`` and hand the run to a person."""

    EXECUTE = "execute"
    ADVANCE = "advance"
    RECONCILE = "reconcile"
    STOP = "stop"


class GateRefusal(PerdureError):
    """The checkpoint or effect evidence is incomplete or invalid; nothing may be executed."""

    code = "recovery_refused"
    fix = "repair the run's record (identity, attempt budget, durability mode) before resuming"


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """What the gate needs to know about the run."""

    run_id: str
    tenant_id: str
    workflow: str
    workflow_version: int
    state_schema: int
    status: str
    durability: str


@dataclass(frozen=True, slots=True)
class EffectEvidence:
    """What the gate needs to know about the effect (``status`` None: no record yet)."""

    key: str
    status: str | None
    attempts: int
    max_attempts: int
    has_reconciler: bool


_RUNNABLE = {RunStatus.RUNNING, RunStatus.CANCEL_REQUESTED}


def decide(checkpoint: Checkpoint, effect: EffectEvidence) -> Action:
    """The one safe action for ``effect`` given ``checkpoint``.

    Refuses (raises :class:`GateRefusal`) a checkpoint with incomplete identity, an invalid
    attempt budget, an unknown durability mode, an unknown run status or an unknown effect
    status.
    """
    if not (checkpoint.run_id and checkpoint.tenant_id and checkpoint.workflow):
        raise GateRefusal("checkpoint identity is incomplete (run, tenant or workflow missing)")
    if checkpoint.workflow_version < 1 or checkpoint.state_schema < 1:
        raise GateRefusal("checkpoint identity is incomplete (workflow or schema version)")
    if effect.attempts < 0 or effect.max_attempts < 1:
        raise GateRefusal(
            f"invalid attempt budget: {effect.attempts} attempts of {effect.max_attempts}"
        )
    if checkpoint.durability not in set(Durability):
        raise GateRefusal(f"unknown durability mode {checkpoint.durability!r}")
    if checkpoint.status not in set(RunStatus):
        raise GateRefusal(f"unknown run status {checkpoint.status!r}")
    status = RunStatus(checkpoint.status)
    if status in TERMINAL or status not in _RUNNABLE:
        return Action.STOP
    if effect.status is not None and effect.status not in set(EffectStatus):
        raise GateRefusal(f"unknown effect status {effect.status!r}")
    if not effect.key:
        return Action.STOP
    match effect.status:
        case None | EffectStatus.PLANNED:
            return Action.EXECUTE if effect.attempts < effect.max_attempts else Action.STOP
        case EffectStatus.EXECUTING | EffectStatus.AMBIGUOUS:
            return Action.RECONCILE if effect.has_reconciler else Action.STOP
        case _:
            return Action.ADVANCE
