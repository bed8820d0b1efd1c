"""``perdure demo gate``: the seed's four recovery-gate cases through the real gate, and the
places where perdure's gate decides differently from the seed's program (docs/recovery.md)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from perdure.core.effects import EffectStatus
from perdure.core.recovery import Action, decide
from perdure.demos.gate import CHECKPOINT, evidence
from tests.conftest import run_cli


def test_the_demo_prints_the_seeds_line(tmp_path: Path) -> None:
    out = run_cli(f"sqlite:///{tmp_path / 'unused.db'}", "demo", "gate")
    assert out.returncode == 0, out.stderr
    assert out.stdout == "execute=true reconcile=true advance=true missing_key_stopped=true\n"
    explained = run_cli(f"sqlite:///{tmp_path / 'unused.db'}", "demo", "gate", "--explain")
    assert explained.stdout.count("->") == 7 and "(want stop)" in explained.stdout


def test_where_our_gate_differs_from_the_seeds() -> None:
    # the seed advances a confirmed effect without a key; we stop: no identity, no replay
    assert decide(CHECKPOINT, evidence(EffectStatus.CONFIRMED, "")) is Action.STOP
    # the seed stops when no effect is recorded; we execute: the intent is written before the
    # call, so no record means no call can have happened
    assert decide(CHECKPOINT, evidence(None)) is Action.EXECUTE
    # an unknown outcome without a reconciler is stopped (the seed reconciles regardless)
    no_reconciler = replace(evidence(EffectStatus.AMBIGUOUS), has_reconciler=False)
    assert decide(CHECKPOINT, no_reconciler) is Action.STOP
    # a run that waits (for a person, a signal) is not runnable: stop
    waiting = replace(CHECKPOINT, status="WAITING_APPROVAL")
    assert decide(waiting, evidence(EffectStatus.PLANNED)) is Action.STOP
    # a cancel in progress is runnable: compensation needs the same gate
    cancelling = replace(CHECKPOINT, status="CANCEL_REQUESTED")
    assert decide(cancelling, evidence(EffectStatus.CONFIRMED)) is Action.ADVANCE
    # rejected and compensated effects replay their recorded outcome
    assert decide(CHECKPOINT, evidence(EffectStatus.REJECTED)) is Action.ADVANCE
    # attempts used up: stop (as the seed)
    spent = replace(evidence(EffectStatus.PLANNED), attempts=3)
    assert decide(CHECKPOINT, spent) is Action.STOP
