"""A state whose defaults a worker could not decode (``items: list = None``) is refused where
it is made, in one line, instead of every worker quarantining its runs with ``decode_error``:
at ``Workflow(...)`` when the state builds without arguments, at ``start`` otherwise."""

from __future__ import annotations

from pathlib import Path

from perdure.store.url import open_store
from tests.conftest import ROOT, cli_env, run_cli

DEFAULTS_ONLY = """
from dataclasses import dataclass

from perdure import Context, Workflow, done, step


@dataclass
class Basket:
    items: list = None


@step
def only(ctx: Context, s: Basket):
    return done({"n": len(s.items)})


basket = Workflow("basket", state=Basket, steps=[only])
"""

REQUIRED_FIELD = """
from dataclasses import dataclass

from perdure import Context, Workflow, done, step


@dataclass
class Order:
    customer: str
    items: list = None


@step
def only(ctx: Context, s: Order):
    return done({"n": len(s.items)})


order = Workflow("order", state=Order, steps=[only])
"""


def env_with(tmp_path: Path, name: str, source: str) -> dict[str, str]:
    folder = tmp_path / "app"
    folder.mkdir(exist_ok=True)
    (folder / f"{name}.py").write_text(source)
    return cli_env(PYTHONPATH=f"{ROOT}:{folder}")


def runs_in(db_url: str) -> int:
    store = open_store(db_url)
    try:
        if store.schema_version() == 0:
            return 0
        from perdure import Runtime

        with Runtime(store, migrate=False) as rt:
            return len(rt.runs(tenant="default"))
    finally:
        store.close()


def test_a_workflow_whose_default_state_would_not_decode_is_refused_when_declared(
    db_url: str, tmp_path: Path
) -> None:
    env = env_with(tmp_path, "basket_app", DEFAULTS_ONLY)
    out = run_cli(db_url, "start", "basket", "--app", "basket_app", "--wait", env=env)
    assert out.returncode == 1, out.stdout
    (line,) = out.stderr.splitlines()
    assert line.startswith("error[invalid_definition]: workflow basket: its default state")
    assert "Basket.items: expected a list, found NoneType" in line
    assert "default_factory=list" in line
    assert runs_in(db_url) == 0


def test_start_refuses_a_state_whose_defaults_a_worker_could_not_decode(
    db_url: str, tmp_path: Path
) -> None:
    env = env_with(tmp_path, "order_app", REQUIRED_FIELD)
    args = ("start", "order", "--app", "order_app", "--input", '{"customer": "ana"}')
    out = run_cli(db_url, *args, env=env)
    assert out.returncode == 1, out.stdout
    (line,) = out.stderr.splitlines()
    assert line.startswith("error[invalid_input]: the initial state of order would not decode")
    assert "Order.items: expected a list, found NoneType" in line
    assert runs_in(db_url) == 0
    fine = run_cli(db_url, *args[:-1], '{"customer": "ana", "items": []}', "--wait", env=env)
    assert fine.returncode == 0, fine.stderr
    assert "SUCCEEDED" in fine.stdout
