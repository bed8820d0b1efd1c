"""An OpenAI Agents SDK run (the official package, its chat-completions model on the official
OpenAI client, against the stub server) in a perdure step, killed in real processes and resumed
by new ones: a triage agent hands off to a mailer whose side-effecting tool sends one email. A
crash after the tool's call completed never calls it again, a crash after a reply replays it
(and the handoff it asked for) without a new request, and the tool receives its key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perdure.providers.stub import StubServer, openai_reply, openai_stream
from perdure.runtime.step.model_calls import reply_message_id
from tests.apps.openai_agents_app import sent
from tests.conftest import run_cli
from tests.frameworks.support import App, effects, show

APP = App("tests.apps.openai_agents_app")
HANDOFF = ("call_h", "transfer_to_mailer", "{}")
EMAIL = ("call_1", "send_email", '{"to": "ana@example.com", "body": "hello"}')
NAMES = [
    "openai_agents.model.1",
    "openai_agents.model.2",
    "openai_agents.tool.call_1",
    "openai_agents.model.3",
]


def script(stub: StubServer, stream: bool = False) -> None:
    """The models: triage hands off, the mailer asks for the email, then answers."""
    if stream:
        stub.script(
            openai_stream([], [HANDOFF]),
            openai_stream([], [EMAIL]),
            openai_stream(["Sent ", "it."]),
        )
    else:
        stub.script(
            openai_reply("", [HANDOFF]), openai_reply("", [EMAIL]), openai_reply("Sent it.")
        )


@pytest.mark.parametrize(
    ("workflow", "stream"),
    [("oai_mail", False), ("oai_mail", True), ("oai_mail_sync", False)],
    ids=["run", "run_streamed", "run_sync"],
)
def test_a_crash_after_the_tool_call_completed_never_calls_the_tool_again(
    db_url: str, stub: StubServer, tmp_path: Path, workflow: str, stream: bool
) -> None:
    script(stub, stream)
    outbox = tmp_path / "outbox.jsonl"
    run_id = APP.start(db_url, workflow, outbox, stream=stream)
    crashed = APP.resume(
        db_url, run_id, stub, PERDURE_CRASH_AT="after_call:openai_agents.tool.call_1"
    )
    assert crashed.returncode == 75, crashed.stdout + crashed.stderr
    assert len(sent(str(outbox))) == 1
    assert stub.count == 2

    resumed = APP.resume(db_url, run_id, stub)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    final = show(db_url, run_id)
    assert final["status"] == "SUCCEEDED"
    assert final["result"] == {"output": "Sent it."}
    assert len(sent(str(outbox))) == 1, "the reconciler found the message: not sent again"
    assert stub.count == 3, "the handoff and the tool call were replayed, not asked again"
    recorded = effects(final)
    assert list(recorded) == NAMES
    assert all(e["status"] == "confirmed" for e in recorded.values())
    if stream:  # the answer's text is in the reply's durable token stream
        answer = reply_message_id(recorded["openai_agents.model.3"]["key"])
        entries = run_cli(db_url, "stream", answer, "--json").stdout.splitlines()
        texts = [json.loads(line).get("text") for line in entries]
        assert "".join(t for t in texts if t) == "Sent it."


def test_a_crash_after_the_handoff_reply_replays_it_without_a_new_request(
    db_url: str, stub: StubServer, tmp_path: Path
) -> None:
    script(stub)
    outbox = tmp_path / "outbox.jsonl"
    run_id = APP.start(db_url, "oai_mail", outbox)
    crashed = APP.resume(
        db_url, run_id, stub, PERDURE_CRASH_AT="after_outcome:openai_agents.model.1"
    )
    assert crashed.returncode == 75, crashed.stdout + crashed.stderr
    assert stub.count == 1
    resumed = APP.resume(db_url, run_id, stub)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert stub.count == 3, "model.1 came from its record"
    final = show(db_url, run_id)
    assert final["status"] == "SUCCEEDED"
    assert len(sent(str(outbox))) == 1
    mailer = stub.requests[1].body
    assert mailer["messages"][0] == {"role": "system", "content": "You send emails."}, (
        "the replayed reply handed off to the mailer"
    )


def test_a_sigkill_inside_the_tool_is_reconciled_and_the_tool_received_its_key(
    db_url: str, stub: StubServer, tmp_path: Path
) -> None:
    script(stub)
    outbox = tmp_path / "outbox.jsonl"
    run_id = APP.start(db_url, "oai_mail", outbox)
    APP.kill_in_tool(db_url, run_id, stub, tmp_path)
    assert effects(show(db_url, run_id))["openai_agents.tool.call_1"]["status"] == "executing"

    resumed = APP.resume(db_url, run_id, stub)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    final = show(db_url, run_id)
    assert final["status"] == "SUCCEEDED"
    (message,) = sent(str(outbox))
    tool = effects(final)["openai_agents.tool.call_1"]
    assert message["key"] == tool["key"], "the tool was given its effect's key"
    assert tool["result"] == "mail-1"
    assert stub.count == 3
    (offered,) = stub.requests[1].body["tools"]
    assert "idempotency_key" not in json.dumps(offered), "the model never sees the key"


def test_an_approved_tool_killed_after_its_call_runs_once(
    db_url: str, stub: StubServer, tmp_path: Path
) -> None:
    script(stub)
    outbox = tmp_path / "outbox.jsonl"
    run_id = APP.start(db_url, "oai_approval", outbox)
    waiting = APP.resume(db_url, run_id, stub)
    assert waiting.returncode == 0, waiting.stdout + waiting.stderr
    assert show(db_url, run_id)["status"] == "WAITING_APPROVAL"
    assert sent(str(outbox)) == [] and stub.count == 2
    approved = run_cli(db_url, "approve", run_id, "--as", "maria", "--role", "ops")
    assert approved.returncode == 0, approved.stdout + approved.stderr

    crashed = APP.resume(
        db_url, run_id, stub, PERDURE_CRASH_AT="after_call:openai_agents.tool.call_1"
    )
    assert crashed.returncode == 75, crashed.stdout + crashed.stderr
    assert len(sent(str(outbox))) == 1
    resumed = APP.resume(db_url, run_id, stub)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    final = show(db_url, run_id)
    assert final["status"] == "SUCCEEDED"
    assert final["result"] == {"output": "Sent it."}
    assert len(sent(str(outbox))) == 1, "approved once, sent once"
    assert stub.count == 3, "the question was not asked again; the answer was asked once"
