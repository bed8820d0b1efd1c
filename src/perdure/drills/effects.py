"""The effects the effect drills aim at: every effect the reference run made (its model calls,
its side-effecting tools ``tool.<call id>``, its ``ctx.effect`` calls), or those that
``--effect PATTERN`` names, each with a name that is unique in the run.

An effect's own name repeats across steps (every step's first model call is ``model.1``), so an
effect is named by its step and its name, ``act/tool.call_1``; when the step runs more than once
the run's step number is added, ``think#3/model.1`` (steps numbered from 1, as ``perdure
history`` numbers them). A drill aims its crash or fault point at that one occurrence
(``model.1@think#3``: see :mod:`perdure.runtime.crashpoints`).

Child runs' effects are not listed: a child is a run of its own, started by a worker; drill the
child workflow itself (``perdure drills MODULE:CHILD``).
"""

from __future__ import annotations

import fnmatch
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from perdure.core.effects import EffectRecord
from perdure.core.errors import ConfigError
from perdure.runtime.crashpoints import effect_target

COMPENSATION = ".compensate"
"""The suffix of a compensation's effect name (not drilled: it runs only when undoing)."""


@dataclass(frozen=True, slots=True)
class DrilledEffect:
    """One effect of the reference run: its ``label`` (unique in the run), effect ``name``, the
    ``step`` it belongs to, the run's step number ``seq`` and its ``target`` (``model`` for a
    model call, ``tool`` for a side-effecting tool)."""

    label: str
    name: str
    step: str
    seq: int
    target: str

    @property
    def point(self) -> str:
        """The name part of a crash or fault point that selects this occurrence only."""
        return effect_target(self.name, self.step, self.seq)

    @property
    def slug(self) -> str:
        """The label as a folder name."""
        return "".join(c if c.isalnum() or c in "-._" else "-" for c in self.label)

    def named_by(self, pattern: str) -> bool:
        """True if ``pattern`` (fnmatch) matches the label or ``step/name``."""
        plain = f"{self.step}/{self.name}"
        return fnmatch.fnmatchcase(self.label, pattern) or fnmatch.fnmatchcase(plain, pattern)


def labelled(records: Sequence[EffectRecord], steps: Sequence[str]) -> list[DrilledEffect]:
    """The run's effects (``records``, oldest first; compensations left out) with their labels;
    ``steps`` are the run's committed steps, in order."""
    effects = [r for r in records if not r.name.endswith(COMPENSATION)]
    runs = Counter(steps)
    seqs: dict[str, set[int]] = {}
    for r in effects:
        seqs.setdefault(r.step, set()).add(r.step_seq)
    out = []
    for r in effects:
        again = runs[r.step] > 1 or len(seqs[r.step]) > 1
        where = f"{r.step}#{r.step_seq}" if again else r.step
        out.append(DrilledEffect(f"{where}/{r.name}", r.name, r.step, r.step_seq, r.target))
    return out


def chosen(effects: Sequence[DrilledEffect], patterns: Sequence[str]) -> list[DrilledEffect]:
    """The effects one of ``patterns`` names (all of them when there is none); a pattern that
    names no effect is a :class:`ConfigError` that lists the run's effects."""
    if not patterns:
        return list(effects)
    idle = [p for p in patterns if not any(e.named_by(p) for e in effects)]
    if idle:
        made = ", ".join(e.label for e in effects) or "none"
        raise ConfigError(
            f"--effect {', '.join(idle)} names no effect of the reference run (it made: {made})",
            fix="pass a pattern of STEP/NAME, e.g. 'act/tool.*' or '*/model.*'",
        )
    return [e for e in effects if any(e.named_by(p) for p in patterns)]
