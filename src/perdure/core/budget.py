"""Per-run budgets (steps, cost, tokens) and the no-progress guard; pure.

A :class:`Budget` is what a workflow or a start declares; a :class:`BudgetState` is what a run
carries (stored as JSON on the run): the limits, what was used so far, what to do when a limit
is reached, and the guard's last (step, state hash) key with its repeat count. The
runtime charges one step per committed boundary; steps charge cost and tokens with
``ctx.charge``. Exhaustion is checked before each step, so the step that crossed a limit still
commits what it did, and no further step starts: the run goes to NEEDS_ATTENTION or FAILED.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from perdure.core.errors import DefinitionError
from perdure.core.values import JSON

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
            if value is None:
                continue
            kind = (int, float) if name == "cost" else (int,)
            if isinstance(value, bool) or not isinstance(value, kind) or math.isnan(value):
                raise DefinitionError(
                    f"budget {name} must be a number, not {value!r}"[:200],
                    fix=f"give {name} as a number >= 0",
                )
            if value < 0 or math.isinf(value):
                raise DefinitionError(f"budget {name} must be a finite number >= 0, got {value}")
        if self.on_exhausted not in ESCALATE:
            raise DefinitionError(
                f"budget on_exhausted={self.on_exhausted!r} is unknown",
                fix="use 'needs_attention' or 'fail'",
            )
        if self.max_repeats is not None and self.max_repeats < 2:
            raise DefinitionError("budget max_repeats must be >= 2 (or None to disable)")

    def start(self) -> BudgetState:
        """The budget state of a new run: these limits, nothing used."""
        return BudgetState(
            limits=Usage(self.steps, self.cost, self.tokens),
            used=Usage(0, 0.0, 0),
            on_exhausted=self.on_exhausted,
            max_repeats=self.max_repeats,
        )


LIMITS = ("steps", "cost", "tokens")


@dataclass(frozen=True, slots=True)
class Usage:
    """Steps, cost and tokens: a run's limits (None: no limit) or what it used."""

    steps: int | None = None
    cost: float | None = None
    tokens: int | None = None

    def to_json(self) -> dict[str, JSON]:
        """The figures as a JSON object."""
        return {"steps": self.steps, "cost": self.cost, "tokens": self.tokens}

    @classmethod
    def from_json(cls, data: Any) -> Usage:
        """Read figures written by :meth:`to_json` (missing ones are None)."""
        data = data if isinstance(data, dict) else {}
        return cls(data.get("steps"), data.get("cost"), data.get("tokens"))


@dataclass(frozen=True, slots=True)
class Guard:
    """The no-progress guard's memory: the last (step, state hash) key and how many boundaries
    in a row ended with it."""

    key: str
    count: int


@dataclass(frozen=True, slots=True)
class BudgetState:
    """A run's budget: its ``limits``, what it ``used`` so far, what to do when a limit is
    reached (``on_exhausted``), and the no-progress guard (``max_repeats``, ``guard``)."""

    limits: Usage
    used: Usage
    on_exhausted: str = "needs_attention"
    max_repeats: int | None = 5
    guard: Guard | None = None

    def charged(self, *, steps: int = 0, cost: float = 0, tokens: int = 0) -> BudgetState:
        """A copy with the usage added."""
        used = Usage(
            (self.used.steps or 0) + steps,
            round((self.used.cost or 0.0) + cost, 10),
            (self.used.tokens or 0) + tokens,
        )
        return replace(self, used=used)

    def exhausted(self) -> str | None:
        """The first limit reached ('steps', 'cost' or 'tokens'), or None."""
        for name in LIMITS:
            limit = getattr(self.limits, name)
            if limit is not None and (getattr(self.used, name) or 0) >= limit:
                return name
        return None

    def guarded(self, key: str) -> BudgetState:
        """Record that a boundary ended with ``key`` (step + state hash)."""
        same = self.guard is not None and self.guard.key == key
        count = self.guard.count + 1 if same and self.guard is not None else 1
        return replace(self, guard=Guard(key, count))

    def repeating(self) -> bool:
        """True when the guard has seen the same key ``max_repeats`` times in a row."""
        return bool(self.max_repeats and self.guard and self.guard.count >= self.max_repeats)

    def remaining(self) -> dict[str, float | int | None]:
        """What is left of each limit (None for no limit)."""
        out: dict[str, float | int | None] = {}
        for name in LIMITS:
            limit = getattr(self.limits, name)
            out[name] = None if limit is None else limit - (getattr(self.used, name) or 0)
        return out

    def extended(self, more: Budget) -> BudgetState:
        """A copy with ``more``'s limits added to the current ones (a person raising the
        budget), and the no-progress guard reset."""
        raised = {}
        for name in LIMITS:
            extra = getattr(more, name)
            current = getattr(self.limits, name)
            base = current if current is not None else (getattr(self.used, name) or 0)
            raised[name] = current if extra is None else base + extra
        return replace(self, limits=Usage(**raised), guard=None)

    def to_json(self) -> dict[str, JSON]:
        """The budget as stored on the run."""
        guard = None if self.guard is None else {"key": self.guard.key, "count": self.guard.count}
        return {
            "limits": self.limits.to_json(),
            "used": self.used.to_json(),
            "on_exhausted": self.on_exhausted,
            "max_repeats": self.max_repeats,
            "guard": guard,
        }

    @classmethod
    def from_json(cls, data: Any) -> BudgetState | None:
        """Read a budget written by :meth:`to_json` (None stays None)."""
        if not isinstance(data, dict):
            return None
        guard = data.get("guard")
        last = Guard(str(guard["key"]), int(guard["count"])) if isinstance(guard, dict) else None
        return cls(
            limits=Usage.from_json(data.get("limits")),
            used=Usage.from_json(data.get("used")),
            on_exhausted=str(data.get("on_exhausted", "needs_attention")),
            max_repeats=data.get("max_repeats"),
            guard=last,
        )
