"""Shared fixtures: real SQLite files in a temp folder, real PostgreSQL databases (see
tests/backends.py), a fake clock (in this process, or shared with subprocesses through a file),
CLI subprocesses."""

from __future__ import annotations

import fcntl
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import warnings
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pytest

from perdure import FakeClock, Runtime
from perdure.runtime.clock import TEST_CLOCK_VARIABLE
from perdure.store.sqlite.store import SqliteStore
from perdure.testing import FileClock
from tests import processes
from tests.backends import DSN_VARIABLE, PgServer, default_dsn, pg_server_or_skip
from tests.waypoints import Waypoint

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"

# Markers are applied here, by what a test uses and where it lives, so nobody has to remember
# them (registered in pyproject.toml; the fast inner loop is ``pytest -m "not pg and not slow"``).
PG_FIXTURES = {"pg_server", "pg_url", "pg_empty_url"}
PG_FOLDERS = {"outage"}  # starts its own PostgreSQL server
SLOW_FOLDERS = {"cli", "crash", "fleet", "outage", "browser", "frameworks"}  # processes, kills
SHARED_PER_MODULE = {"browser"}  # a module-scoped fixture starts something costly (a browser)


def pytest_configure(config: pytest.Config) -> None:
    """Point the PostgreSQL tests at the local server when none is named: the README's test
    command then runs them too (``PERDURE_TEST_PG_DSN=`` empty turns them off)."""
    dsn = default_dsn()
    if dsn is not None and not os.environ.get(DSN_VARIABLE):
        os.environ[DSN_VARIABLE] = dsn


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """How many pytest-xdist workers ``-n auto`` (the default, see pyproject.toml) starts: two
    per core, at most six. Most of the suite waits — for its CLI and worker processes, for
    PostgreSQL's disk, for a browser — so two workers keep a core busy; six bound the
    PostgreSQL connections and the processes a loaded machine must hold at once."""
    return max(2, min(2 * (os.cpu_count() or 1), 6))


def pytest_report_header(config: pytest.Config) -> str:
    dsn = os.environ.get(DSN_VARIABLE)
    return f"PostgreSQL tests: {dsn}" if dsn else f"PostgreSQL tests: off ({DSN_VARIABLE} empty)"


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark ``pg`` every test that uses PostgreSQL (a PG fixture, or a ``postgres`` backend
    parameter) and ``slow`` every test in a folder of process-level tests; keep the tests of a
    module that shares one started browser in one pytest-xdist worker (``xdist_group``)."""
    for item in items:
        try:
            folder = item.path.relative_to(TESTS).parts[0]
        except ValueError:
            folder = ""
        callspec = getattr(item, "callspec", None)
        params = callspec.params.values() if callspec is not None else ()
        uses_pg = (
            folder in PG_FOLDERS
            or bool(PG_FIXTURES & set(getattr(item, "fixturenames", ())))
            or any(isinstance(v, str) and v == "postgres" for v in params)
        )
        if uses_pg:
            item.add_marker(pytest.mark.pg)
        if folder in SLOW_FOLDERS:
            item.add_marker(pytest.mark.slow)
        if folder in SHARED_PER_MODULE:
            item.add_marker(pytest.mark.xdist_group(f"{folder}/{item.path.name}"))


processes.count_started_processes()


@pytest.fixture(autouse=True)
def no_process_left_behind(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every process a test started is gone after it (see tests/processes.py): one still
    running is stopped with SIGTERM and reported (a warning); one that SIGTERM did not stop
    within the grace period is killed and fails the test, since a perdure process that ignores
    SIGTERM is a bug. Costs nothing for a test that started no process."""
    owner = f"{os.getpid()}-{id(request)}-{time.monotonic_ns()}"
    before_started, before_children = processes.started(), processes.children()
    previous = os.environ.get(processes.OWNER_VARIABLE)
    os.environ[processes.OWNER_VARIABLE] = owner
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(processes.OWNER_VARIABLE, None)
        else:
            os.environ[processes.OWNER_VARIABLE] = previous
    if processes.started() == before_started and not processes.children() - before_children:
        return
    left = processes.stop(processes.left_behind(owner, before_children))
    if not left:
        return
    lines = "\n".join(
        f"  pid {p.pid}: {p.command} ({'stopped by SIGTERM' if p.stopped_by_sigterm else 'KILLED'})"
        for p in left
    )
    if all(p.stopped_by_sigterm for p in left):
        warnings.warn(f"the test left processes running:\n{lines}", stacklevel=1)
    else:
        pytest.fail(f"the test left processes that SIGTERM did not stop:\n{lines}")


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def shared_clock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FileClock:
    """A fake clock that this process and every process it starts read (``PERDURE_TEST_CLOCK``):
    runtimes built without a clock, ``run_cli`` and workers all see it; ``advance`` moves it."""
    clock = FileClock.create(tmp_path / "clock")
    monkeypatch.setenv(TEST_CLOCK_VARIABLE, str(clock.path))
    return clock


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'perdure.db'}"


@pytest.fixture
def runtime(db_url: str, clock: FakeClock) -> Iterator[Runtime]:
    rt = Runtime(db_url, clock=clock, owner="test-worker")
    yield rt
    rt.close()


def fresh_db_url(request: pytest.FixtureRequest, tmp_path: Path, *, migrated: bool) -> str:
    """For a fixture parametrized with ``BACKENDS``: a fresh SQLite file, or a fresh PostgreSQL
    database (migrated from the template, or empty so that the first command migrates it)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'perdure.db'}"
    url: str = request.getfixturevalue("pg_url" if migrated else "pg_empty_url")
    return url


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[SqliteStore]:
    store = SqliteStore(tmp_path / "store.db")
    yield store
    store.close()


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """The PostgreSQL test server (skips without PERDURE_TEST_PG_DSN, fails under CI)."""
    server = pg_server_or_skip()
    yield server
    server.close()


@pytest.fixture
def pg_url(pg_server: PgServer) -> Iterator[str]:
    """The URL of a fresh, migrated PostgreSQL database, dropped after the test."""
    url = pg_server.migrated()
    yield url
    pg_server.drop(url)


@pytest.fixture
def pg_empty_url(pg_server: PgServer) -> Iterator[str]:
    """The URL of a fresh PostgreSQL database without a schema, dropped after the test."""
    url = pg_server.empty()
    yield url
    pg_server.drop(url)


def cli_env(**extra: str) -> dict[str, str]:
    """The environment of a CLI subprocess: this one without perdure's and the test apps'
    variables, except the shared test clock (see ``shared_clock``), plus ``extra``."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k == TEST_CLOCK_VARIABLE or not k.startswith(("PERDURE_", "COUNTING_"))
    }
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


def perdure_cmd(db_url: str, *args: str) -> list[str]:
    return [sys.executable, "-m", "perdure", "--db", db_url, *args]


def read_until(
    proc: subprocess.Popen[str], *texts: str, seconds: float = 60, stderr: bool = False
) -> list[str]:
    """Lines of ``proc``'s stdout (``stderr``: its stderr) until each of ``texts`` was printed,
    the last of them ending the list (bounded: a reader thread, so a process that never prints
    one fails the test instead of hanging it)."""
    lines: queue.Queue[str | None] = queue.Queue()
    wanted = set(texts)
    stream = proc.stderr if stderr else proc.stdout

    def read() -> None:
        assert stream is not None
        missing = set(wanted)
        for line in stream:
            lines.put(line)
            missing = {t for t in missing if t not in line}
            if not missing:
                return
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    seen: list[str] = []
    deadline = time.monotonic() + seconds
    while wanted:
        line = lines.get(timeout=max(deadline - time.monotonic(), 0.01))
        assert line is not None, f"the process ended without printing {sorted(wanted)}: {seen}"
        seen.append(line)
        wanted = {t for t in wanted if t not in line}
    return seen


def start_worker(
    db_url: str, app: str, *args: str, env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    """A ``perdure worker --app APP ARGS`` process (output piped, text), from the checkout."""
    return subprocess.Popen(
        perdure_cmd(db_url, "worker", "--app", app, *args),
        env=env or cli_env(),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def kill_at_hold(db_url: str, app: str, run_id: str, folder: Path, **env: str) -> None:
    """Resume ``run_id`` in a new process that stops at its app's hold (``AGENT_HOLD=<hold>``:
    the app reaches the waypoint ``<hold>.reached`` and waits at the gate ``<hold>``, which this
    process holds), and SIGKILL it there."""
    hold = folder / "hold"
    with open(hold, "a") as held, Waypoint(folder / "hold.reached") as reached:
        fcntl.flock(held, fcntl.LOCK_EX)
        worker = subprocess.Popen(
            perdure_cmd(db_url, "resume", run_id, "--app", app),
            env=cli_env(AGENT_HOLD=str(hold), **env),
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            reached.wait(worker)
        except AssertionError as exc:
            worker.kill()
            raise AssertionError(f"{exc}: {worker.communicate()[1]!r}") from None
        worker.send_signal(signal.SIGKILL)
        worker.communicate(timeout=30)
        assert worker.returncode == -signal.SIGKILL


def run_cli(
    db_url: str, *args: str, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """Run ``perdure --db DB ARGS`` in a new process and capture its output."""
    return subprocess.run(
        perdure_cmd(db_url, *args),
        env=env or cli_env(),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def entries(log: Path, run_id: str | None = None) -> Counter[str]:
    """How many times each step was entered (of one run, or of all), from a COUNTING_LOG file."""
    if not log.exists():
        return Counter()
    found: Counter[str] = Counter()
    for line in log.read_text().splitlines():
        _, name, rid = line.split()
        if run_id is None or rid == run_id:
            found[name] += 1
    return found


class Gates:
    """Gates that hold steps of ``tests.apps.counting`` in their processes: each is a lock file
    this test process holds exclusively from the start; a step at the gate waits for a shared
    lock, so it goes on exactly when :meth:`open` releases it (and a killed process simply lets
    go of its wait)."""

    def __init__(self, folder: Path, *names: str) -> None:
        folder.mkdir(exist_ok=True)
        self.folder = folder
        self._held: dict[str, IO[str]] = {}
        for name in names:
            held = open(folder / name, "a")  # noqa: SIM115 - held until the gate opens
            fcntl.flock(held, fcntl.LOCK_EX)
            self._held[name] = held

    def env(self, hold_at: str) -> dict[str, str]:
        """The environment that makes a process wait at gate ``hold_at``."""
        return {"COUNTING_GATE": str(self.folder), "COUNTING_HOLD_AT": hold_at}

    def open(self, name: str) -> None:
        """Let every step waiting at gate ``name`` go on (and every later one pass)."""
        held = self._held.pop(name, None)
        if held is not None:
            held.close()

    def open_all(self) -> None:
        for name in list(self._held):
            self.open(name)
