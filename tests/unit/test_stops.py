"""The commands that run until stopped: SIGTERM or SIGINT ends the block quietly, the handlers
are put back after; a worker's command line is told apart from the group's options."""

from __future__ import annotations

import os
import signal

import pytest

from perdure.cli.stops import command_of, until_stopped


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_ends_the_block_quietly_and_the_handlers_are_put_back(
    signum: signal.Signals,
) -> None:
    before = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    reached = []
    with until_stopped():
        os.kill(os.getpid(), signum)  # delivered to this (the main) thread at once
        reached.append("after the signal")
    assert reached == []
    assert {s: signal.getsignal(s) for s in before} == before


def test_the_subcommand_is_found_after_the_groups_options() -> None:
    assert command_of(["--db", "worker", "runs"]) == "runs"
    assert command_of(["--tenant", "t1", "worker", "--app", "m"]) == "worker"
    assert command_of(["--version"]) is None
    assert command_of([]) is None
