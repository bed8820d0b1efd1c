"""A real MCP server (the official ``mcp`` package, stdio) with one side-effecting tool,
``send_email``, which appends each message with the key it was sent under to the outbox named
by ``MCP_OUTBOX`` (no deduplication). With ``AGENT_HOLD=<path>`` it stops inside the tool once
the message is written, as ``tests.apps.pydantic_ai_app``'s own tool does, so a test can
SIGKILL the agent's process there. Run as ``python -m tests.apps.mcp_mail_server``."""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path

from tests.waypoints import reach

try:  # mcp 1.x
    from mcp.server.fastmcp import FastMCP as Server
except ImportError:  # mcp 2.x renamed it
    from mcp.server.mcpserver import MCPServer as Server  # type: ignore[no-redef]

server = Server("mail")


@server.tool()
def send_email(to: str, body: str, idempotency_key: str) -> dict[str, str]:
    """Send an email."""
    outbox = Path(os.environ["MCP_OUTBOX"])
    number = len(outbox.read_text().splitlines()) + 1 if outbox.exists() else 1
    with outbox.open("a") as f:
        f.write(json.dumps({"key": idempotency_key, "to": to, "body": body, "via": "mcp"}) + "\n")
    where = os.environ.get("AGENT_HOLD")
    if where:
        reach(where + ".reached")
        with open(where, "a") as gate:  # the test holds it and kills the agent's process here
            fcntl.flock(gate, fcntl.LOCK_SH)
    return {"id": f"mail-{number}"}


if __name__ == "__main__":
    server.run()
