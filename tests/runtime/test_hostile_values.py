"""Every verb a person (or a program) calls refuses hostile text the same way on both
databases, before anything is written: NUL characters (which PostgreSQL cannot store in text and
SQLite would), text that is not valid UTF-8 (a lone surrogate, as from undecodable bytes), and
text over the limit all raise ``invalid_input``, and the run is exactly as it was."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from perdure import InvalidInputError, Principal, Runtime
from perdure.core.ids import MAX_ID_LENGTH, MAX_TEXT_LENGTH
from tests.apps.counting import counting

NUL = st.builds(lambda a, b: f"{a}\x00{b}", st.text(max_size=12), st.text(max_size=12))
NOT_UTF8 = st.builds(lambda a: f"{a}\udcff", st.text(max_size=12))
HOSTILE_TEXT = st.one_of(NUL, NOT_UTF8, st.just("x" * (MAX_TEXT_LENGTH + 1)))
HOSTILE_ID = st.one_of(NUL, NOT_UTF8, st.just(""), st.just("x" * (MAX_ID_LENGTH + 1)))
PERSON = Principal("default", "ops", frozenset({"ops"}))

Verb = Callable[[Runtime, str, str], Any]
TEXT_VERBS: dict[str, Verb] = {
    "cancel reason": lambda rt, run, h: rt.cancel(run, reason=h),
    "approval comment": lambda rt, run, h: rt.approve(run, PERSON, comment=h),
    "rejection comment": lambda rt, run, h: rt.reject(run, PERSON, comment=h),
    "resolve reason": lambda rt, run, h: rt.effects.resolve("k", applied=True, by="ops", reason=h),
    "resolve by": lambda rt, run, h: rt.effects.resolve("k", applied=True, by=h, reason="seen"),
    "resolve receipt": lambda rt, run, h: rt.effects.resolve(
        "k", applied=True, by="ops", reason="seen", receipt=h
    ),
    "fail reason": lambda rt, run, h: rt.versions.fail(run, reason=h),
}
MESSAGE_VERBS: dict[str, Verb] = {  # a message may be long (large ones go to the artifact store)
    "message": lambda rt, run, h: rt.threads.post(rt.get(run).thread_id, "user", h),
}
ID_VERBS: dict[str, Verb] = {
    "signal name": lambda rt, run, h: rt.signal(run, h),
    "signal id": lambda rt, run, h: rt.signal(run, "go", signal_id=h),
    "cancel request id": lambda rt, run, h: rt.cancel(run, request_id=h),
    "approval request id": lambda rt, run, h: rt.approve(run, PERSON, request_id=h),
    "thread": lambda rt, run, h: rt.start(counting, thread=h),
    "idempotency key": lambda rt, run, h: rt.start(counting, idempotency_key=h),
    "run id": lambda rt, run, h: rt.get(h),
}
CHECKS = settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def unchanged(rt: Runtime, run_id: str) -> tuple[object, ...]:
    run = rt.get(run_id)
    return (
        run.status,
        run.state_version,
        len(rt.activity.events(run_id, limit=1000)),
        len(rt.runs()),
    )


VERBS: dict[str, tuple[Verb, st.SearchStrategy[str]]] = {
    **{name: (verb, HOSTILE_TEXT) for name, verb in TEXT_VERBS.items()},
    **{name: (verb, st.one_of(NUL, NOT_UTF8)) for name, verb in MESSAGE_VERBS.items()},
    **{name: (verb, HOSTILE_ID) for name, verb in ID_VERBS.items()},
}


@pytest.mark.parametrize("verb", list(VERBS))
@CHECKS
@given(data=st.data())
def test_hostile_values_are_refused_before_anything_is_written(
    runtime: Runtime, verb: str, data: st.DataObject
) -> None:
    call, values = VERBS[verb]
    hostile = data.draw(values, label="hostile")
    run = runtime.start(counting, idempotency_key="the-run")
    before = unchanged(runtime, run.run_id)
    with pytest.raises(InvalidInputError):
        call(runtime, run.run_id, hostile)
    assert unchanged(runtime, run.run_id) == before
