"""A framework tool that needs approval (pydantic-ai's ``requires_approval``, the Agents SDK's
``needs_approval``) on perdure's approvals with roles, in one process on both databases: the
run waits for a person of the role, holding no process; a person without the role is refused
and nothing runs; a person with it approves, the run continues and the tool runs once; a
second approval of the same request changes nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from perdure import Runtime
from perdure.core.errors import NotAuthorizedError
from perdure.core.model import Principal
from perdure.providers.stub import StubServer, openai_reply
from tests.apps import openai_agents_app, pydantic_ai_app

EMAIL = ("call_1", "send_email", '{"to": "ana@example.com", "body": "hello"}')
HANDOFF = ("call_h", "transfer_to_mailer", "{}")

CASES = {
    "pydantic-ai": (pydantic_ai_app, pydantic_ai_app.pyd_approval, [("", [EMAIL])]),
    "openai-agents": (
        openai_agents_app,
        openai_agents_app.oai_approval,
        [("", [HANDOFF]), ("", [EMAIL])],
    ),
}


@pytest.mark.parametrize("framework", list(CASES))
def test_only_a_person_of_the_role_continues_the_run_and_the_tool_runs_once(
    db_url: str,
    stub: StubServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    framework: str,
) -> None:
    app, workflow, asks = CASES[framework]
    stub.script(*(openai_reply(text, calls) for text, calls in asks), openai_reply("Sent it."))
    monkeypatch.setenv("AGENT_STUB_URL", stub.url)
    monkeypatch.setenv("OPENAI_AGENTS_DISABLE_TRACING", "1")
    outbox = str(tmp_path / "outbox.jsonl")
    task: Any = app.Task(outbox=outbox)
    with Runtime(db_url, workflows=[workflow]) as rt:
        run = rt.start(workflow, task)
        rt.run_until_idle()
        assert rt.get(run.run_id).status == "WAITING_APPROVAL"
        assert app.sent(outbox) == [] and stub.count == len(asks)

        sales = Principal("default", "sam", frozenset({"sales"}))
        with pytest.raises(NotAuthorizedError):
            rt.approve(run.run_id, sales)
        rt.run_until_idle()
        assert rt.get(run.run_id).status == "WAITING_APPROVAL"
        assert app.sent(outbox) == [], "nothing ran for a person without the role"

        ops = Principal("default", "maria", frozenset({"ops"}))
        rt.approve(run.run_id, ops, request_id="r-1")
        rt.run_until_idle()
        final = rt.get(run.run_id)
        assert (final.status, final.result) == ("SUCCEEDED", {"output": "Sent it."})
        assert rt.approve(run.run_id, ops, request_id="r-1").decided_by == "maria"
    assert len(app.sent(outbox)) == 1, "the approved tool ran once"
    assert stub.count == len(asks) + 1, "no request was asked twice"
