"""Every performance target in one run: the benchmarks that measure them, then one table.

Runs, one after the other with this interpreter (so nothing else of perdure's competes for the
CPUs), and prints each one's own output in full:

* ``lean_step.py``: CPU per plain step against the bare driver, round trips (PostgreSQL) and
  statements (SQLite) per recorded call, CPU per recorded call against a plain step;
* ``growing_state.py``: loading a 3.2 MB list against ``orjson.loads`` of it;
* ``starvation.py``: 16 runs on PostgreSQL beside two CPU-burning processes, against LangGraph;
* ``recovery_table.py``: crash -> the step running again by state size, ``--respawn`` and a new
  process, and the planned hand-off, beside seed 003's figures;
* ``startup.py``: a new process that resumes a crashed run.

Then a table of each target, the figure measured for it and whether it is met. The figures move
with whatever else the machine runs: run it on a quiet machine, and compare ratios, which are
taken within one benchmark's run.

Run: ``python benchmarks/targets.py [--crashes 100] [--cold-crashes 20] [--quick]``
(PostgreSQL from ``PERDURE_BENCH_PG_DSN`` or ``PERDURE_TEST_PG_DSN``; ``--quick`` runs every
benchmark small, to check that they all run: its figures mean little). Nothing is asserted.
About 25 minutes in full on the 2-core development VM.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

BENCH = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Target:
    """One target: what it asks, where its figure comes from, how the figure is read."""

    name: str
    source: str
    pattern: str
    """A regular expression over the source's output; its groups are the figure."""
    met: Callable[[list[float]], bool]
    """True when the figure (the groups as numbers) meets the target."""


def at_most(*limits: float) -> Callable[[list[float]], bool]:
    return lambda v: all(x <= limit for x, limit in zip(v, limits, strict=True))


SQLITE, PG = r"(?s)SQLite.*?", r"(?s)PostgreSQL \(.*?"
RECONCILED = r"with a reconciler\s+[\d.]+ µs CPU\s+([\d.]+)x a step"
LOG_LOAD = r", logs on" + r"\s+[\d.]+" * 5 + r"\s+([\d.]+)"
SEED_HALVES = (("0.5MB", 24, 46), ("2MB", 64, 155), ("4MB", 240, 600), ("8MB", 460, 1400))

TARGETS = [
    Target(
        "plain step <= 1.6x bare commit CPU, SQLite",
        "lean",
        SQLITE + r"plain step .*?([\d.]+)x bare",
        at_most(1.6),
    ),
    Target(
        "plain step <= 2.5x bare INSERT CPU, PostgreSQL",
        "lean",
        PG + r"plain step .*?([\d.]+)x bare",
        at_most(2.5),
    ),
    Target(
        "round trips per recorded call, with a reconciler",
        "lean",
        r"round trips per recorded call .*\n\s+\.\.\. with a reconciler\s+([\d.]+)",
        at_most(2),
    ),
    Target(
        "round trips per recorded call, without",
        "lean",
        r"round trips per recorded call\s+([\d.]+)",
        at_most(2),
    ),
    Target(
        "recorded call (reconciler) <= 1.5x a step, SQLite",
        "lean",
        SQLITE + RECONCILED,
        at_most(1.5),
    ),
    Target(
        "recorded call (reconciler) <= 1.5x a step, PostgreSQL",
        "lean",
        PG + RECONCILED,
        at_most(1.5),
    ),
    Target(
        "3.2 MB field log load <= 2x decode, SQLite",
        "growing",
        "perdure SQLite" + LOG_LOAD,
        at_most(2),
    ),
    Target(
        "3.2 MB field log load <= 2x decode, PostgreSQL",
        "growing",
        "perdure PostgreSQL" + LOG_LOAD,
        at_most(2),
    ),
    Target(
        "16 runs beside 2 burners >= 1.5x LangGraph",
        "starvation",
        r"burn\s+perdure worker \(one Runtime\).*?x([\d.]+) LangGraph",
        lambda v: v[0] >= 1.5,
    ),
    *(
        Target(
            f"{db} {size} {mode} p50 / p99 <= {p50} / {p99} ms",
            source,
            rf"{db}\s+{size}\s+{mode}\s+\d+\s+(\d+) /\s+(\d+)",
            at_most(p50, p99),
        )
        for source, mode in (("recovery", "respawn"), ("cold", "cold"))
        for db in ("sqlite", "postgres")
        for size, p50, p99 in SEED_HALVES
    ),
    *(
        Target(
            f"{db} 3 MB hand-off p99 < 400 ms",
            "recovery",
            rf"{db}\s+3MB hand-off\s+\d+\s+\d+ /\s+(\d+)",
            lambda v: v[0] < 400,
        )
        for db in ("sqlite", "postgres")
    ),
    Target(
        "a new process resumes <= 100 ms",
        "startup",
        r"perdure demo resume \(new process\)\s+(\d+)",
        at_most(100),
    ),
]


def commands(args: argparse.Namespace) -> dict[str, list[str]]:
    """The benchmarks to run, by the name the targets use."""
    quick = args.quick
    crashes = "5" if quick else str(args.crashes)
    return {
        "lean": [
            "lean_step.py",
            "--runs",
            "10" if quick else "60",
            "--rounds",
            "1" if quick else "3",
            "--calls",
            "10" if quick else "60",
        ],
        "growing": ["growing_state.py", "--sizes", "3.2", "--steps", "3" if quick else "10"],
        "starvation": [
            "starvation.py",
            "--rounds",
            "1" if quick else "3",
            "--runs",
            "16" if quick else "64",
        ],
        "recovery": [
            "recovery_table.py",
            "--crashes",
            crashes,
            "--rounds",
            "3" if quick else "20",
            "--modes",
            "respawn",
        ],
        "cold": [
            "recovery_table.py",
            "--crashes",
            "3" if quick else str(args.cold_crashes),
            "--rounds",
            "0",
            "--modes",
            "cold",
        ],
        "startup": ["startup.py", "--repeat", "3" if quick else "7"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--crashes", type=int, default=100, help="crashes per --respawn cell")
    parser.add_argument("--cold-crashes", type=int, default=20, help="crashes per new-process cell")
    parser.add_argument("--quick", action="store_true", help="every benchmark small")
    args = parser.parse_args()
    outputs: dict[str, str] = {}
    for name, command in commands(args).items():
        print(f"== {' '.join(command)}", flush=True)
        done = subprocess.run(
            [sys.executable, str(BENCH / command[0]), *command[1:]],
            capture_output=True,
            text=True,
            check=False,
        )
        outputs[name] = done.stdout
        print(done.stdout, end="")
        if done.returncode:
            print(f"(exit {done.returncode}) {done.stderr.strip()[-2000:]}")
        print(flush=True)
    print("== the targets")
    width = max(len(t.name) for t in TARGETS)
    for t in TARGETS:
        found = re.search(t.pattern, outputs.get(t.source, ""))
        if found is None:
            print(f"{t.name:<{width}}  {'not measured':>12}")
            continue
        v = [float(g) for g in found.groups()]
        figure = " / ".join(f"{x:g}" for x in v)
        print(f"{t.name:<{width}}  {figure:>12}  {'met' if t.met(v) else 'not met'}")


if __name__ == "__main__":
    main()
