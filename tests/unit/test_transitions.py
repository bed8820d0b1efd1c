from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from perdure.core import transitions
from perdure.core.errors import IllegalTransitionError, RunClosedError
from perdure.core.model import TERMINAL, RunStatus

S = RunStatus


def test_every_status_has_a_row_in_the_table() -> None:
    assert set(transitions.ALLOWED) == set(RunStatus)


def test_terminal_states_allow_nothing() -> None:
    for status in TERMINAL:
        assert transitions.ALLOWED[status] == frozenset()


def test_every_non_terminal_state_can_be_cancelled() -> None:
    for status in set(RunStatus) - TERMINAL - {S.CANCEL_REQUESTED}:
        assert transitions.allowed(status, S.CANCEL_REQUESTED)
    # a cancel ends CANCELLED, or with a person when an effect's outcome is unknown
    assert transitions.ALLOWED[S.CANCEL_REQUESTED] == {S.CANCELLED, S.NEEDS_ATTENTION}


def test_a_finished_run_raises_run_closed() -> None:
    with pytest.raises(RunClosedError):
        transitions.check(S.SUCCEEDED, S.RUNNING)


def test_a_transition_outside_the_table_raises() -> None:
    with pytest.raises(IllegalTransitionError):
        transitions.check(S.PENDING, S.SUCCEEDED)


@given(st.lists(st.sampled_from(list(RunStatus)), max_size=40))
def test_no_sequence_of_requests_leaves_a_terminal_state(requests: list[RunStatus]) -> None:
    status = S.PENDING
    reached_terminal = False
    for target in requests:
        try:
            transitions.check(status, target)
        except (IllegalTransitionError, RunClosedError):
            assert not transitions.allowed(status, target)
            continue
        assert not reached_terminal, "a terminal state was left"
        assert target in transitions.ALLOWED[status]
        status = target
        reached_terminal = status.terminal
