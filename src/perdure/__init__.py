"""perdure: durable execution for AI agents.

Define a workflow of named steps over a typed state, start runs with a :class:`Runtime`, and let
a worker advance them. Every step boundary is committed; a killed process resumes from the last
committed step, never from the beginning.
"""

from __future__ import annotations

from perdure.core.clock import Clock, FakeClock, SystemClock
from perdure.core.errors import PerdureError
from perdure.core.model import Durability, Message, Release, Run, RunStatus, ToolCall
from perdure.core.workflow import Done, Fail, Next, Workflow, done, fail, goto, step
from perdure.runtime.context import Context, tool_call
from perdure.runtime.runtime import Runtime
from perdure.runtime.services import RunView
from perdure.runtime.worker import Worker

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
