"""How often a crash after a person's approval loses the decision or repeats the approved tool,
for the pydantic-ai and OpenAI Agents SDK integrations, on SQLite and PostgreSQL.

Each leg is one run of the test apps' approval workflow (``tests/apps/pydantic_ai_app.py``
``pyd_approval``, ``tests/apps/openai_agents_app.py`` ``oai_approval``: the model, perdure's stub
server in this process, asks to send one email with a tool that needs approval). This process
starts ``--legs`` runs per crash point, advances them until they wait for the approval, and
approves each; then each run is resumed by a new ``perdure resume`` process that exits at the
crash point (``PERDURE_CRASH_AT``: around the approved tool's effect, or around the step's
boundary); then this process finishes them all. A leg is **lost** when its run asked for the
approval again (a second approval request) or did not finish, and **repeated** when the outbox
holds more than one email; the stub must have answered exactly two requests per run.

Run: ``python benchmarks/framework_crashes.py [--legs 20] [--db sqlite,postgres]``. Nothing is
asserted; the table is printed.
"""

from __future__ import annotations

import argparse
import importlib
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from postgres_overhead import database  # noqa: E402

from perdure import Runtime  # noqa: E402
from perdure.core.model import Principal  # noqa: E402
from perdure.providers.stub import StubServer, openai_reply  # noqa: E402


@dataclass(frozen=True)
class Framework:
    name: str
    app: str
    workflow: str
    tool_effect: str
    replies: tuple[tuple[str, str, str], ...]  # the tool calls the model makes before the email


EMAIL = ("call_1", "send_email", '{"to": "ana@example.com", "body": "hello"}')
FRAMEWORKS = [
    Framework("pydantic-ai", "tests.apps.pydantic_ai_app", "pyd_approval",
              "pydantic_ai.tool.call_1.approved", (EMAIL,)),
    Framework("openai-agents", "tests.apps.openai_agents_app", "oai_approval",
              "openai_agents.tool.call_1", (("call_h", "transfer_to_mailer", "{}"), EMAIL)),
]  # fmt: skip
POINTS = [
    "before_intent:{tool}",
    "after_intent:{tool}",
    "after_call:{tool}",
    "after_outcome:{tool}",
    "before_commit:decide",
    "after_commit:decide",
]


def leg_env(stub: StubServer, point: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PERDURE_")}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(AGENT_STUB_URL=stub.url, PERDURE_CRASH_AT=point)
    return env


def measure(fw: Framework, kind: str, db: str, folder: Path, legs: int) -> dict[str, list[int]]:
    """Per crash point: [legs, lost, repeated, crashed where expected]."""
    os.environ.pop("PERDURE_CRASH_AT", None)
    module = importlib.import_module(fw.app)
    workflow = getattr(module, fw.workflow)
    found: dict[str, list[int]] = {}
    with StubServer() as stub, Runtime(db, workflows=[workflow]) as rt:
        os.environ["AGENT_STUB_URL"] = stub.url
        runs: dict[str, list[tuple[str, Path]]] = {}
        for point in POINTS:
            for n in range(legs):
                outbox = folder / f"{fw.name}-{kind}-{point.split(':')[0]}-{n}.jsonl"
                run = rt.start(workflow, {"outbox": str(outbox)})
                runs.setdefault(point, []).append((run.run_id, outbox))
        total = legs * len(POINTS)
        for _ in range(total):  # runs advance one after the other: each asks in turn
            stub.script(*(openai_reply("", [call]) for call in fw.replies))
        rt.run_until_idle()
        boss = Principal("default", "maria", frozenset({"ops"}))
        for point_runs in runs.values():
            for run_id, _ in point_runs:
                assert rt.get(run_id).status == "WAITING_APPROVAL", rt.get(run_id)
                rt.approve(run_id, boss)
        stub.script(*(openai_reply("Sent it.") for _ in range(total)))
        asked = stub.count
        for point, point_runs in runs.items():
            crash = point.format(tool=fw.tool_effect)
            crashed = 0
            for run_id, _ in point_runs:
                done = subprocess.run(
                    [sys.executable, "-m", "perdure", "--db", db, "resume", run_id,
                     "--app", fw.app],
                    env=leg_env(stub, crash), cwd=ROOT, capture_output=True, text=True,
                    check=False, timeout=300,
                )  # fmt: skip
                crashed += done.returncode == 75
            found[point] = [len(point_runs), 0, 0, crashed]
        for point, point_runs in runs.items():
            for run_id, outbox in point_runs:
                run = rt.get(run_id)
                if not run.status.terminal:  # a new process takes over the dead one's run
                    run = rt.resume(run_id)
                approvals = rt.approvals(run_id=run_id, pending=False)
                lost = run.status != "SUCCEEDED" or len(approvals) != 1
                emails = len(module.sent(str(outbox)))
                found[point][1] += lost
                found[point][2] += emails != 1
        extra = stub.count - asked - total
        if extra:  # a decision lost would ask the model again
            print(f"  {fw.name} {kind}: {extra} model requests beyond one answer per run")
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--legs", type=int, default=20)
    parser.add_argument("--db", default="sqlite,postgres")
    dsn = os.environ.get("PERDURE_BENCH_PG_DSN") or os.environ.get("PERDURE_TEST_PG_DSN")
    parser.add_argument("--dsn", default=dsn)
    args = parser.parse_args()
    kinds = [k for k in args.db.split(",") if k == "sqlite" or args.dsn]
    print(f"{'framework':<15}{'database':<10}{'crash point':<30}{'lost':>8}{'repeated':>10}"
          f"{'crashed':>9}")  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="perdure-fw-crashes-") as tmp:
        folder = Path(tmp)
        for fw in FRAMEWORKS:
            for kind in kinds:
                name = f"perdure_fw_crash_{fw.name.replace('-', '_')}"
                with database(kind, folder, args.dsn, name) as db:
                    table = measure(fw, kind, db, folder, args.legs)
                for point, (legs, lost, repeated, crashed) in table.items():
                    where = point.format(tool="tool")
                    print(f"{fw.name:<15}{kind:<10}{where:<30}{lost:>5}/{legs:<2}"
                          f"{repeated:>7}/{legs:<2}{crashed:>6}/{legs:<2}", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
