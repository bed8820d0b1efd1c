"""A pydantic-ai agent whose side-effecting tool is served by a real MCP server (the official
``mcp`` package over stdio, a subprocess of the step's process): the MCP tool call is a perdure
effect, called once across a crash after its call and across a SIGKILL inside it, on both
databases; the server's tool receives the effect's key and the model never sees it."""

from __future__ import annotations

import json
from pathlib import Path

from perdure.providers.stub import StubServer, openai_reply
from tests.apps.pydantic_ai_app import sent
from tests.frameworks.support import App, effects, show

APP = App("tests.apps.pydantic_ai_app")
EMAIL = ("call_1", "send_email", '{"to": "ana@example.com", "body": "hello"}')


def test_an_mcp_tool_call_completed_before_a_crash_is_not_called_again(
    db_url: str, stub: StubServer, tmp_path: Path
) -> None:
    stub.script(openai_reply("", [EMAIL]), openai_reply("Sent it."))
    outbox = tmp_path / "outbox.jsonl"
    run_id = APP.start(db_url, "pyd_mcp", outbox)
    crashed = APP.resume(
        db_url, run_id, stub, PERDURE_CRASH_AT="after_call:pydantic_ai.tool.call_1"
    )
    assert crashed.returncode == 75, crashed.stdout + crashed.stderr
    assert len(sent(str(outbox))) == 1 and stub.count == 1

    resumed = APP.resume(db_url, run_id, stub)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    final = show(db_url, run_id)
    assert (final["status"], final["result"]) == ("SUCCEEDED", {"output": "Sent it."})
    (message,) = sent(str(outbox))
    assert message["via"] == "mcp"
    tool = effects(final)["pydantic_ai.tool.call_1"]
    assert (tool["status"], tool["operation"]) == ("confirmed", "send_email")  # reconciled
    assert message["key"] == tool["key"], "the MCP tool was given its effect's key"
    assert stub.count == 2
    (offered,) = stub.requests[0].body["tools"]
    assert offered["function"]["name"] == "send_email"
    assert "idempotency_key" not in json.dumps(offered), "the model never sees the key"


def test_a_sigkill_inside_the_mcp_tool_is_reconciled_not_called_again(
    db_url: str, stub: StubServer, tmp_path: Path
) -> None:
    stub.script(openai_reply("", [EMAIL]), openai_reply("Sent it."))
    outbox = tmp_path / "outbox.jsonl"
    run_id = APP.start(db_url, "pyd_mcp", outbox)
    APP.kill_in_tool(db_url, run_id, stub, tmp_path)
    assert effects(show(db_url, run_id))["pydantic_ai.tool.call_1"]["status"] == "executing"

    resumed = APP.resume(db_url, run_id, stub)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    final = show(db_url, run_id)
    assert final["status"] == "SUCCEEDED"
    (message,) = sent(str(outbox))
    tool = effects(final)["pydantic_ai.tool.call_1"]
    assert message["key"] == tool["key"]
    assert tool["result"] == {"return": {"id": "mail-1"}}, "found by the reconciler"
    assert stub.count == 2
