"""A one-step agent whose model is the official OpenAI SDK pointed at a stub server
(``AGENT_STUB_URL``), for crash tests. ``AGENT_HOLD=<path>``: after the model call the step reaches
the waypoint ``<path>.reached`` (``tests.waypoints``) and waits for a shared lock on ``<path>``,
which the test holds exclusively (so a test can SIGKILL it there; no polling). ``stream`` in the
input streams the reply."""

from __future__ import annotations

import fcntl
import os
from dataclasses import dataclass

from perdure import Context, Message, Workflow, done, step
from perdure.core.chat import Pricing
from perdure.core.workflow import Outcome
from perdure.providers.openai import OpenAIModel
from tests.waypoints import reach


@dataclass
class Question:
    question: str = "what is perdure?"
    stream: bool = False


def model() -> OpenAIModel:
    url = os.environ["AGENT_STUB_URL"]
    price = Pricing(input_per_million=1_000_000, output_per_million=1_000_000)
    return OpenAIModel("gpt-test", base_url=url + "/v1", api_key="test", pricing=price)


def hold() -> None:
    where = os.environ.get("AGENT_HOLD")
    if not where:
        return
    reach(where + ".reached")
    with open(where, "a") as gate:  # the test holds it exclusively and kills the process here
        fcntl.flock(gate, fcntl.LOCK_SH)


@step
def ask(ctx: Context, q: Question) -> Outcome:
    messages = [Message("user", q.question)]
    if q.stream:
        stream = ctx.model_call(model(), messages, stream=True)
        text = "".join(d.text for d in stream)
        reply = stream.reply
        assert text == reply.text
    else:
        reply = ctx.model_call(model(), messages)
    hold()
    ctx.add_message("assistant", reply.text)
    return done(
        {
            "text": reply.text,
            "replayed": reply.replayed,
            "lost_tokens": reply.lost_tokens,
            "cost": reply.cost,
        }
    )


answer = Workflow("answer", state=Question, steps=[ask])
