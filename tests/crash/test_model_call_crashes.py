"""A model call through the official OpenAI SDK against a stub server, in real processes:
killed after the call completed but before the step's boundary, the resumed step gets the
recorded reply and the stub counts one request; killed during the call (outcome unknown), the
call is simply made again and the lost attempt's cost is recorded."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from perdure.providers.stub import StubServer, openai_reply, openai_stream
from tests.conftest import cli_env, kill_at_hold, run_cli

APP = "tests.apps.agent_app"


@pytest.fixture
def stub() -> Iterator[StubServer]:
    with StubServer() as server:
        yield server


def start(db_url: str, stream: bool) -> str:
    data = json.dumps({"stream": stream})
    out = run_cli(db_url, "start", "answer", "--app", APP, "--input", data)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()[1]


def show(db_url: str, run_id: str) -> dict:  # type: ignore[type-arg]
    return json.loads(run_cli(db_url, "show", run_id, "--json").stdout)  # type: ignore[no-any-return]


def reply(stream: bool) -> object:
    if stream:
        return openai_stream(["durable ", "execution"], usage=(9, 2))
    return openai_reply("durable execution", usage=(9, 2))


@pytest.mark.parametrize("stream", [False, True], ids=["complete", "stream"])
def test_sigkill_after_the_call_before_the_boundary_replays_the_recorded_reply(
    db_url: str, stub: StubServer, tmp_path: Path, stream: bool
) -> None:
    stub.script(reply(stream))  # type: ignore[arg-type]
    run_id = start(db_url, stream)
    kill_at_hold(db_url, APP, run_id, tmp_path, AGENT_STUB_URL=stub.url)
    assert stub.count == 1
    assert show(db_url, run_id)["next_step"] == "ask", "the boundary was never committed"
    resumed = run_cli(db_url, "resume", run_id, "--app", APP, env=cli_env(AGENT_STUB_URL=stub.url))
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    final = show(db_url, run_id)
    assert final["status"] == "SUCCEEDED"
    assert final["result"] == {
        "text": "durable execution",
        "replayed": True,
        "lost_tokens": 0,
        "cost": 11.0,
    }
    assert stub.count == 1, "the resumed step did not call the model again"


def test_crashes_during_the_call_call_again_and_record_the_lost_attempts(
    db_url: str, stub: StubServer
) -> None:
    stub.script(
        openai_reply("first, lost"),
        openai_reply("second, lost"),
        openai_reply("durable execution", usage=(9, 2)),
    )
    run_id = start(db_url, False)
    env = cli_env(AGENT_STUB_URL=stub.url, PERDURE_CRASH_AT="after_call:model.1")
    for n in (1, 2):
        crashed = run_cli(db_url, "resume", run_id, "--app", APP, env=env)
        assert crashed.returncode == 75, crashed.stderr
        assert stub.count == n
    resumed = run_cli(db_url, "resume", run_id, "--app", APP, env=cli_env(AGENT_STUB_URL=stub.url))
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    final = show(db_url, run_id)
    assert final["status"] == "SUCCEEDED"
    result = final["result"]
    assert (result["text"], result["replayed"]) == ("durable execution", False)
    one = 4 + len("what is perdure?") // 4  # the estimate of one lost attempt's input
    assert result["lost_tokens"] == 2 * one, "both lost attempts' input tokens are estimated"
    assert stub.count == 3, "a model call whose outcome is unknown is safe to make again"
