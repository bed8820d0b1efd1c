from __future__ import annotations

from dataclasses import dataclass

import pytest

from perdure import Workflow, done, fail, goto, step
from perdure.core.errors import DefinitionError


@dataclass
class S:
    n: int = 0


@step(next=["b"])
def a(ctx, s):  # type: ignore[no-untyped-def]
    return goto("b")


@step
def b(ctx, s):  # type: ignore[no-untyped-def]
    return done()


def test_a_valid_workflow_starts_at_its_first_step() -> None:
    wf = Workflow("ok", state=S, steps=[a, b])
    assert wf.start == "a"
    assert set(wf.steps) == {"a", "b"}


def test_a_workflow_without_steps_has_no_start_step() -> None:
    with pytest.raises(DefinitionError, match="no start step"):
        Workflow("empty", state=S, steps=[])


def test_a_duplicate_step_name_is_refused() -> None:
    with pytest.raises(DefinitionError, match="declared twice"):
        Workflow("dup", state=S, steps=[a, b, step(name="b")(lambda c, s: done())])


def test_an_unknown_next_step_is_refused_at_declaration() -> None:
    with pytest.raises(DefinitionError, match="undeclared steps"):
        Workflow("bad", state=S, steps=[a])


def test_an_unknown_start_step_is_refused() -> None:
    with pytest.raises(DefinitionError, match="start step"):
        Workflow("bad", state=S, steps=[a, b], start="zzz")


def test_a_malformed_workflow_name_is_refused() -> None:
    with pytest.raises(DefinitionError, match="not valid"):
        Workflow("has space", state=S, steps=[a, b])


def test_an_unsupported_state_type_is_refused() -> None:
    with pytest.raises(Exception, match="not supported"):
        Workflow("w", state=int, steps=[a, b])


def test_a_failure_reason_must_be_a_code() -> None:
    assert fail("card_declined", "expired").reason == "card_declined"
    with pytest.raises(DefinitionError):
        fail("not a code")
