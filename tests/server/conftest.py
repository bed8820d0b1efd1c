"""A real uvicorn server on 127.0.0.1 (in a thread of the test process, on a free port) in
front of a Runtime on each backend, with API keys of two tenants, and a worker thread."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
import uvicorn

from perdure import FakeClock, Runtime
from perdure.runtime.worker import Worker
from perdure.server import create_app
from tests.apps import server_app, waits_app
from tests.backends import BACKENDS
from tests.conftest import fresh_db_url

WORKFLOWS = [
    server_app.job,
    server_app.charge,
    server_app.plain,
    server_app.flaky,
    server_app.spend,
    server_app.talk_flow,
    waits_app.order,
]
KEYS = {
    "admin": ("t1", ("admin", "approver")),
    "approver": ("t1", ("approver",)),
    "reader": ("t1", ()),
    "other": ("t2", ("admin", "approver")),
}


@dataclass
class Served:
    """The server under test: its URL, its runtime and a key of each kind."""

    url: str
    runtime: Runtime
    tokens: dict[str, str] = field(default_factory=dict)

    def client(self, who: str | None = "admin") -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.tokens[who]}"} if who else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30)


@dataclass
class ServerThread:
    server: uvicorn.Server
    thread: threading.Thread
    port: int


def start_server(app: object) -> ServerThread:
    """Start uvicorn in a thread on a socket of 127.0.0.1 that listens before this returns
    (a request sent at once waits in the socket's backlog until uvicorn accepts it)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    config = uvicorn.Config(
        app,  # type: ignore[arg-type]
        log_level="warning",
        timeout_graceful_shutdown=2,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    return ServerThread(server, thread, sock.getsockname()[1])


def stop_server(running: ServerThread) -> None:
    running.server.should_exit = True
    running.thread.join(timeout=30)


@pytest.fixture(params=BACKENDS)
def server_db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return fresh_db_url(request, tmp_path, migrated=True)


@pytest.fixture
def served(server_db: str, clock: FakeClock) -> Iterator[Served]:
    rt = Runtime(server_db, clock=clock, workflows=WORKFLOWS, owner="server")
    running = start_server(create_app(rt, heartbeat=0.5, poll=0.02, recheck=0.1))
    out = Served(f"http://127.0.0.1:{running.port}", rt)
    for name, (tenant, roles) in KEYS.items():
        out.tokens[name] = rt.keys.create(name, tenant=tenant, roles=roles).token
    yield out
    stop_server(running)
    rt.close()


@pytest.fixture
def worker(served: Served, clock: FakeClock) -> Iterator[Runtime]:
    """A worker thread with a runtime of its own on the server's database."""
    rt = Runtime(served.runtime.store.url, clock=clock, workflows=WORKFLOWS, owner="worker")
    w = Worker(rt, poll_interval=0.01, max_poll_interval=0.05)
    thread = threading.Thread(target=w.run, daemon=True)
    thread.start()
    yield rt
    w.stop()
    server_app.GATE.release(1000)  # let a tick held open go, so the worker can drain
    thread.join(timeout=30)
    while server_app.GATE.acquire(blocking=False):
        pass
    rt.close()
