"""Traces, logs and measurements of runs, steps, effects and commits.

Every execution reports to its runtime's :class:`Telemetry`: it logs through the stdlib
logger ``perdure`` with the fields ``run_id``, ``tenant``, ``workflow``, ``step``, ``attempt``
and ``fence`` (see :mod:`perdure.runtime.logs` for a JSON format); when ``opentelemetry-api``
is installed it opens spans ``perdure.run``, ``perdure.step`` and ``perdure.effect`` with those
attributes (exporting them is the application's choice: without an SDK they cost nothing);
and it tells each registered :class:`Observer` (the Prometheus metrics do this) how long a step
took and how it ended, each retry, commit, claim and lost lease.

A trace context given at start (or the caller's current span) is kept with the run; the
``perdure.run`` span of whichever worker later runs it is a child of that context. A child run
(``ctx.spawn``) keeps the trace of the step that started it.

A step or an effect that fails sets its span's status to ERROR with an exception event: an
exception the step raised, an escalation (the run goes to a person or fails: the event names
the reason), a failure the workflow returned, a retry. A model call's effect span carries the
OpenTelemetry GenAI attributes (``gen_ai.operation.name``, ``gen_ai.request.model``,
``gen_ai.usage.input_tokens`` and ``output_tokens``, ``gen_ai.response.finish_reasons``).
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any, Protocol

from perdure.core.chat import MODEL_TARGET
from perdure.core.model import Run
from perdure.core.signals import Cancelled, Escalate, RetryLater

log = logging.getLogger("perdure")


def _otel() -> tuple[Any, Any] | None:
    """``(opentelemetry.trace, opentelemetry.propagate)`` once the application has imported
    ``opentelemetry.trace`` (it must, to set a tracer provider), else None: a process that
    does not trace never imports OpenTelemetry (an optional dependency) at all."""
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None:
        return None
    try:
        from opentelemetry import propagate
    except ImportError:  # pragma: no cover - a broken install
        return None
    return trace, propagate


class Observer(Protocol):
    """What an execution reports, as it happens (called on the worker's threads)."""

    def step_finished(self, run: Run, step: str, outcome: str, seconds: float) -> None:
        """A step ended with ``outcome`` (a step outcome, ``retry``, ``escalated``,
        ``cancelled`` or ``error``) after ``seconds``."""
        ...

    def retried(self, run: Run, step: str) -> None:
        """A failed step was scheduled to run again."""
        ...

    def committed(self, run: Run, boundaries: int, seconds: float) -> None:
        """A step-boundary commit of ``boundaries`` boundaries took ``seconds``."""
        ...

    def grouped(self, runs: int) -> None:
        """One commit transaction carried the boundaries of ``runs`` runs (group commit)."""
        ...

    def claimed(self, run: Run, takeover: bool) -> None:
        """A run was claimed; ``takeover`` when it was taken from another owner whose lease
        had expired."""
        ...

    def lease_lost(self, run: Run) -> None:
        """An execution lost its run to another owner (or to a cancel) and stopped."""
        ...


def fields_of(run: Run, step: str | None = None, attempt: int | None = None) -> dict[str, Any]:
    """The fields every log record and span of a run carries."""
    found: dict[str, Any] = {
        "run_id": run.run_id,
        "tenant": run.tenant_id,
        "workflow": run.workflow,
        "fence": run.fence,
    }
    if step is not None:
        found["step"] = step
    if attempt is not None:
        found["attempt"] = attempt
    return found


def tracing() -> bool:
    """True when an OpenTelemetry tracer provider is set (not the API's default proxy)."""
    otel = _otel()
    if otel is None:
        return False
    trace = otel[0]
    provider = trace.get_tracer_provider()
    return not isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider)


def current_trace() -> dict[str, str] | None:
    """The W3C trace context of the caller's current span, if tracing is on."""
    otel = _otel()
    if otel is None or not tracing():
        return None
    carrier: dict[str, str] = {}
    otel[1].inject(carrier)
    return carrier or None


FAILED_OUTCOMES = frozenset({"fail", "retry", "escalated", "error"})
"""Step outcomes that set the step span's status to ERROR."""


@dataclass
class StepReport:
    """Filled in by the execution while a step runs: how it ended, and the failure it ended
    with (a workflow's ``fail``) when no exception says it."""

    outcome: str = "error"
    failure: str | None = None


@dataclass
class EffectReport:
    """Filled in by the effect runner while a call runs: what it returned."""

    result: Any = None


def _failed(span: Any, exc: BaseException | None, description: str) -> None:
    """Mark ``span`` failed: status ERROR, and an exception event for ``exc`` (the cause an
    escalation carries, when it has one; control-flow signals are not ``Exception``s, so the
    SDK would not record them by itself)."""
    from opentelemetry.trace import Status, StatusCode

    if exc is not None:
        cause = exc.__cause__ or exc.__context__ if isinstance(exc, Escalate | RetryLater) else exc
        cause = cause if isinstance(cause, Exception) else exc
        attributes = {"perdure.reason": exc.reason} if isinstance(exc, Escalate) else None
        span.record_exception(cause, attributes=attributes)
    span.set_status(Status(StatusCode.ERROR, description))


def genai_attributes(operation: str, result: Any) -> dict[str, Any]:
    """The GenAI semantic-convention attributes of a model call's effect span: the model, and
    from its recorded reply (when there is one) the token usage and why the model stopped."""
    found: dict[str, Any] = {"gen_ai.operation.name": "chat", "gen_ai.request.model": operation}
    reply = result if isinstance(result, dict) else {}
    usage = reply.get("usage")
    if isinstance(usage, dict):
        for ours, theirs in (("input", "input_tokens"), ("output", "output_tokens")):
            value = usage.get(ours, usage.get(theirs))
            if isinstance(value, int):
                found[f"gen_ai.usage.{theirs}"] = value
    if isinstance(reply.get("finish_reason"), str):
        found["gen_ai.response.finish_reasons"] = (reply["finish_reason"],)
    return found


@dataclass
class Telemetry:
    """One runtime's logs, spans and observers (see the module docstring)."""

    observers: list[Observer] = field(default_factory=list)

    def add(self, observer: Observer) -> None:
        """Report to ``observer`` from now on."""
        self.observers.append(observer)

    @property
    def tracing(self) -> bool:
        """True when the application installed an OpenTelemetry tracer provider (with only
        the API, or no provider set, spans are skipped and cost nothing)."""
        return tracing()

    @contextmanager
    def run(self, run: Run, trace: dict[str, str] | None, takeover: bool) -> Iterator[None]:
        """Around one execution of a claimed run: a ``perdure.run`` span (child of ``trace``)
        and a log line when it starts."""
        for o in self.observers:
            o.claimed(run, takeover)
        log.info("run %s claimed", run.run_id, extra=fields_of(run, run.next_step))
        otel = _otel()
        if otel is None or not tracing():
            yield
            return
        parent = otel[1].extract(trace) if trace else None
        tracer = otel[0].get_tracer("perdure")
        attributes = {f"perdure.{k}": v for k, v in fields_of(run, run.next_step).items()}
        with tracer.start_as_current_span("perdure.run", context=parent, attributes=attributes):
            yield

    def step(self, run: Run, step: str, attempt: int) -> AbstractContextManager[StepReport]:
        """Around one step: a ``perdure.step`` span, a log line, and its duration and outcome
        for the observers. With none of the three wanted (no observer, ``perdure`` not logging
        at INFO, no tracer provider) it only hands out the report."""
        if not self.observers and not log.isEnabledFor(logging.INFO) and not tracing():
            return nullcontext(StepReport())
        return self._step(run, step, attempt)

    @contextmanager
    def _step(self, run: Run, step: str, attempt: int) -> Iterator[StepReport]:
        report = StepReport()
        fields = fields_of(run, step, attempt)
        span_of: AbstractContextManager[Any] = nullcontext()
        otel = _otel()
        if otel is not None and tracing():
            attributes = {f"perdure.{k}": v for k, v in fields.items()}
            span_of = (
                otel[0]
                .get_tracer("perdure")
                .start_as_current_span("perdure.step", attributes=attributes)
            )
        started = time.perf_counter()
        failure: BaseException | None = None
        with span_of as span:
            try:
                yield report
            except RetryLater as exc:
                report.outcome, failure = "retry", exc
                raise
            except Escalate as exc:
                report.outcome, failure = "escalated", exc
                raise
            except Cancelled:
                report.outcome = "cancelled"
                raise
            except Exception as exc:
                failure = exc
                raise
            finally:
                seconds = time.perf_counter() - started
                if span is not None:
                    span.set_attribute("perdure.outcome", report.outcome)
                    if report.outcome in FAILED_OUTCOMES:
                        why = report.failure or (str(failure) if failure else report.outcome)
                        _failed(span, failure, f"step {step}: {why}"[:500])
                log.info(
                    "step %s %s in %.3fs",
                    step,
                    report.outcome,
                    seconds,
                    extra={**fields, "outcome": report.outcome},
                )
                for o in self.observers:
                    o.step_finished(run, step, report.outcome, seconds)

    @contextmanager
    def effect(
        self, run: Run, step: str, key: str, name: str, target: str = "", operation: str = ""
    ) -> Iterator[EffectReport]:
        """Around one call of an effect: a ``perdure.effect`` span (ERROR with the exception
        when the call raises); a model call's carries the GenAI attributes."""
        report = EffectReport()
        otel = _otel()
        if otel is None or not tracing():
            yield report
            return
        attributes = {f"perdure.{k}": v for k, v in fields_of(run, step).items()}
        attributes.update({"perdure.effect.key": key, "perdure.effect.name": name})
        if target:
            attributes.update(
                {"perdure.effect.target": target, "perdure.effect.operation": operation}
            )
        with (
            otel[0]
            .get_tracer("perdure")
            .start_as_current_span("perdure.effect", attributes=attributes) as span
        ):
            try:
                yield report
            except BaseException as exc:
                _failed(span, exc, f"effect {name}: {exc}"[:500])
                raise
            if target == MODEL_TARGET:
                span.set_attributes(genai_attributes(operation, report.result))

    def retried(self, run: Run, step: str) -> None:
        """See :meth:`Observer.retried`."""
        log.info("step %s will retry", step, extra=fields_of(run, step))
        for o in self.observers:
            o.retried(run, step)

    def committed(self, run: Run, boundaries: int, seconds: float) -> None:
        """See :meth:`Observer.committed`."""
        for o in self.observers:
            o.committed(run, boundaries, seconds)

    def grouped(self, runs: int) -> None:
        """See :meth:`Observer.grouped`."""
        for o in self.observers:
            o.grouped(runs)

    def lease_lost(self, run: Run) -> None:
        """See :meth:`Observer.lease_lost`."""
        log.warning("run %s was lost; stopping", run.run_id, extra=fields_of(run))
        for o in self.observers:
            o.lease_lost(run)

    def stopped(self, run: Run, reason: str) -> None:
        """An execution stopped (the run may go on later)."""
        log.info("run %s stopped: %s", run.run_id, reason, extra=fields_of(run))
