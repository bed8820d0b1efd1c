"""``perdure demo gate``: the four recovery-gate cases of the seed article, through the real gate.

Each case is a checkpoint of a running run plus the evidence of one effect (key
``run-7:send``, 1 attempt of 3, a reconciler declared), given to
:func:`perdure.core.recovery.decide`, the function the runtime consults each time a step reaches
an effect:

* no effect recorded yet (and a ``planned`` one) → ``execute``;
* an unknown outcome (``ambiguous``, and ``executing`` left by a stopped process) →
  ``reconcile``;
* a ``confirmed`` effect → ``advance`` (its recorded result, no second call);
* an effect without an idempotency key → ``stop``.

Where perdure's gate differs from the article's, and why: ``docs/recovery.md``.
"""

from __future__ import annotations

import sys

import click

from perdure.core.effects import EffectStatus
from perdure.core.recovery import Action, Checkpoint, EffectEvidence, decide
from perdure.demos.cli import demo

KEY = "run-7:send"
CHECKPOINT = Checkpoint(
    run_id="run-7",
    tenant_id="default",
    workflow="send",
    workflow_version=1,
    state_schema=2,
    status="RUNNING",
    durability="sync",
)


def evidence(status: EffectStatus | None, key: str = KEY) -> EffectEvidence:
    return EffectEvidence(key, None if status is None else str(status), 1, 3, True)


CASES: dict[str, list[tuple[str, EffectEvidence, Action]]] = {
    "execute": [
        ("no effect recorded", evidence(None), Action.EXECUTE),
        ("planned", evidence(EffectStatus.PLANNED), Action.EXECUTE),
    ],
    "reconcile": [
        ("ambiguous", evidence(EffectStatus.AMBIGUOUS), Action.RECONCILE),
        ("executing, its process gone", evidence(EffectStatus.EXECUTING), Action.RECONCILE),
    ],
    "advance": [("confirmed", evidence(EffectStatus.CONFIRMED), Action.ADVANCE)],
    "missing_key_stopped": [
        ("planned, no key", evidence(EffectStatus.PLANNED, ""), Action.STOP),
        ("ambiguous, no key", evidence(EffectStatus.AMBIGUOUS, ""), Action.STOP),
    ],
}
"""The seed's four outcomes, each with the cases that must give it."""


def verdicts() -> dict[str, bool]:
    """Each of the four outcomes: True when every one of its cases gets the expected action."""
    return {
        name: all(decide(CHECKPOINT, e) is want for _, e, want in cases)
        for name, cases in CASES.items()
    }


@demo.command("gate")
@click.option("--explain", is_flag=True, help="Print each case and the gate's action first.")
def demo_gate(explain: bool) -> None:
    """Run the seed's four recovery-gate cases through perdure's recovery gate.

    Prints ``execute=true reconcile=true advance=true missing_key_stopped=true`` when the gate
    decides as the article's program does (exit 1 otherwise).
    """
    if explain:
        for name, cases in CASES.items():
            for label, e, want in cases:
                got = decide(CHECKPOINT, e)
                click.echo(f"{name:20} {label:28} key={e.key or '-':11} -> {got} (want {want})")
    found = verdicts()
    click.echo(" ".join(f"{name}={str(ok).lower()}" for name, ok in found.items()))
    if not all(found.values()):
        sys.exit(1)
