"""The error of a call to a closed LangGraph saver."""

from __future__ import annotations

from perdure.core.errors import PerdureError


class SaverClosedError(PerdureError):
    """The LangGraph saver is closed (its ``from_conn_string`` block ended, or ``close()`` was
    called): it takes no more calls, so none can write on a connection that is being closed.
    Nothing was read or written."""

    code = "saver_closed"
    fix = "use the saver inside its `with`/`async with` block, or open a new one"
