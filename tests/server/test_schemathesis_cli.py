"""schemathesis as a user runs it: ``schemathesis run --checks all`` (every check it has:
conformance, negative and positive data, unsupported methods and their ``Allow`` header,
missing headers, ignored authentication, use after free, ...) in a process of its own
against a real uvicorn server on 127.0.0.1, on each backend, once with a valid key of each
role (``admin``, ``approver``, none). Each run must find no failure, and the server must
answer no request with 429: a fuzzer's bad keys must never lock out the valid key it sends
along. Generation is seeded and deterministic, one worker, few examples per operation, so
the run is the same each time and bounded.

A stream of a run that is still going never ends by itself; the fuzzer reads a response to
its end, so the test's server ends every event stream after its first frames (and then lets
the handler see the client go), which is all a check looks at."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from perdure import FakeClock, Runtime
from perdure.core.throttle import ThrottlePolicy
from perdure.server import create_app
from tests.server.conftest import WORKFLOWS, start_server, stop_server

ROLES = {"admin": ("admin", "approver"), "approver": ("approver",), "viewer": ()}
"""A key of each kind of role there is: administrative, a decision's, and none (read, start,
cancel, signal)."""

PHASES = {"admin": "examples,coverage,fuzzing,stateful", "approver": "examples,fuzzing"}
"""The admin key reaches every operation: it runs every phase, the coverage phase included
(every operation's edge values, missing headers, unsupported methods, invalid credentials:
what a key's roles do not change, and the costliest phase to generate). The other keys run the
examples and the fuzzing phase, where their refusals (403) differ."""

GENEROUS = ThrottlePolicy(free=100_000)
"""schemathesis's own probes with invalid credentials are failed checks, counted by design
(after five, a failing check is 429: ``tests/server/test_throttle.py``); its authentication
check asks for a 401 each time, so the fuzzed server lets more fail before the wait. The
valid key never waits, whatever the policy."""

EXAMPLES = 2
"""Generated requests per operation and phase. The three runs take about 2.5 minutes per
backend on the shared 2-core machine, nearly all of it schemathesis generating the admin
key's coverage phase (the server's own time is a few seconds)."""

FRAMES = 2
"""Frames of an event stream the test's server sends before it ends the stream."""


class Recorder:
    """ASGI middleware of the test: counts the statuses the server answers, and ends every
    ``text/event-stream`` response after :data:`FRAMES` frames."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.statuses: Counter[int] = Counter()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        state = {"stream": False, "seen": b"", "ended": False}

        async def sending(message: Message) -> None:
            if state["ended"]:
                return
            if message["type"] == "http.response.start":
                self.statuses[message["status"]] += 1
                headers = dict(message.get("headers", []))
                state["stream"] = headers.get(b"content-type", b"").startswith(b"text/event-stream")
            elif message["type"] == "http.response.body" and state["stream"]:
                state["seen"] = bytes(state["seen"]) + message.get("body", b"")
                if bytes(state["seen"]).count(b"\n\n") > FRAMES:
                    state["ended"] = True
                    await send({"type": "http.response.body", "body": message.get("body", b"")})
                    return
            await send(message)

        async def receiving() -> Message:
            if state["ended"]:
                return {"type": "http.disconnect"}
            return await receive()

        await self.app(scope, receiving, sending)


def schemathesis_cli() -> list[str]:
    found = shutil.which("schemathesis", path=str(Path(sys.executable).parent))
    assert found, "schemathesis is installed with the test extra"
    return [found]


@pytest.fixture
def fuzzed(server_db: str, clock: FakeClock) -> Iterator[tuple[str, Runtime, Recorder]]:
    rt = Runtime(server_db, clock=clock, workflows=WORKFLOWS, owner="server")
    recorder = Recorder(create_app(rt, heartbeat=0.5, poll=0.02, recheck=0.1, throttle=GENEROUS))
    running = start_server(recorder)
    yield f"http://127.0.0.1:{running.port}", rt, recorder
    stop_server(running)
    rt.close()


def test_schemathesis_with_every_check_finds_nothing_with_a_key_of_each_role(
    fuzzed: tuple[str, Runtime, Recorder], tmp_path: Path
) -> None:
    url, rt, recorder = fuzzed
    rt.start("job", {"ticks": 0, "amount": 7}, tenant="t1")
    rt.run_until_idle()  # a run waits for approval: a decision has a target
    found: dict[str, str] = {}
    for role, roles in ROLES.items():
        token = rt.keys.create(f"fuzz-{role}", tenant="t1", roles=roles).token
        report = tmp_path / f"{role}.xml"
        done = subprocess.run(
            [
                *schemathesis_cli(),
                "run",
                f"{url}/openapi.json",
                "--checks",
                "all",
                "--header",
                f"Authorization: Bearer {token}",
                "--phases",
                PHASES.get(role, PHASES["approver"]),
                "--max-examples",
                str(EXAMPLES),
                "--seed",
                "7",
                "--generation-deterministic",
                "--workers",
                "1",
                "--no-shrink",
                "--request-timeout",
                "20",
                "--no-color",
                "--report",
                "junit",
                "--report-junit-path",
                str(report),
            ],
            capture_output=True,
            text=True,
            timeout=600,
            cwd=tmp_path,
            check=False,
        )
        if done.returncode != 0 or "Rate limited" in done.stdout:
            found[role] = done.stdout[-20_000:] + done.stderr[-2000:]
    assert not found, json.dumps(found, indent=1)
    assert recorder.statuses[429] == 0, recorder.statuses
