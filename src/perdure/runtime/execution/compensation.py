"""Undoing a run's confirmed effects when it fails or is cancelled: newest first, each undo
itself an effect (key ``<effect key>/compensate``), so a crash in the middle repeats nothing."""

from __future__ import annotations

from perdure.core.effect_calls import Compensate
from perdure.core.effects import EffectRecord, EffectStatus, NewEffect
from perdure.core.errors import PerdureError
from perdure.core.model import JSON
from perdure.core.signals import Escalate
from perdure.runtime.execution.effect_runner import EffectRunner


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
