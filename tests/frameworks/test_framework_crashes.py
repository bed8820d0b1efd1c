"""An agent of each integrated framework (pydantic-ai, and the OpenAI Agents SDK — both on the
official OpenAI SDK against the stub server) in a perdure step, killed in real processes and
resumed by new ones. The same story for both: a crash after the tool's call completed never
calls the tool again (its reconciler finds the message by the key the tool received); a crash
after a model reply replays it without a new request (the stub counts); a crash before the
step's boundary replays every call; a SIGKILL inside the tool is reconciled; an approved tool
killed after its call runs once. What differs between the frameworks is in :class:`Framework`:
the OpenAI Agents app's triage agent first hands off to the mailer (one model reply more)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from perdure.providers.stub import StubServer, openai_reply, openai_stream
from perdure.runtime.step.model_calls import reply_message_id
from tests.conftest import run_cli
from tests.frameworks.support import App, effects, sent, show

HANDOFF = ("call_h", "transfer_to_mailer", "{}")
EMAIL = ("call_1", "send_email", '{"to": "ana@example.com", "body": "hello"}')


def pydantic_ai_replayed(stub: StubServer, final: dict[str, Any]) -> None:
    """Both replies were priced at one unit a token, the replayed one from its record."""
    models = [e for e in final["effects"] if e["target"] == "model"]
    costs = [(e["result"]["usage"], e["result"]["cost"]) for e in models]
    usage = {"input_tokens": 10, "output_tokens": 5}
    assert costs == [(usage, 15.0), (usage, 15.0)], "priced at one unit a token"


def openai_agents_replayed(stub: StubServer, final: dict[str, Any]) -> None:
    """The replayed reply still handed off: the next request went to the mailer."""
    mailer = stub.requests[1].body
    assert mailer["messages"][0] == {"role": "system", "content": "You send emails."}, (
        "the replayed reply handed off to the mailer"
    )


@dataclass(frozen=True)
class Framework:
    """One framework's test app and what its runs record."""

    app: App
    prefix: str
    """Of its effects' names (``<prefix>.model.N``, ``<prefix>.tool.<call id>``)."""
    workflow: str
    """The workflows are ``<workflow>_mail``, ``<workflow>_mail_sync``, ``<workflow>_approval``."""
    stream_id: str
    handoff: bool
    """The triage agent hands off to the mailer first (one model reply before the email's)."""
    tool_result: Any
    approved_tool: str
    replayed: Callable[[StubServer, dict[str, Any]], None]

    @property
    def asked(self) -> int:
        """Model replies up to and including the one that asks for the email."""
        return 2 if self.handoff else 1

    @property
    def names(self) -> list[str]:
        """The effects a run records, in order."""
        models = [f"{self.prefix}.model.{n}" for n in range(1, self.asked + 1)]
        return [*models, f"{self.prefix}.tool.call_1", f"{self.prefix}.model.{self.asked + 1}"]

    def script(self, stub: StubServer, stream: bool = False) -> None:
        """The model(s): hand off (OpenAI Agents), ask for the email, then answer."""
        if stream:
            first = [openai_stream([], [HANDOFF])] if self.handoff else []
            stub.script(*first, openai_stream([], [EMAIL]), openai_stream(["Sent ", "it."]))
        else:
            first = [openai_reply("", [HANDOFF])] if self.handoff else []
            stub.script(*first, openai_reply("", [EMAIL]), openai_reply("Sent it."))


FRAMEWORKS = [
    Framework(
        App("tests.apps.pydantic_ai_app"),
        "pydantic_ai",
        "pyd",
        "run_stream",
        handoff=False,
        tool_result={"return": {"id": "mail-1"}},
        approved_tool="pydantic_ai.tool.call_1.approved",
        replayed=pydantic_ai_replayed,
    ),
    Framework(
        App("tests.apps.openai_agents_app"),
        "openai_agents",
        "oai",
        "run_streamed",
        handoff=True,
        tool_result="mail-1",
        approved_tool="openai_agents.tool.call_1",
        replayed=openai_agents_replayed,
    ),
]
IDS = ["pydantic-ai", "openai-agents"]


@pytest.fixture(params=FRAMEWORKS, ids=IDS)
def fw(request: pytest.FixtureRequest) -> Framework:
    framework: Framework = request.param
    return framework


@pytest.mark.parametrize(
    ("suffix", "stream"),
    [("mail", False), ("mail", True), ("mail_sync", False)],
    ids=["run", "run_stream", "run_sync"],
)
def test_a_crash_after_the_tool_call_completed_never_calls_the_tool_again(
    db_url: str, stub: StubServer, tmp_path: Path, fw: Framework, suffix: str, stream: bool
) -> None:
    fw.script(stub, stream)
    outbox = tmp_path / "outbox.jsonl"
    run_id = fw.app.start(db_url, f"{fw.workflow}_{suffix}", outbox, stream=stream)
    crashed = fw.app.resume(db_url, run_id, stub, PERDURE_CRASH_AT=f"after_call:{fw.names[-2]}")
    assert crashed.returncode == 75, crashed.stdout + crashed.stderr
    assert len(sent(outbox)) == 1
    assert stub.count == fw.asked

    resumed = fw.app.resume(db_url, run_id, stub)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    final = show(db_url, run_id)
    assert final["status"] == "SUCCEEDED"
    assert final["result"] == {"output": "Sent it."}
    assert len(sent(outbox)) == 1, "the reconciler found the message: not sent again"
    assert stub.count == fw.asked + 1, "the replies before the tool were replayed, not asked"
    recorded = effects(final)
    assert list(recorded) == fw.names
    assert all(e["status"] == "confirmed" for e in recorded.values())
    if stream:  # the answer's text is in the reply's durable token stream
        answer = reply_message_id(recorded[fw.names[-1]]["key"])
        entries = run_cli(db_url, "stream", answer, "--json").stdout.splitlines()
        texts = [json.loads(line).get("text") for line in entries]
        assert "".join(t for t in texts if t) == "Sent it."


def test_a_crash_after_the_first_model_reply_replays_it_without_a_new_request(
    db_url: str, stub: StubServer, tmp_path: Path, fw: Framework
) -> None:
    fw.script(stub)
    outbox = tmp_path / "outbox.jsonl"
    run_id = fw.app.start(db_url, f"{fw.workflow}_mail", outbox)
    crashed = fw.app.resume(
        db_url, run_id, stub, PERDURE_CRASH_AT=f"after_outcome:{fw.prefix}.model.1"
    )
    assert crashed.returncode == 75, crashed.stdout + crashed.stderr
    assert stub.count == 1
    assert sent(outbox) == []

    resumed = fw.app.resume(db_url, run_id, stub)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert stub.count == fw.asked + 1, "model.1 came from its record"
    final = show(db_url, run_id)
    assert final["status"] == "SUCCEEDED"
    assert len(sent(outbox)) == 1
    fw.replayed(stub, final)


def test_a_crash_before_the_boundary_replays_every_call(
    db_url: str, stub: StubServer, tmp_path: Path, fw: Framework
) -> None:
    fw.script(stub)
    outbox = tmp_path / "outbox.jsonl"
    run_id = fw.app.start(db_url, f"{fw.workflow}_mail", outbox)
    crashed = fw.app.resume(db_url, run_id, stub, PERDURE_CRASH_AT="before_commit:work")
    assert crashed.returncode == 75, crashed.stdout + crashed.stderr
    assert (stub.count, len(sent(outbox))) == (fw.asked + 1, 1)
    resumed = fw.app.resume(db_url, run_id, stub)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert (stub.count, len(sent(outbox))) == (fw.asked + 1, 1), "nothing was called again"
    assert show(db_url, run_id)["result"] == {"output": "Sent it."}


def test_a_sigkill_inside_the_tool_is_reconciled_and_the_tool_received_its_key(
    db_url: str, stub: StubServer, tmp_path: Path, fw: Framework
) -> None:
    fw.script(stub)
    outbox = tmp_path / "outbox.jsonl"
    run_id = fw.app.start(db_url, f"{fw.workflow}_mail", outbox)
    fw.app.kill_in_tool(db_url, run_id, stub, tmp_path)
    tool_name = fw.names[-2]
    assert effects(show(db_url, run_id))[tool_name]["status"] == "executing"

    resumed = fw.app.resume(db_url, run_id, stub)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    final = show(db_url, run_id)
    assert final["status"] == "SUCCEEDED"
    (message,) = sent(outbox)
    tool = effects(final)[tool_name]
    assert message["key"] == tool["key"], "the tool was given its effect's key"
    assert tool["result"] == fw.tool_result
    assert stub.count == fw.asked + 1
    (offered,) = stub.requests[fw.asked - 1].body["tools"]
    assert "idempotency_key" not in json.dumps(offered), "the model never sees the key"


def test_an_approved_tool_killed_after_its_call_runs_once(
    db_url: str, stub: StubServer, tmp_path: Path, fw: Framework
) -> None:
    fw.script(stub)
    outbox = tmp_path / "outbox.jsonl"
    run_id = fw.app.start(db_url, f"{fw.workflow}_approval", outbox)
    waiting = fw.app.resume(db_url, run_id, stub)
    assert waiting.returncode == 0, waiting.stdout + waiting.stderr
    assert show(db_url, run_id)["status"] == "WAITING_APPROVAL"
    assert sent(outbox) == [] and stub.count == fw.asked
    approved = run_cli(db_url, "approve", run_id, "--as", "maria", "--role", "ops")
    assert approved.returncode == 0, approved.stdout + approved.stderr

    crashed = fw.app.resume(db_url, run_id, stub, PERDURE_CRASH_AT=f"after_call:{fw.approved_tool}")
    assert crashed.returncode == 75, crashed.stdout + crashed.stderr
    assert len(sent(outbox)) == 1
    resumed = fw.app.resume(db_url, run_id, stub)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    final = show(db_url, run_id)
    assert final["status"] == "SUCCEEDED"
    assert final["result"] == {"output": "Sent it."}
    assert len(sent(outbox)) == 1, "approved once, sent once"
    assert stub.count == fw.asked + 1, "the question was not asked again; the answer once"
