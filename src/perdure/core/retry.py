"""Retry policies: bounded, classified, with backoff and full jitter; validated when declared.

A policy applies to a step (``@step(retry=...)``) or to one effect (``ctx.effect(retry=...)``).
Only errors whose kind the policy lists as retryable are retried; a ``Retry-After`` the provider
sent wins over the computed delay (capped by ``max_delay``). Waiting is durable: the run releases
its lease and sleeps in the database until the delay is over, so it holds no thread and survives
restarts. When attempts or time run out the policy's ``on_exhausted`` decides: ``"fail"``,
``"needs_attention"``, or the name of a declared failure step to go to.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta

from pydantic import BaseModel, ConfigDict, Field, model_validator

from perdure.core.effects import PERMANENT_KINDS, TRANSIENT_KINDS


class RetryPolicy(BaseModel):
    """How often and how patiently a failing step or effect is tried again."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_attempts: int = Field(3, ge=1, le=1000, description="Calls in all, the first included.")
    initial_delay: float = Field(1.0, gt=0, description="Seconds before the second attempt.")
    max_delay: float = Field(60.0, gt=0, description="Upper bound of one delay, in seconds.")
    multiplier: float = Field(2.0, ge=1.0, description="Growth of the delay per attempt.")
    jitter: bool = Field(True, description="Full jitter: a uniform delay in [0, computed].")
    total_time: float | None = Field(
        None, gt=0, description="Seconds from the first failure after which no retry starts."
    )
    retryable: frozenset[str] = Field(TRANSIENT_KINDS, description="Error kinds to retry.")
    non_retryable: frozenset[str] = Field(PERMANENT_KINDS, description="Never retried.")
    on_exhausted: str = Field(
        "fail", description='"fail", "needs_attention" or a failure step to go to.'
    )

    @model_validator(mode="after")
    def _consistent(self) -> RetryPolicy:
        if self.max_delay < self.initial_delay:
            raise ValueError("max_delay must be >= initial_delay")
        overlap = self.retryable & self.non_retryable
        if overlap:
            raise ValueError(f"kinds {sorted(overlap)} are both retryable and non-retryable")
        if not self.on_exhausted:
            raise ValueError("on_exhausted must be 'fail', 'needs_attention' or a step name")
        return self

    def allows(self, kind: str) -> bool:
        """True when errors of ``kind`` may be retried under this policy."""
        return kind in self.retryable and kind not in self.non_retryable

    def delay(self, attempt: int, rng: random.Random, retry_after: float | None = None) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        if retry_after is not None and retry_after >= 0:
            return min(retry_after, self.max_delay)
        computed = min(self.initial_delay * self.multiplier ** (attempt - 1), self.max_delay)
        return rng.uniform(0, computed) if self.jitter else computed

    def next_try(
        self,
        *,
        attempt: int,
        kind: str,
        first_failure: datetime,
        now: datetime,
        rng: random.Random,
        retry_after: float | None = None,
    ) -> datetime | None:
        """When to try again after failed attempt ``attempt``, or None when not to retry
        (kind not retryable, attempts used up, or the total time limit would be passed)."""
        if not self.allows(kind) or attempt >= self.max_attempts:
            return None
        at = now + timedelta(seconds=self.delay(attempt, rng, retry_after))
        if self.total_time is not None and at > first_failure + timedelta(seconds=self.total_time):
            return None
        return at
