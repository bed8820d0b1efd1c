"""What the framework demos' agents share, whatever framework writes them: the run's state, the
narration, the question and prices, the approval's role and call id, and the reconciler that
asks the demo's mailbox whether an email went out under a call's key."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perdure.core.chat import Pricing
from perdure.core.effects import Reconciled
from perdure.demos.mailbox import Mailbox

ROLE = "mail_approver"
STEP = "agent"
CALL = "call-email-1"
QUESTION = "Email Ana the summary: durable execution keeps progress in a database."
PRICING = Pricing(input_per_million=3.0, output_per_million=15.0)


@dataclass
class MailState:
    """Where the demo keeps its files, and the approval the agent waits for."""

    folder: str = "."
    pending: dict[str, Any] | None = None


def say(line: str) -> None:
    """Print narration at once."""
    print(line, flush=True)


def find_email(outbox: Path) -> Callable[[Any, str], Reconciled]:
    """The ``send_email`` reconciler: the email sent under the call's key, if the demo's
    mailbox at ``outbox`` has one."""

    def find(_request: Any, key: str) -> Reconciled:
        found = Mailbox(outbox).find(key)
        say(f"RECONCILE: {'found ' + found if found else 'not sent'} under the call's key")
        return Reconciled.confirmed(found) if found else Reconciled.not_found()

    return find
