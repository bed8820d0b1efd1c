"""perdure: durable execution for AI agents.

Define a workflow of named steps over a typed state, start runs with a :class:`Runtime`, and let
a worker advance them. Every step boundary is committed; a killed process resumes from the last
committed step, never from the beginning.
"""

from __future__ import annotations

from perdure.clock import Clock, FakeClock, SystemClock
from perdure.context import Context, tool_call
from perdure.errors import PerdureError
from perdure.model import Durability, Message, Release, Run, RunStatus, ToolCall
from perdure.runtime import Runtime, RunView
from perdure.worker import Worker
from perdure.workflow import Done, Fail, Next, Workflow, done, fail, goto, step

__all__ = [
    "Clock",
    "Context",
    "Done",
    "Durability",
    "Fail",
    "FakeClock",
    "Message",
    "Next",
    "PerdureError",
    "Release",
    "Run",
    "RunStatus",
    "RunView",
    "Runtime",
    "SystemClock",
    "ToolCall",
    "Worker",
    "Workflow",
    "done",
    "fail",
    "goto",
    "step",
    "tool_call",
]
