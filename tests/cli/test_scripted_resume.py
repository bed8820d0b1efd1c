"""A ``ScriptedModel`` with a list script, across a real crash: the run's first model reply is
recorded, the process exits after that step's boundary, and a new process resumes the run; its
next model call gets the script's second reply (the first one again was the bug)."""

from __future__ import annotations

import json
from pathlib import Path

from perdure.runtime.crashpoints import EXIT_CODE
from tests.conftest import ROOT, cli_env, run_cli

APP = """
from dataclasses import dataclass

from perdure import Context, Message, Workflow, done, goto, step
from perdure.providers.scripted import Scripted, ScriptedModel

model = ScriptedModel("scripted-two", [Scripted("first reply"), Scripted("second reply")])


@dataclass
class Chat:
    question: str = "hello"


@step(next=["again"])
def ask(ctx: Context, s: Chat):
    reply = ctx.model_call(model, [Message("user", s.question), *ctx.context()])
    ctx.add_message("assistant", reply.text)
    return goto("again")


@step
def again(ctx: Context, s: Chat):
    reply = ctx.model_call(model, [Message("user", s.question), *ctx.context()])
    return done({"second": reply.text})


chat = Workflow("chat", state=Chat, steps=[ask, again])
"""


def test_a_resumed_run_continues_its_list_script_in_a_new_process(
    db_url: str, tmp_path: Path
) -> None:
    folder = tmp_path / "app"
    folder.mkdir()
    (folder / "chat_app.py").write_text(APP)
    env = cli_env(PYTHONPATH=f"{ROOT}:{folder}")
    crash = cli_env(PYTHONPATH=f"{ROOT}:{folder}", PERDURE_CRASH_AT="after_commit:ask")
    started = run_cli(db_url, "start", "chat", "--app", "chat_app", "--wait", env=crash)
    assert started.returncode == EXIT_CODE, started.stdout + started.stderr
    (run,) = json.loads(run_cli(db_url, "runs", "--json").stdout)
    resumed = run_cli(db_url, "resume", run["run_id"], "--app", "chat_app", env=env)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    shown = json.loads(run_cli(db_url, "show", run["run_id"], "--json").stdout)
    assert shown["status"] == "SUCCEEDED"
    assert shown["result"] == {"second": "second reply"}
