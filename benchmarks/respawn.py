"""Recovery time: a worker process is SIGKILLed in the middle of a step; how long until the
step runs again in a new process?

Two ways of getting the new process, on the same SQLite file:

* ``perdure worker --respawn``: the supervisor makes its standby (a worker forked from its
  warm process and connected in advance, claiming nothing) work the moment the old one dies;
* a new ``perdure worker`` process started when the old one died (what a service manager does:
  interpreter start and imports included; the time the manager takes to notice is not).

In both, the new worker takes the dead one's run over at once (its lease is held by a process
of this host that no longer exists), so no lease expiry is waited for. The time is from the
instant before the kill (written by the dying step) to the instant the resumed step starts
(written by the step when it runs again), both read with ``time.time()`` in the processes.

Run: ``python benchmarks/respawn.py [--repeat 7]``. This is a benchmark: nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
APP = "respawn_app"


def env_for(folder: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(folder / "pycache")
    env["PYTHONPATH"] = os.pathsep.join([str(BENCH), env.get("PYTHONPATH", "")])
    env["RESPAWN_TIMES"] = str(folder / "times.log")
    return env


def perdure(db: str, *args: str) -> list[str]:
    return [sys.executable, "-m", "perdure", "--db", db, *args]


def times(folder: Path) -> tuple[float, float]:
    """(kill, resumed step start) from the app's log."""
    lines = (folder / "times.log").read_text().split()
    return float(lines[lines.index("kill") + 1]), float(lines[lines.index("again") + 1])


def one(folder: Path, respawn: bool) -> float:
    """Milliseconds from the kill to the resumed step, in one fresh database."""
    for name in ("times.log", "killed-once"):
        (folder / name).unlink(missing_ok=True)
    db = f"sqlite:///{folder / f'bench-{time.monotonic_ns()}.db'}"
    env = {**env_for(folder), "RESPAWN_MARKER": str(folder / "killed-once")}
    subprocess.run(
        perdure(db, "start", "respawn", "--app", APP), env=env, check=True, capture_output=True
    )
    worker = ["worker", "--app", APP, "--lease", "3600"]
    if respawn:
        proc = subprocess.Popen(
            perdure(db, *worker, "--respawn"), env=env, stdout=subprocess.PIPE, text=True
        )
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("run "):
                break
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
    else:
        first = subprocess.run(
            perdure(db, *worker, "--until-idle"), env=env, capture_output=True, check=False
        )
        assert first.returncode == -signal.SIGKILL, first
        subprocess.run(
            perdure(db, *worker, "--until-idle"), env=env, capture_output=True, check=True
        )
    kill, again = times(folder)
    return (again - kill) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        one(folder, respawn=False)  # warm the bytecode cache
        rows = {
            "perdure worker --respawn (fork from the warm supervisor)": [
                one(folder, respawn=True) for _ in range(args.repeat)
            ],
            "a new perdure worker process": [
                one(folder, respawn=False) for _ in range(args.repeat)
            ],
        }
    print(f"SIGKILL mid-step -> the step runs again; median of {args.repeat}, ms")
    for label, samples in rows.items():
        print(f"  {label:58s} {statistics.median(samples):7.1f}   (min {min(samples):.1f})")


if __name__ == "__main__":
    main()
