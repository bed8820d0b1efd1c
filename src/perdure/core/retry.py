"""Retry policies: bounded, classified, with backoff and full jitter; validated when declared.

A policy applies to a step (``@step(retry=...)``) or to one effect (``ctx.effect(retry=...)``).
What is retried: exceptions of a class in ``retry_on``; otherwise failures that
:func:`perdure.core.failures.describe` finds transient (timeouts, connection errors, HTTP 408,
409, 425, 429 and 5xx) or whose kind is listed in ``retryable`` — never an exception of a class
in ``no_retry_on`` or of a kind in ``non_retryable``. A ``Retry-After`` the other side sent is
honoured: the wait is at least that long. Waiting is durable: the run releases
its lease and sleeps in the database until the delay is over, so it holds no thread and survives
restarts. When attempts or time run out the policy's ``on_exhausted`` decides:
``"needs_attention"`` (the default: a person looks, fixes, resumes), ``"fail"``, or the name of a
declared failure step to go to.

A policy is a frozen dataclass checked in ``__post_init__``: a bad value raises
:class:`perdure.core.errors.DefinitionError` naming the field and the allowed range, when the
module that declares it is imported. It needs no third-party package.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import NoReturn

from perdure.core.effects import PERMANENT_KINDS, TRANSIENT_KINDS
from perdure.core.errors import DefinitionError

MAX_ATTEMPTS = 1000
"""The largest ``max_attempts`` a policy accepts."""


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how patiently a failing step or effect is tried again.

    * ``max_attempts`` — calls in all, the first included (1 to 1000; default 3).
    * ``initial_delay`` — seconds before the second attempt (> 0; default 1).
    * ``max_delay`` — upper bound of one delay in seconds (>= ``initial_delay``; default 60).
    * ``multiplier`` — growth of the delay per attempt (>= 1; default 2).
    * ``jitter`` — full jitter: a uniform delay in [0, computed] (default True).
    * ``total_time`` — seconds from the first failure after which no retry starts (> 0 or None).
    * ``retryable`` — error kinds to retry (default: timeout, rate_limited,
      dependency_unavailable).
    * ``non_retryable`` — kinds never retried (default: invalid_request, permission_denied,
      policy_rejected); must not overlap ``retryable``.
    * ``retry_on`` — exception classes always retried (e.g. ``(httpx.ReadTimeout,)``).
    * ``no_retry_on`` — exception classes never retried, even when they look transient.
    * ``on_exhausted`` — ``"needs_attention"`` (default), ``"fail"`` or a declared failure step.
    """

    max_attempts: int = 3
    initial_delay: float = 1.0
    max_delay: float = 60.0
    multiplier: float = 2.0
    jitter: bool = True
    total_time: float | None = None
    retryable: frozenset[str] = TRANSIENT_KINDS
    non_retryable: frozenset[str] = PERMANENT_KINDS
    retry_on: tuple[type[BaseException], ...] = ()
    no_retry_on: tuple[type[BaseException], ...] = ()
    on_exhausted: str = "needs_attention"

    def __post_init__(self) -> None:
        if not _is_int(self.max_attempts) or not 1 <= self.max_attempts <= MAX_ATTEMPTS:
            _refuse("max_attempts", self.max_attempts, f"an integer from 1 to {MAX_ATTEMPTS}")
        self._number("initial_delay", minimum=0.0, inclusive=False)
        self._number("max_delay", minimum=0.0, inclusive=False)
        self._number("multiplier", minimum=1.0, inclusive=True)
        if self.total_time is not None:
            self._number("total_time", minimum=0.0, inclusive=False)
        if not isinstance(self.jitter, bool):
            _refuse("jitter", self.jitter, "True or False")
        if self.max_delay < self.initial_delay:
            _refuse(
                "max_delay",
                self.max_delay,
                f"a number >= initial_delay ({self.initial_delay:g} seconds)",
            )
        retryable = self._kinds("retryable")
        non_retryable = self._kinds("non_retryable")
        overlap = retryable & non_retryable
        if overlap:
            raise DefinitionError(
                f"retry policy: kinds {sorted(overlap)} are both retryable and non_retryable",
                fix="list each error kind in at most one of retryable and non_retryable",
            )
        self._classes("retry_on")
        self._classes("no_retry_on")
        if not isinstance(self.on_exhausted, str) or not self.on_exhausted:
            _refuse("on_exhausted", self.on_exhausted, "'fail', 'needs_attention' or a step name")

    def _number(self, name: str, *, minimum: float, inclusive: bool) -> None:
        """Check that field ``name`` is a finite number above ``minimum``; store it as float."""
        value = getattr(self, name)
        bound = f">= {minimum:g}" if inclusive else f"> {minimum:g}"
        if isinstance(value, bool) or not isinstance(value, int | float):
            _refuse(name, value, f"a number of seconds {bound}" if name != "multiplier" else bound)
        ok = value >= minimum if inclusive else value > minimum
        if not ok or not math.isfinite(value):
            what = "a finite number" if name == "multiplier" else "a finite number of seconds"
            _refuse(name, value, f"{what} {bound}")
        object.__setattr__(self, name, float(value))

    def _kinds(self, name: str) -> frozenset[str]:
        """Check that field ``name`` holds error kinds (strings); store them as a frozenset."""
        value: object = getattr(self, name)
        if isinstance(value, str) or not isinstance(value, Iterable):
            _refuse(name, value, "a set of error kinds such as {'timeout', 'rate_limited'}")
        items = tuple(value)
        kinds = frozenset(k for k in items if isinstance(k, str) and k)
        if len(kinds) != len(frozenset(items)):
            _refuse(name, value, "a set of non-empty strings (error kinds)")
        object.__setattr__(self, name, kinds)
        return kinds

    def _classes(self, name: str) -> None:
        """Check that field ``name`` holds exception classes; store them as a tuple."""
        value: object = getattr(self, name)
        items = (value,) if isinstance(value, type) else value
        if not isinstance(items, Iterable) or isinstance(items, str):
            _refuse(name, value, "a tuple of exception classes such as (TimeoutError,)")
        found = tuple(items)
        for item in found:
            if not (isinstance(item, type) and issubclass(item, BaseException)):
                _refuse(name, value, "a tuple of exception classes such as (TimeoutError,)")
        object.__setattr__(self, name, found)

    def allows(self, kind: str, *, transient: bool = False) -> bool:
        """True when failures of ``kind`` (``transient`` as classified) may be retried."""
        if kind in self.non_retryable:
            return False
        return kind in self.retryable or transient

    def retries(self, exc: BaseException, kind: str, *, transient: bool) -> bool:
        """True when exception ``exc`` (classified as ``kind``) may be retried: ``no_retry_on``
        wins, then ``retry_on``, then the kinds (see :meth:`allows`)."""
        if self.no_retry_on and isinstance(exc, self.no_retry_on):
            return False
        if self.retry_on and isinstance(exc, self.retry_on):
            return True
        return self.allows(kind, transient=transient)

    def delay(self, attempt: int, rng: random.Random, retry_after: float | None = None) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        if retry_after is not None and retry_after >= 0:
            return retry_after  # the other side said when; never earlier
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
        retryable: bool | None = None,
    ) -> datetime | None:
        """When to try again after failed attempt ``attempt``, or None when not to retry
        (not retryable, attempts used up, or the total time limit would be passed).
        ``retryable`` is the caller's verdict from :meth:`retries` (None: judge by ``kind``)."""
        allowed = self.allows(kind) if retryable is None else retryable
        if not allowed or attempt >= self.max_attempts:
            return None
        at = now + timedelta(seconds=self.delay(attempt, rng, retry_after))
        if self.total_time is not None and at > first_failure + timedelta(seconds=self.total_time):
            return None
        return at


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _refuse(name: str, value: object, allowed: str) -> NoReturn:
    raise DefinitionError(
        f"retry policy: {name}={value!r} is not allowed",
        fix=f"give {name} {allowed}",
    )
