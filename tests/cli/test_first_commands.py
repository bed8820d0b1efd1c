"""What a new user's first commands print: a finished run names no next step, a stream that
does not exist is an error, and the command suggested for an ambiguous effect runs as printed
(with its required options), its ``--result`` reaching the effect's record."""

from __future__ import annotations

import json
import re

from tests.conftest import run_cli

APP = "tests.apps.server_app"


def test_start_wait_on_a_finished_run_names_no_next_step(db_url: str) -> None:
    out = run_cli(db_url, "start", "plain", "--app", APP, "--wait")
    assert out.returncode == 0, out.stderr
    (line,) = out.stdout.splitlines()
    assert re.fullmatch(r"run \S+ SUCCEEDED", line), line


def test_streaming_a_message_that_does_not_exist_is_one_error_line(db_url: str) -> None:
    assert run_cli(db_url, "migrate").returncode == 0
    out = run_cli(db_url, "stream", "nope")
    assert out.returncode == 1
    assert out.stdout == ""
    (line,) = out.stderr.splitlines()
    assert line.startswith("error[invalid_input]: no stream of message 'nope'")


def test_the_suggested_resolve_command_runs_as_printed_and_records_its_result(
    db_url: str,
) -> None:
    started = run_cli(db_url, "start", "charge", "--app", APP, "--wait")
    assert started.returncode == 3, started.stderr
    run_id = started.stdout.split()[1]
    shown = run_cli(db_url, "show", run_id)
    (advice,) = [x for x in shown.stdout.splitlines() if x.startswith("do ")]
    suggested = re.findall(r"`perdure (effects resolve [^`]+)`", advice)
    assert len(suggested) == 2, advice  # --confirmed ..., and --not-applied ...
    (effect,) = json.loads(run_cli(db_url, "effects", "--status", "ambiguous", "--json").stdout)
    values = {
        "KEY": effect["key"],
        "ID": "ch_1",
        "JSON": '{"charge": "ch_1"}',
        "YOU": "alice",
        "WHY": "seen at the bank",
    }
    args = [values.get(word, word) for word in suggested[0].split()]
    resolved = run_cli(db_url, *args)
    assert resolved.returncode == 0, resolved.stderr
    (after,) = json.loads(run_cli(db_url, "effects", "--run", run_id, "--json").stdout)
    assert after["status"] == "confirmed"
    assert after["result"] == {"charge": "ch_1"}
    helped = run_cli(db_url, "effects", "resolve", "--help")
    assert "--result" in helped.stdout and "null" in helped.stdout
