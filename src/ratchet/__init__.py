"""ratchet: durable execution for AI agents.

Define a workflow of named steps over a typed state, start runs with a :class:`Runtime`, and let
a worker advance them. Every step boundary is committed; a killed process resumes from the last
committed step, never from the beginning.
"""

from __future__ import annotations

from ratchet.clock import Clock, FakeClock, SystemClock
from ratchet.context import Context, tool_call
from ratchet.errors import RatchetError
from ratchet.model import Durability, Message, Release, Run, RunStatus, ToolCall
from ratchet.runtime import Runtime, RunView
from ratchet.worker import Worker
from ratchet.workflow import Done, Fail, Next, Workflow, done, fail, goto, step

__all__ = [
    "Clock",
    "Context",
    "Done",
    "Durability",
    "Fail",
    "FakeClock",
    "Message",
    "Next",
    "RatchetError",
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
