"""Spans and logs of executions: run, step and effect spans with the run's fields, a trace
context kept at start and continued by whichever runtime runs the run, JSON log lines."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta

import orjson
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from perdure import (
    Context,
    FakeClock,
    Message,
    Runtime,
    Workflow,
    done,
    step,
    wait_for_children,
)
from perdure.core.workflow import Outcome
from perdure.providers.scripted import Scripted, ScriptedModel
from perdure.runtime.logs import JsonFormatter
from tests.apps import server_app

EXPORTER = InMemorySpanExporter()
_PROVIDER = TracerProvider()
_PROVIDER.add_span_processor(SimpleSpanProcessor(EXPORTER))


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        trace.set_tracer_provider(_PROVIDER)
    EXPORTER.clear()
    yield EXPORTER
    EXPORTER.clear()


def test_runs_steps_and_effects_make_spans_with_the_runs_fields(
    db_url: str, clock: FakeClock, spans: InMemorySpanExporter
) -> None:
    with Runtime(db_url, clock=clock, workflows=[server_app.charge], owner="w1") as rt:
        run = rt.start("charge", tenant="t1")
        rt.run_until_idle()
    by_name = {s.name: s for s in spans.get_finished_spans()}
    assert {"perdure.run", "perdure.step", "perdure.effect"} <= set(by_name)
    step = by_name["perdure.step"]
    assert step.attributes is not None
    assert step.attributes["perdure.run_id"] == run.run_id
    assert step.attributes["perdure.step"] == "pay"
    assert step.attributes["perdure.attempt"] == 1
    assert step.attributes["perdure.fence"] == 1
    assert step.attributes["perdure.outcome"] == "escalated"
    effect = by_name["perdure.effect"]
    assert effect.attributes is not None and effect.attributes["perdure.effect.name"] == "charge"
    assert effect.parent is not None and effect.parent.span_id == step.context.span_id
    assert step.parent is not None and step.parent.span_id == by_name["perdure.run"].context.span_id


def test_a_trace_started_by_the_caller_is_continued_by_the_runtime_that_runs_the_run(
    db_url: str, clock: FakeClock, spans: InMemorySpanExporter
) -> None:
    tracer = trace.get_tracer("caller")
    with Runtime(db_url, clock=clock, workflows=[server_app.plain]) as starter:
        with tracer.start_as_current_span("http request") as caller:
            run = starter.start("plain", tenant="t1")
        given = starter.start(
            "plain",
            tenant="t1",
            trace_context={
                "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
            },
        )
    with Runtime(db_url, clock=clock, workflows=[server_app.plain], owner="other") as worker:
        assert worker.run_until_idle() == 2
    runs = [s for s in spans.get_finished_spans() if s.name == "perdure.run"]
    by_run = {s.attributes["perdure.run_id"]: s for s in runs if s.attributes}
    continued = by_run[run.run_id]
    assert continued.context.trace_id == caller.get_span_context().trace_id
    assert continued.parent is not None
    assert continued.parent.span_id == caller.get_span_context().span_id
    assert f"{by_run[given.run_id].context.trace_id:032x}" == "0af7651916cd43dd8448eb211c80319c"


def test_json_logs_carry_the_run_id_step_attempt_and_fence(db_url: str, clock: FakeClock) -> None:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("perdure")
    logger.addHandler(handler)
    old = logger.level
    logger.setLevel(logging.INFO)
    try:
        with Runtime(db_url, clock=clock, workflows=[server_app.plain]) as rt:
            run = rt.start("plain", tenant="t1")
            rt.run_until_idle()
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old)
    lines = [orjson.loads(line) for line in out.getvalue().splitlines()]
    step = [x for x in lines if x.get("step") == "only" and x.get("outcome") == "done"]
    assert step and step[0]["run_id"] == run.run_id and step[0]["attempt"] == 1
    assert step[0]["fence"] == 1 and step[0]["tenant"] == "t1" and step[0]["level"] == "info"


@dataclass
class Empty:
    pass


@step
def explode(ctx: Context, s: Empty) -> Outcome:
    raise ValueError("the input makes no sense")


MODEL = ScriptedModel("scripted-1", [Scripted("hello there")])


@step
def chat(ctx: Context, s: Empty) -> Outcome:
    ctx.model_call(MODEL, [Message("user", "hi")])
    return done()


@step(next=["joined"])
def fan(ctx: Context, s: Empty) -> Outcome:
    ctx.spawn(chatting, key="one")
    return wait_for_children(on_done="joined")


@step
def joined(ctx: Context, s: Empty) -> Outcome:
    return done()


exploding = Workflow("exploding", state=Empty, steps=[explode])
chatting = Workflow("chatting", state=Empty, steps=[chat])
fanning = Workflow("fanning", state=Empty, steps=[fan, joined])


def test_a_step_that_raises_ends_its_span_in_error_with_the_exception(
    db_url: str, clock: FakeClock, spans: InMemorySpanExporter
) -> None:
    with Runtime(db_url, clock=clock, workflows=[exploding]) as rt:
        rt.start(exploding)
        rt.run_until_idle()
    (span,) = [s for s in spans.get_finished_spans() if s.name == "perdure.step"]
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes is not None and span.attributes["perdure.outcome"] == "escalated"
    (event,) = span.events
    assert event.name == "exception" and event.attributes is not None
    assert event.attributes["exception.type"] == "ValueError"
    assert event.attributes["perdure.reason"] == "step_raised"


def test_a_model_call_span_carries_the_genai_attributes(
    db_url: str, clock: FakeClock, spans: InMemorySpanExporter
) -> None:
    with Runtime(db_url, clock=clock, workflows=[chatting]) as rt:
        rt.start(chatting)
        rt.run_until_idle()
    (span,) = [s for s in spans.get_finished_spans() if s.name == "perdure.effect"]
    found = dict(span.attributes or {})
    assert found["gen_ai.operation.name"] == "chat"
    assert found["gen_ai.request.model"] == "scripted-1"
    assert found["gen_ai.usage.input_tokens"] > 0 and found["gen_ai.usage.output_tokens"] > 0
    assert span.status.status_code is not StatusCode.ERROR


def test_a_child_run_continues_its_parents_trace(
    db_url: str, clock: FakeClock, spans: InMemorySpanExporter
) -> None:
    with Runtime(db_url, clock=clock, workflows=[fanning, chatting]) as rt:
        parent = rt.start(fanning)
        rt.run_until_idle()
        (child,) = rt.children(parent.run_id)
    finished = [s for s in spans.get_finished_spans() if s.attributes is not None]
    (fan_step,) = [
        s
        for s in finished
        if s.name == "perdure.step" and s.attributes.get("perdure.step") == "fan"
    ]
    (child_run,) = [
        s
        for s in finished
        if s.name == "perdure.run" and s.attributes.get("perdure.run_id") == child.run_id
    ]
    assert child_run.context.trace_id == fan_step.context.trace_id
    assert child_run.parent is not None and child_run.parent.span_id == fan_step.context.span_id


def test_a_step_run_again_after_a_takeover_reports_attempt_two(
    db_url: str, clock: FakeClock, spans: InMemorySpanExporter
) -> None:
    with Runtime(db_url, clock=clock, workflows=[server_app.plain], owner="w1") as rt:
        run = rt.start("plain", tenant="t1")
        for owner in ("gone-1", "gone-2"):  # two workers claim it and die before its boundary
            held = rt.store.claim(
                owner, clock.now() + timedelta(seconds=30), clock.now(), ["plain"]
            )
            assert held is not None and held.run_id == run.run_id
            clock.advance(31)
        assert rt.get(run.run_id, tenant="t1").attempt == 2  # the second claim took over
        rt.run_until_idle()
        assert rt.get(run.run_id, tenant="t1").status.value == "SUCCEEDED"
    (step,) = [s for s in spans.get_finished_spans() if s.name == "perdure.step"]
    assert step.attributes is not None and step.attributes["perdure.attempt"] == 3
