"""One execution's handle on the run it holds.

The execution loop, the committer and the effect runner all act on the same claimed run under
the same fence. They share one :class:`Claim` instead of keeping copies that must be assigned
into each other: whoever writes the run (a commit, an upgrade) moves the claim forward, and the
next guarded write reads the version it expects from here.
"""

from __future__ import annotations

from perdure.core.model import Run


class Claim:
    """The claimed run as this execution last wrote or read it, the ``state_version`` the next
    guarded write expects, and the number of committed steps."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self.version = run.state_version
        self.steps_done = run.steps_done

    @property
    def tenant_id(self) -> str:
        return self.run.tenant_id

    @property
    def run_id(self) -> str:
        return self.run.run_id

    @property
    def fence(self) -> int:
        """The fencing token of this claim; it never changes while the claim lasts."""
        return self.run.fence

    def adopt(self, run: Run) -> None:
        """The run was rewritten under this claim (an upgrade, a cancel to finish): continue
        from that row."""
        self.run = run
        self.version = run.state_version
        self.steps_done = run.steps_done

    def committed(self, version: int, steps: int) -> None:
        """A commit of ``steps`` boundaries landed and left the run at ``version``."""
        self.version = version
        self.steps_done += steps
