"""The recovery gate's table: the seed's four cases, every status x mode, and refusals."""

from __future__ import annotations

import itertools

import pytest

from perdure.core.effects import EffectStatus
from perdure.core.model import Durability, RunStatus
from perdure.core.recovery import Action, Checkpoint, EffectEvidence, GateRefusal, decide


def checkpoint(status: str = "RUNNING", mode: str = "sync", **kw: object) -> Checkpoint:
    base: dict[str, object] = {
        "run_id": "run-7",
        "tenant_id": "t",
        "workflow": "refund-review",
        "workflow_version": 3,
        "state_schema": 2,
        "status": status,
        "durability": mode,
    }
    base.update(kw)
    return Checkpoint(**base)  # type: ignore[arg-type]


def evidence(
    status: str | None,
    key: str = "run-7:send",
    attempts: int = 1,
    max_attempts: int = 3,
    reconciler: bool = True,
) -> EffectEvidence:
    return EffectEvidence(key, status, attempts, max_attempts, reconciler)


@pytest.mark.parametrize(
    ("status", "key", "expected"),
    [
        ("planned", "run-7:send", Action.EXECUTE),
        ("ambiguous", "run-7:send", Action.RECONCILE),
        ("confirmed", "run-7:send", Action.ADVANCE),
        ("planned", "", Action.STOP),
    ],
)
def test_the_four_cases_of_the_seed(status: str, key: str, expected: Action) -> None:
    assert decide(checkpoint(), evidence(status, key)) is expected


EXPECTED_RUNNING = {
    None: Action.EXECUTE,
    EffectStatus.PLANNED: Action.EXECUTE,
    EffectStatus.EXECUTING: Action.RECONCILE,
    EffectStatus.AMBIGUOUS: Action.RECONCILE,
    EffectStatus.CONFIRMED: Action.ADVANCE,
    EffectStatus.REJECTED: Action.ADVANCE,
    EffectStatus.COMPENSATED: Action.ADVANCE,
}


@pytest.mark.parametrize(
    ("run_status", "mode", "effect_status"),
    list(itertools.product(list(RunStatus), list(Durability), [None, *EffectStatus])),
)
def test_every_status_and_mode_has_exactly_one_action(
    run_status: RunStatus, mode: Durability, effect_status: EffectStatus | None
) -> None:
    action = decide(
        checkpoint(str(run_status), str(mode)),
        evidence(None if effect_status is None else str(effect_status)),
    )
    if run_status in (RunStatus.RUNNING, RunStatus.CANCEL_REQUESTED):
        assert action is EXPECTED_RUNNING[effect_status]
    else:
        assert action is Action.STOP, "only a running (or cancelling) run may touch effects"


def test_an_unknown_outcome_without_a_reconciler_stops() -> None:
    for status in ("executing", "ambiguous"):
        assert decide(checkpoint(), evidence(status, reconciler=False)) is Action.STOP


def test_a_used_up_attempt_budget_stops() -> None:
    assert decide(checkpoint(), evidence("planned", attempts=3, max_attempts=3)) is Action.STOP


@pytest.mark.parametrize(
    ("cp", "ev", "message"),
    [
        (checkpoint(run_id=""), evidence("planned"), "identity"),
        (checkpoint(workflow=""), evidence("planned"), "identity"),
        (checkpoint(state_schema=0), evidence("planned"), "identity"),
        (checkpoint(workflow_version=0), evidence("planned"), "identity"),
        (checkpoint(), evidence("planned", attempts=-1), "attempt budget"),
        (checkpoint(), evidence("planned", max_attempts=0), "attempt budget"),
        (checkpoint(mode="eventually"), evidence("planned"), "durability"),
        (checkpoint(status="running"), evidence("planned"), "run status"),
        (checkpoint(), evidence("sent"), "effect status"),
    ],
)
def test_incomplete_or_invalid_evidence_is_refused(
    cp: Checkpoint, ev: EffectEvidence, message: str
) -> None:
    with pytest.raises(GateRefusal, match=message):
        decide(cp, ev)
