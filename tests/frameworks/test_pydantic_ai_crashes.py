"""A pydantic-ai agent (the official package, its OpenAI model on the official SDK, against the
stub server) in a perdure step, killed in real processes and resumed by new ones: a crash after
the tool's call completed never calls the tool again (its reconciler finds the message by the
key the tool received), a crash after a model reply replays it without a new request (the stub
counts), and the tool's key is the effect's key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perdure.providers.stub import StubServer, openai_reply, openai_stream
from perdure.runtime.step.model_calls import reply_message_id
from tests.apps.pydantic_ai_app import sent
from tests.conftest import run_cli
from tests.frameworks.support import App, effects, show

APP = App("tests.apps.pydantic_ai_app")
EMAIL = ("call_1", "send_email", '{"to": "ana@example.com", "body": "hello"}')


def script(stub: StubServer, stream: bool = False) -> None:
    """The model: ask for the email, then answer."""
    if stream:
        stub.script(openai_stream([], [EMAIL]), openai_stream(["Sent ", "it."]))
    else:
        stub.script(openai_reply("", [EMAIL]), openai_reply("Sent it."))


@pytest.mark.parametrize(
    ("workflow", "stream"),
    [("pyd_mail", False), ("pyd_mail", True), ("pyd_mail_sync", False)],
    ids=["run", "run_stream", "run_sync"],
)
def test_a_crash_after_the_tool_call_completed_never_calls_the_tool_again(
    db_url: str, stub: StubServer, tmp_path: Path, workflow: str, stream: bool
) -> None:
    script(stub, stream)
    outbox = tmp_path / "outbox.jsonl"
    run_id = APP.start(db_url, workflow, outbox, stream=stream)
    crashed = APP.resume(
        db_url, run_id, stub, PERDURE_CRASH_AT="after_call:pydantic_ai.tool.call_1"
    )
    assert crashed.returncode == 75, crashed.stdout + crashed.stderr
    assert len(sent(str(outbox))) == 1
    assert stub.count == 1

    resumed = APP.resume(db_url, run_id, stub)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    final = show(db_url, run_id)
    assert final["status"] == "SUCCEEDED"
    assert final["result"] == {"output": "Sent it."}
    assert len(sent(str(outbox))) == 1, "the reconciler found the message: not sent again"
    assert stub.count == 2, "the first reply was replayed; only the second was requested"
    recorded = effects(final)
    assert list(recorded) == [
        "pydantic_ai.model.1",
        "pydantic_ai.tool.call_1",
        "pydantic_ai.model.2",
    ]
    assert all(e["status"] == "confirmed" for e in recorded.values())
    if stream:  # the answer's text is in the reply's durable token stream
        answer = reply_message_id(recorded["pydantic_ai.model.2"]["key"])
        entries = run_cli(db_url, "stream", answer, "--json").stdout.splitlines()
        texts = [json.loads(line).get("text") for line in entries]
        assert "".join(t for t in texts if t) == "Sent it."


def test_a_crash_after_a_model_reply_replays_it_without_a_new_request(
    db_url: str, stub: StubServer, tmp_path: Path
) -> None:
    script(stub)
    outbox = tmp_path / "outbox.jsonl"
    run_id = APP.start(db_url, "pyd_mail", outbox)
    crashed = APP.resume(db_url, run_id, stub, PERDURE_CRASH_AT="after_outcome:pydantic_ai.model.1")
    assert crashed.returncode == 75, crashed.stdout + crashed.stderr
    assert stub.count == 1
    assert sent(str(outbox)) == []

    resumed = APP.resume(db_url, run_id, stub)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert stub.count == 2, "model.1 came from its record"
    final = show(db_url, run_id)
    assert final["status"] == "SUCCEEDED"
    assert len(sent(str(outbox))) == 1
    models = [e for e in final["effects"] if e["target"] == "model"]
    costs = [(e["result"]["usage"], e["result"]["cost"]) for e in models]
    usage = {"input_tokens": 10, "output_tokens": 5}
    assert costs == [(usage, 15.0), (usage, 15.0)], "priced at one unit a token"


def test_a_crash_before_the_boundary_replays_every_call(
    db_url: str, stub: StubServer, tmp_path: Path
) -> None:
    script(stub)
    outbox = tmp_path / "outbox.jsonl"
    run_id = APP.start(db_url, "pyd_mail", outbox)
    crashed = APP.resume(db_url, run_id, stub, PERDURE_CRASH_AT="before_commit:work")
    assert crashed.returncode == 75, crashed.stdout + crashed.stderr
    assert (stub.count, len(sent(str(outbox)))) == (2, 1)
    resumed = APP.resume(db_url, run_id, stub)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert (stub.count, len(sent(str(outbox)))) == (2, 1), "nothing was called again"
    assert show(db_url, run_id)["result"] == {"output": "Sent it."}


def test_a_sigkill_inside_the_tool_is_reconciled_and_the_tool_received_its_key(
    db_url: str, stub: StubServer, tmp_path: Path
) -> None:
    script(stub)
    outbox = tmp_path / "outbox.jsonl"
    run_id = APP.start(db_url, "pyd_mail", outbox)
    APP.kill_in_tool(db_url, run_id, stub, tmp_path)
    assert effects(show(db_url, run_id))["pydantic_ai.tool.call_1"]["status"] == "executing"

    resumed = APP.resume(db_url, run_id, stub)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    final = show(db_url, run_id)
    assert final["status"] == "SUCCEEDED"
    (message,) = sent(str(outbox))
    tool = effects(final)["pydantic_ai.tool.call_1"]
    assert message["key"] == tool["key"], "the tool was given its effect's key"
    assert tool["result"] == {"return": {"id": "mail-1"}}
    assert stub.count == 2
    request = stub.requests[0].body
    (offered,) = request["tools"]
    assert "idempotency_key" not in json.dumps(offered), "the model never sees the key"


def test_an_approved_tool_killed_after_its_call_runs_once(
    db_url: str, stub: StubServer, tmp_path: Path
) -> None:
    script(stub)
    outbox = tmp_path / "outbox.jsonl"
    run_id = APP.start(db_url, "pyd_approval", outbox)
    waiting = APP.resume(db_url, run_id, stub)
    assert waiting.returncode == 0, waiting.stdout + waiting.stderr
    shown = show(db_url, run_id)
    assert shown["status"] == "WAITING_APPROVAL"
    assert sent(str(outbox)) == [] and stub.count == 1
    approved = run_cli(db_url, "approve", run_id, "--as", "maria", "--role", "ops")
    assert approved.returncode == 0, approved.stdout + approved.stderr

    crashed = APP.resume(
        db_url, run_id, stub, PERDURE_CRASH_AT="after_call:pydantic_ai.tool.call_1.approved"
    )
    assert crashed.returncode == 75, crashed.stdout + crashed.stderr
    assert len(sent(str(outbox))) == 1
    resumed = APP.resume(db_url, run_id, stub)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    final = show(db_url, run_id)
    assert final["status"] == "SUCCEEDED"
    assert final["result"] == {"output": "Sent it."}
    assert len(sent(str(outbox))) == 1, "approved once, sent once"
    assert stub.count == 2, "the question was not asked again; the answer was asked once"
