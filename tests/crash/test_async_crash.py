"""An async agent in real processes: its steps await a real HTTP server on 127.0.0.1, a worker
is SIGKILLed while a call is in flight, a new process finishes the run without a second call;
a bug pauses the run and `perdure resume` after the fix continues it."""

from __future__ import annotations

import json
import signal
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest

from perdure import RunStatus, Runtime
from tests.apps.async_app import sleepy
from tests.conftest import ROOT, cli_env, perdure_cmd, run_cli

APP = "tests.apps.async_app"


class Answers:
    """The other side: applies each key once, can hold a request open until released."""

    def __init__(self) -> None:
        self.applied: dict[str, int] = {}
        self.received = threading.Event()
        self.hold = threading.Event()
        self.hold.set()

    def handle(self, path: str) -> dict[str, object]:
        parts = urlsplit(path)
        key = parse_qs(parts.query)["key"][0]
        if parts.path == "/apply":
            self.applied[key] = self.applied.get(key, 0) + 1
            self.received.set()
            self.hold.wait(30)
            return {"answer": "23.5C"}
        if parts.path == "/seen":
            return {"applied": key in self.applied, "result": {"answer": "23.5C"}}
        raise KeyError(parts.path)


@pytest.fixture
def server() -> Iterator[tuple[str, Answers]]:
    answers = Answers()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = json.dumps(answers.handle(self.path)).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", answers
    finally:
        answers.hold.set()
        httpd.shutdown()
        httpd.server_close()


def start(db_url: str, url: str) -> str:
    out = run_cli(db_url, "start", "fetch", "--app", APP, "--input", json.dumps({"url": url}))
    assert out.returncode == 0, out.stderr
    return out.stdout.split()[1]


def show(db_url: str, run_id: str) -> dict:  # type: ignore[type-arg]
    return json.loads(run_cli(db_url, "show", run_id, "--json").stdout)  # type: ignore[no-any-return]


def test_an_async_run_survives_sigkill_mid_await_and_calls_once(
    db_url: str, server: tuple[str, Answers]
) -> None:
    url, answers = server
    run_id = start(db_url, url)
    answers.hold.clear()  # the server keeps the call open: the step is awaiting it
    worker = subprocess.Popen(
        perdure_cmd(db_url, "resume", run_id, "--app", APP),
        env=cli_env(),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert answers.received.wait(60), "the step never reached the server"
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=30)
    finally:
        if worker.poll() is None:
            worker.kill()
    answers.hold.set()
    assert show(db_url, run_id)["next_step"] == "ask", "nothing after the intent was committed"
    resumed = run_cli(db_url, "resume", run_id, "--app", APP)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    final = show(db_url, run_id)
    assert (final["status"], final["result"]) == ("SUCCEEDED", {"answer": "23.5C"})
    assert list(answers.applied.values()) == [1], "reconciled with the server, never resent"


def test_a_bug_in_an_async_step_pauses_the_run_until_resume_after_the_fix(
    db_url: str, server: tuple[str, Answers]
) -> None:
    url, answers = server
    run_id = start(db_url, url)
    broken = run_cli(db_url, "resume", run_id, "--app", APP, env=cli_env(ASYNC_APP_BROKEN="1"))
    assert broken.returncode == 3, broken.stdout + broken.stderr
    assert "NEEDS_ATTENTION (step_raised), next step check" in broken.stdout
    paused = show(db_url, run_id)
    assert paused["error"]["evidence"]["error"]["exception"] == "ValueError"
    fixed = run_cli(db_url, "resume", run_id, "--app", APP)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert show(db_url, run_id)["status"] == "SUCCEEDED"
    assert list(answers.applied.values()) == [1], "the call before the bug was not repeated"


def test_one_worker_process_holds_hundreds_of_async_runs(db_url: str) -> None:
    runs = 200
    with Runtime(db_url, workflows=[sleepy]) as rt:
        ids = [rt.start(sleepy).run_id for _ in range(runs)]
    worker = run_cli(
        db_url,
        "worker",
        "--app",
        APP,
        "--concurrency",
        str(runs),
        "--until-idle",
        env=cli_env(ASYNC_APP_DELAY="0.05"),
        timeout=600,
    )
    assert worker.returncode == 0, worker.stderr
    assert f"x{runs} serving" in worker.stdout
    with Runtime(db_url, workflows=[sleepy]) as rt:
        for run_id in ids:
            view = rt.status(run_id)
            assert view.run.status is RunStatus.SUCCEEDED
            assert [(s.name, s.fence) for s in view.steps] == [("first", 1), ("second", 1)]
