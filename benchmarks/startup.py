"""Start-up cost: ``import perdure.cli.main``, ``import perdure``, and a new process that
resumes the crashed demo run and finishes it (``perdure demo resume``).

Each figure is the median wall time of fresh interpreters (interpreter start included), so it
is what a user waits for. Give ``--python`` once per interpreter to compare installs side by
side in the same run (for example an older checkout's virtualenv for "before"); the default is
the interpreter running this script. Each process resumes a run crashed just before by
``perdure demo start --crash-before-reply`` (exit code 75) on a fresh SQLite file.

Bytecode is cached as an installed package's would be, but outside the source tree: the
children run with ``PYTHONPYCACHEPREFIX`` set to a scratch folder (one per interpreter, warmed
before timing) and without ``PYTHONDONTWRITEBYTECODE``, so the figures do not include
compiling the sources. The last row shows what a process pays when it can neither read nor
write a cache (``PYTHONDONTWRITEBYTECODE=1`` and an empty cache folder).

Run: ``python benchmarks/startup.py [--python PATH ...] [--repeat 7]``. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CLI = "import sys; from perdure.cli.entry import run; sys.argv = ['perdure', *sys.argv[1:]]; run()"


ENV: dict[str, str] = {}


def wall_ms(argv: list[str], *, ok: tuple[int, ...] = (0,)) -> float:
    began = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, check=False, env=ENV)
    elapsed = (time.perf_counter() - began) * 1e3
    if done.returncode not in ok:
        raise SystemExit(f"{argv!r} exited {done.returncode}: {done.stderr.decode()[-400:]}")
    return elapsed


def median(samples: list[float]) -> float:
    return statistics.median(samples)


def measure(python: str, folder: Path, repeat: int) -> dict[str, float]:
    ENV.clear()
    ENV.update(os.environ)
    ENV.pop("PYTHONDONTWRITEBYTECODE", None)
    ENV["PYTHONPYCACHEPREFIX"] = str(folder / f"pycache-{abs(hash(python))}")
    wall_ms([python, "-c", "import perdure.cli.main, perdure.demos.cli"])  # warm the cache
    found: dict[str, float] = {}
    found["python -c pass"] = median([wall_ms([python, "-c", "pass"]) for _ in range(repeat)])
    for module in ("perdure", "perdure.cli.main"):
        found[f"import {module}"] = median(
            [wall_ms([python, "-c", f"import {module}"]) for _ in range(repeat)]
        )
    samples = []
    for i in range(repeat):
        db = ["--db", f"sqlite:///{folder / f'demo-{abs(hash(python))}-{i}.db'}"]
        wall_ms([python, "-c", CLI, *db, "demo", "start", "--crash-before-reply"], ok=(75,))
        samples.append(wall_ms([python, "-c", CLI, *db, "demo", "resume"]))
    found["perdure demo resume (new process)"] = median(samples)
    # the pitfall: no bytecode cache that the process may read (an empty cache folder) and
    # none written (PYTHONDONTWRITEBYTECODE), as in an image whose __pycache__ folders were
    # deleted: every module, the standard library's too, is compiled at every start
    ENV["PYTHONDONTWRITEBYTECODE"] = "1"
    ENV["PYTHONPYCACHEPREFIX"] = str(folder / f"empty-{abs(hash(python))}")
    samples = []
    for i in range(repeat):
        db = ["--db", f"sqlite:///{folder / f'cold-{abs(hash(python))}-{i}.db'}"]
        wall_ms([python, "-c", CLI, *db, "demo", "start", "--crash-before-reply"], ok=(75,))
        samples.append(wall_ms([python, "-c", CLI, *db, "demo", "resume"]))
    found["... without any bytecode cache"] = median(samples)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--python", action="append", help="an interpreter to measure")
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    pythons = args.python or [sys.executable]
    with tempfile.TemporaryDirectory(prefix="perdure-startup-") as tmp:
        results = {p: measure(p, Path(tmp), args.repeat) for p in pythons}
    labels = list(next(iter(results.values())))
    print(f"median of {args.repeat} fresh processes, ms")
    for i, p in enumerate(pythons):
        print(f"  [{i}] {p}")
    print(f"  {'':<36}" + "".join(f"{f'[{i}]':>10}" for i in range(len(pythons))))
    for label in labels:
        print(f"  {label:<36}" + "".join(f"{results[p][label]:>10.0f}" for p in pythons))


if __name__ == "__main__":
    main()
