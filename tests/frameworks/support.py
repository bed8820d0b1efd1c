"""What the framework tests share: start and resume a run of a test app through the CLI (each
command a new process, the stub's URL in its environment), read it back, and SIGKILL a process
that waits inside a tool."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from perdure.providers.stub import StubServer
from tests.apps.outbox import sent
from tests.conftest import cli_env, kill_at_hold, run_cli

__all__ = ["App", "effects", "sent", "show"]


class App:
    """The workflows of one test app module."""

    def __init__(self, module: str) -> None:
        self.module = module

    def start(self, db_url: str, workflow: str, outbox: Path, **extra: object) -> str:
        state = json.dumps({"outbox": str(outbox), **extra})
        out = run_cli(db_url, "start", workflow, "--app", self.module, "--input", state)
        assert out.returncode == 0, out.stderr
        return out.stdout.split()[1]

    def resume(
        self, db_url: str, run_id: str, stub: StubServer, **env: str
    ) -> subprocess.CompletedProcess[str]:
        return run_cli(
            db_url,
            "resume",
            run_id,
            "--app",
            self.module,
            env=cli_env(AGENT_STUB_URL=stub.url, **env),
        )

    def kill_in_tool(self, db_url: str, run_id: str, stub: StubServer, folder: Path) -> None:
        """Resume the run in a process that stops inside the tool (after its message is
        written), and SIGKILL it there."""
        kill_at_hold(db_url, self.module, run_id, folder, AGENT_STUB_URL=stub.url)


def show(db_url: str, run_id: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(run_cli(db_url, "show", run_id, "--json").stdout)
    return found


def effects(shown: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A shown run's effects by name."""
    return {e["name"]: e for e in shown["effects"]}
