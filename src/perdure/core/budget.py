"""Per-run budgets (steps, cost, tokens) and the no-progress guard; pure.

A run's budget is stored as JSON on the run: the limits, what was used so far, what to do when
a limit is reached, and the guard's last (step, state hash) key with its repeat count. The
runtime charges one step per committed boundary; steps charge cost and tokens with
``ctx.charge``. Exhaustion is checked before each step, so the step that crossed a limit still
commits what it did, and no further step starts: the run goes to NEEDS_ATTENTION or FAILED.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from perdure.core.errors import DefinitionError

ESCALATE = frozenset({"needs_attention", "fail"})


@dataclass(frozen=True, slots=True)
class Budget:
    """Limits of one run. None means no limit. ``max_repeats`` stops a run that runs the same
    step with the same state that many times in a row (None disables the guard)."""

    steps: int | None = None
    cost: float | None = None
    tokens: int | None = None
    on_exhausted: str = "needs_attention"
    max_repeats: int | None = 5

    def __post_init__(self) -> None:
        for name in ("steps", "cost", "tokens"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise DefinitionError(f"budget {name} must be >= 0, got {value}")
        if self.on_exhausted not in ESCALATE:
            raise DefinitionError(
                f"budget on_exhausted={self.on_exhausted!r} is unknown",
                fix="use 'needs_attention' or 'fail'",
            )
        if self.max_repeats is not None and self.max_repeats < 2:
            raise DefinitionError("budget max_repeats must be >= 2 (or None to disable)")

    def to_json(self) -> dict[str, Any]:
        """The budget as stored on a new run."""
        return {
            "limits": {"steps": self.steps, "cost": self.cost, "tokens": self.tokens},
            "used": {"steps": 0, "cost": 0.0, "tokens": 0},
            "on_exhausted": self.on_exhausted,
            "max_repeats": self.max_repeats,
            "guard": None,
        }


def charged(
    budget: dict[str, Any], *, steps: int = 0, cost: float = 0, tokens: int = 0
) -> dict[str, Any]:
    """A copy of ``budget`` with the usage added."""
    used = dict(budget["used"])
    used["steps"] += steps
    used["cost"] = round(used["cost"] + cost, 10)
    used["tokens"] += tokens
    return {**budget, "used": used}


def exhausted(budget: dict[str, Any]) -> str | None:
    """The first limit reached ('steps', 'cost' or 'tokens'), or None."""
    for name in ("steps", "cost", "tokens"):
        limit = budget["limits"].get(name)
        if limit is not None and budget["used"][name] >= limit:
            return name
    return None


def guarded(budget: dict[str, Any], key: str) -> tuple[dict[str, Any], int]:
    """Record that a boundary ended with ``key`` (step + state hash); return the new budget and
    how many times in a row that key has now been seen."""
    last = budget.get("guard") or {}
    count = last.get("count", 0) + 1 if last.get("key") == key else 1
    return {**budget, "guard": {"key": key, "count": count}}, count


def remaining(budget: dict[str, Any]) -> dict[str, float | int | None]:
    """What is left of each limit (None for no limit)."""
    out: dict[str, float | int | None] = {}
    for name in ("steps", "cost", "tokens"):
        limit = budget["limits"].get(name)
        out[name] = None if limit is None else limit - budget["used"][name]
    return out


def extended(budget: dict[str, Any], more: Budget) -> dict[str, Any]:
    """A copy with ``more``'s limits added to the current ones (a person raising the budget),
    and the no-progress guard reset."""
    limits = dict(budget["limits"])
    for name in ("steps", "cost", "tokens"):
        extra = getattr(more, name)
        if extra is not None:
            limits[name] = (limits.get(name) or budget["used"][name]) + extra
    return {**budget, "limits": limits, "guard": None}
