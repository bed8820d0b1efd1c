"""Settling a run's effects when it ends early: undoing its confirmed effects when it fails or
is cancelled (newest first, each undo itself an effect, key ``<effect key>/compensate``, so a
crash in the middle repeats nothing), and, for a cancel, marking what was never sent and
finding what is still in doubt (see :mod:`perdure.core.settling`)."""

from __future__ import annotations

from dataclasses import dataclass

from perdure.core.effect_calls import Compensate
from perdure.core.effects import EffectRecord, EffectStatus, NewEffect
from perdure.core.errors import PerdureError
from perdure.core.model import JSON
from perdure.core.settling import NOT_SENT, in_doubt, kept, not_sent
from perdure.core.signals import Escalate
from perdure.runtime.execution.effect_runner import EffectRunner

INTERRUPTED: dict[str, JSON] = {
    "class": "unknown_outcome",
    "kind": "interrupted",
    "message": "the call was cut short and nobody could tell whether it happened",
}


@dataclass(frozen=True, slots=True)
class Settled:
    """How a cancelled run's effects were settled: ``doubt`` lists those nobody could tell
    about (the run must not end: a person decides); otherwise ``unresolved`` compensations and
    the ``kept`` effects (applied, without a compensator) go into the run's error."""

    doubt: tuple[EffectRecord, ...] = ()
    unresolved: tuple[dict[str, JSON], ...] = ()
    kept: tuple[dict[str, JSON], ...] = ()


class Compensation:
    """Compensates the effects of one execution's run through its effect runner."""

    def __init__(self, runner: EffectRunner) -> None:
        self.runner = runner

    def all(self) -> list[dict[str, JSON]]:
        """Compensate the run's confirmed effects that declared a compensator, newest first.

        Each compensation is itself an effect (key ``<effect key>/compensate``), so it is
        crash-safe; the original then becomes ``compensated``. Returns what could not be
        compensated (rejected or unknown outcome), as evidence for the run's error.
        """
        unresolved: list[dict[str, JSON]] = []
        run = self.runner.claim.run
        done = self.runner.store.list_effects(run.tenant_id, run_id=run.run_id)
        for original in reversed(done):
            if original.status is not EffectStatus.CONFIRMED or not original.compensator:
                continue
            fn = self.runner.workflow.compensators.get(original.compensator)
            if fn is None:
                unresolved.append({"effect": original.key, "reason": "compensator_not_loaded"})
                continue
            try:
                self._one(original, fn)
            except (Escalate, PerdureError) as exc:
                unresolved.append({"effect": original.key, "reason": str(exc)})
        return unresolved

    def effects(self) -> list[EffectRecord]:
        """The run's effects, oldest first."""
        run = self.runner.claim.run
        return self.runner.store.list_effects(run.tenant_id, run_id=run.run_id)

    def settle(self) -> Settled:
        """Before a cancelled run ends: effects still in doubt are made ``ambiguous`` and
        returned (nothing else is touched); else every effect never sent becomes ``rejected``
        (:data:`~perdure.core.settling.NOT_SENT`), the confirmed ones are compensated, and
        those without a compensator are reported as kept."""
        doubt = in_doubt(self.effects())
        if doubt:
            moves = self.runner.outcomes
            return Settled(
                doubt=tuple(
                    moves.move(e, EffectStatus.AMBIGUOUS, error=INTERRUPTED)
                    if e.status is EffectStatus.EXECUTING
                    else e
                    for e in doubt
                )
            )
        for effect in not_sent(self.effects()):
            self.runner.outcomes.move(effect, EffectStatus.REJECTED, error=NOT_SENT)
        unresolved = self.all()
        return Settled(unresolved=tuple(unresolved), kept=tuple(kept(self.effects())))

    def _one(self, original: EffectRecord, fn: Compensate) -> None:
        new = NewEffect(
            key=f"{original.key}/compensate",
            step=original.step,
            step_seq=original.step_seq,
            name=f"{original.name}.compensate",
            target=original.target,
            operation=f"compensate:{original.operation}",
            request_hash=original.request_hash,
            request=original.request,
        )
        self.runner.drive(new, lambda request, key: fn(request, key, original.result), None, None)
        self.runner.outcomes.move(original, EffectStatus.COMPENSATED)
