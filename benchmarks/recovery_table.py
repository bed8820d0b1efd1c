"""Recovery and hand-off by state size, printed beside seed 003's table.

Seed 003 measured hot recovery (a crashed agent process restarted, its session rebuilt) over
1,000 simulated crashes, by the size of the agent's state, and asks a planned hand-off between
nodes to stay under 400 ms for 3 MB (500 ms at most). This script measures the same two things
for perdure, on SQLite and PostgreSQL:

* **crash -> the step running again.** A run whose state holds a list of documents of
  ``--sizes`` megabytes (0.5, 2, 4 and 8 by default: one per row of the seed's table; the list
  is a field log, filled by earlier steps) runs ``--crashes`` steps that each SIGKILL their
  process the first time they run (``recovery_app.py``). Time from the instant before the kill
  (written by the dying step) to the instant the step starts again in the next process (written
  by the step), two ways: ``perdure worker --respawn`` (the supervisor makes its standby work
  when the worker dies: a child forked from its warm process in advance, its store open and its
  app loaded, which then takes the run; each worker lives 1.1 s before its crash, since the
  supervisor pauses before restarting a worker that died within a second, as in a crash loop)
  and a new ``perdure worker`` process started as soon as the old one is gone (a "cold"
  process: interpreter start and imports included, with the bytecode cache warm). Either way
  the new worker takes the run at once (the dead process's lease is not waited for) and loads
  the whole state before the step runs.
* **planned hand-off.** A run with ``--handoff-mb`` of state (3 by default) whose steps each
  take ``--step`` seconds, on worker A; worker B idle beside it; SIGTERM to A. A finishes its
  step, commits, releases the lease and exits; B claims the run, loads its state and runs the
  next step. Two figures: from A's ``released`` event to the start of that step in B (the
  hand-off itself), and from SIGTERM to it (adds the rest of A's step). B then becomes A for
  the next round, with a new B.

Every row prints p50 and p99 (nearest rank) beside the seed's figures and the targets: half the
seed's p50 and p99 in every row of crashes, and a hand-off p99 under 400 ms. With fewer than
100 samples p99 is the slowest sample but one, or the slowest; the count is printed.

Run: ``python benchmarks/recovery_table.py [--crashes 100] [--rounds 100] [--db sqlite,postgres]
[--sizes 0.5,2,4,8]`` (PostgreSQL from ``--dsn``, default ``PERDURE_BENCH_PG_DSN`` then
``PERDURE_TEST_PG_DSN``; a scratch database is created and dropped). Nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from postgres_overhead import fresh_database  # noqa: E402

APP = "recovery_app"

SEED = {  # state size -> (p50, p99) of hot recovery in ms, seed 003
    "< 1 MB": (47, 92),
    "1-3 MB": (127, 310),
    "3-5 MB": (480, 1200),
    "> 5 MB": (920, 2800),
}
HANDOFF_TARGET_MS = 400


def bucket(mb: float) -> str:
    if mb < 1:
        return "< 1 MB"
    if mb <= 3:
        return "1-3 MB"
    if mb <= 5:
        return "3-5 MB"
    return "> 5 MB"


def env_for(folder: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(folder / "pycache")
    env["PYTHONPATH"] = os.pathsep.join([str(BENCH), env.get("PYTHONPATH", "")])
    env["RECOVERY_TIMES"] = str(folder / "times.log")
    env.update(extra)
    return env


def perdure(db: str, *args: str) -> list[str]:
    return [sys.executable, "-m", "perdure", "--db", db, *args]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def pairs(folder: Path) -> list[float]:
    """Milliseconds from each ``kill`` to the ``again`` after it."""
    out: list[float] = []
    kill: float | None = None
    for line in (folder / "times.log").read_text().splitlines():
        word, at = line.split()[0], float(line.split()[-1])
        if word == "kill":
            kill = at
        elif word == "again" and kill is not None:
            out.append((at - kill) * 1e3)
            kill = None
    return out


def fresh(folder: Path) -> None:
    for f in folder.glob("times.log*"):
        f.unlink()


@contextmanager
def database(kind: str, folder: Path, dsn: str | None, tag: str) -> Iterator[str]:
    if kind == "sqlite":
        yield f"sqlite:///{folder / f'{tag}-{time.monotonic_ns()}.db'}"
        return
    assert dsn, "PostgreSQL needs --dsn"
    with fresh_database(dsn, f"perdure_recovery_{os.getpid()}_{tag}") as url:
        yield url


def crashes(db: str, folder: Path, mb: float, n: int, respawn: bool) -> list[float]:
    """``n`` crashes of one run with ``mb`` MB of state; ms from each kill to the step again."""
    fresh(folder)
    # a respawned worker that dies within a second of its start is restarted after a pause
    # (crash-loop protection): each one lives longer than that before its crash
    age = "1.1" if respawn else "0"
    env = env_for(folder, RECOVERY_MB=str(mb), RECOVERY_CRASHES=str(n), RECOVERY_MIN_AGE=age)
    subprocess.run(
        perdure(db, "start", "session", "--app", APP), env=env, check=True, capture_output=True
    )
    worker = ["worker", "--app", APP, "--lease", "3600"]
    if respawn:
        proc = subprocess.Popen(
            perdure(db, *worker, "--respawn"),
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            while len(pairs(folder) if (folder / "times.log").exists() else []) < n:
                if proc.poll() is not None:
                    raise SystemExit(f"supervisor exited: {proc.stderr.read().decode()[-800:]}")  # type: ignore[union-attr]
                time.sleep(0.05)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.communicate(timeout=120)
    else:
        for _ in range(n + 1):
            done = subprocess.run(
                perdure(db, *worker, "--until-idle"), env=env, capture_output=True, check=False
            )
            if done.returncode == 0:
                break
            if done.returncode != -signal.SIGKILL:
                raise SystemExit(f"worker exited {done.returncode}: {done.stderr.decode()[-800:]}")
    return pairs(folder)


def firsts(folder: Path) -> dict[int, float]:
    out: dict[int, float] = {}
    path = folder / "times.log"
    if path.exists():
        for line in path.read_text().splitlines():
            parts = line.split()
            if parts[0] == "first":
                out[int(parts[1])] = float(parts[2])
    return out


def wait_for(predicate: object, what: str, timeout: float = 120) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():  # type: ignore[operator]
            return
        time.sleep(0.01)
    raise SystemExit(f"timed out waiting until {what}")


def handoffs(
    db: str, folder: Path, mb: float, rounds: int, step: float
) -> tuple[list[float], list[float]]:
    """(released -> step in B, SIGTERM -> step in B) in ms, one per round."""
    from perdure import Runtime

    fresh(folder)
    env = env_for(
        folder, RECOVERY_MB=str(mb), RECOVERY_CRASHES="0", RECOVERY_STEP_SECONDS=str(step)
    )
    worker = ["worker", "--app", APP, "--poll", "0.05"]
    out_release: list[float] = []
    out_signal: list[float] = []
    with Runtime(db) as rt:
        sys.path.insert(0, str(BENCH))
        from recovery_app import session

        rt.register(session)
        run = rt.start(session, {})
        a = subprocess.Popen(
            perdure(db, *worker), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        procs = [a]
        try:
            wait_for(lambda: a.pid in firsts(folder), "worker A runs the steps", 600)
            for _ in range(rounds):
                b = subprocess.Popen(
                    perdure(db, *worker), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
                )
                procs.append(b)
                wait_for(
                    lambda: any(
                        w.pid == b.pid and str(w.state) == "live"  # noqa: B023
                        for w in rt.activity.workers()
                    ),
                    "worker B is live",
                )
                time.sleep(0.2)  # B idle in its claim loop
                sent = time.time()
                a.send_signal(signal.SIGTERM)
                if a.wait(timeout=120) != 0:
                    raise SystemExit(
                        f"worker A exited {a.returncode}: {a.stderr.read().decode()[-800:]}"
                    )  # type: ignore[union-attr]
                wait_for(lambda: b.pid in firsts(folder), "worker B runs the step")  # noqa: B023
                started = firsts(folder)[b.pid]
                events = rt.store.events("default", run.run_id, limit=50, latest=True)
                released = max((e for e in events if e.type == "released"), key=lambda e: e.seq)
                out_release.append((started - released.at.timestamp()) * 1e3)
                out_signal.append((started - sent) * 1e3)
                a = b
        finally:
            rt.cancel(run.run_id)
            for p in procs:
                if p.poll() is None:
                    p.send_signal(signal.SIGTERM)
                    try:
                        p.wait(timeout=60)
                    except subprocess.TimeoutExpired:
                        p.kill()
                        p.wait()
    return out_release, out_signal


def cell(values: list[float]) -> str:
    return f"{pct(values, 0.5):7.0f} / {pct(values, 0.99):6.0f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--crashes", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--sizes", default="0.5,2,4,8")
    parser.add_argument("--handoff-mb", type=float, default=3.0)
    parser.add_argument("--step", type=float, default=0.02)
    parser.add_argument("--db", default="sqlite,postgres")
    parser.add_argument("--modes", default="respawn,cold")
    parser.add_argument(
        "--dsn",
        default=os.environ.get("PERDURE_BENCH_PG_DSN", os.environ.get("PERDURE_TEST_PG_DSN")),
    )
    args = parser.parse_args()
    sizes = [float(s) for s in args.sizes.split(",") if s]
    modes = [m for m in args.modes.split(",") if m]
    print(
        f"load average {os.getloadavg()[0]:.2f}; {os.cpu_count()} CPUs; "
        f"{args.crashes} crashes per cell, {args.rounds} hand-offs"
    )
    head = (
        f"{'database':<11} {'state':>7} {'mode':<8} {'n':>4} {'p50 / p99 ms':>16}"
        f" {'seed p50 / p99':>15} {'target':>14}"
    )
    print(head)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for kind in [d for d in args.db.split(",") if d]:
            for mb in sizes:
                for mode in modes:
                    with database(kind, folder, args.dsn, f"c{mb}".replace(".", "_")) as db:
                        got = crashes(db, folder, mb, args.crashes, respawn=mode == "respawn")
                    seed = SEED[bucket(mb)]
                    print(
                        f"{kind:<11} {mb:>5g}MB {mode:<8} {len(got):>4} {cell(got):>16}"
                        f" {seed[0]:>7} / {seed[1]:>5} {seed[0] / 2:>6.0f} / {seed[1] / 2:>5.0f}",
                        flush=True,
                    )
            if args.rounds:
                with database(kind, folder, args.dsn, "handoff") as db:
                    rel, sig = handoffs(db, folder, args.handoff_mb, args.rounds, args.step)
                print(
                    f"{kind:<11} {args.handoff_mb:>5g}MB hand-off {len(rel):>4} {cell(rel):>16}"
                    f" {'(release -> step in B)':>26}  target p99 < {HANDOFF_TARGET_MS}",
                    flush=True,
                )
                print(
                    f"{kind:<11} {args.handoff_mb:>5g}MB SIGTERM  {len(sig):>4} {cell(sig):>16}"
                    f" {'(SIGTERM -> step in B)':>26}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
