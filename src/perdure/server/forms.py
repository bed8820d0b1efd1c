"""What the dashboard's pages share: rendering a template, redirecting after a form, a
refusal shown as a page with its real status, and reading a posted form (only
``application/x-www-form-urlencoded``, at most 64 KiB)."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl

import orjson
from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from perdure.core.errors import InvalidInputError, PerdureError
from perdure.core.model import Principal
from perdure.server.api import require_media_type
from perdure.server.errors import error_headers, status_of

FORM = "application/x-www-form-urlencoded"
MAX_FORM = 65536

env = Environment(
    loader=PackageLoader("perdure.server", "templates"), autoescape=select_autoescape()
)
env.filters["compact"] = lambda v: "" if v is None else orjson.dumps(v).decode()
env.filters["when"] = lambda v: "" if v is None else str(v).replace("T", " ")[:19]


def readable(value: Any) -> str:
    """A value as indented JSON for a person; a string that holds JSON (a tool call's
    arguments, as the model wrote them) is parsed first, so it is not shown escaped twice."""
    if isinstance(value, str):
        text: str = value
        try:
            value = orjson.loads(text)
        except orjson.JSONDecodeError:
            return text
    return orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode()


def traceback_of(value: Any, depth: int = 0) -> str | None:
    """The traceback a record carries (its ``traceback`` lines, at most three levels deep), as
    the text Python printed, or None."""
    if not isinstance(value, dict) or depth > 3:
        return None
    found = value.get("traceback")
    if isinstance(found, list) and all(isinstance(line, str) for line in found):
        return "".join(found).rstrip("\n")
    if isinstance(found, str):
        return found
    for inner in value.values():
        if (text := traceback_of(inner, depth + 1)) is not None:
            return text
    return None


def without_traceback(value: Any, depth: int = 0) -> Any:
    """``value`` without its ``traceback`` entries (shown apart, formatted)."""
    if not isinstance(value, dict) or depth > 3:
        return value
    return {k: without_traceback(v, depth + 1) for k, v in value.items() if k != "traceback"}


env.filters["readable"] = readable
env.filters["traceback"] = traceback_of
env.filters["without_traceback"] = without_traceback
env.filters["money"] = lambda v: f"${v:,.4f}" if v else "—"
env.filters["seconds"] = lambda v: f"{v * 1000:.0f} ms" if v < 1 else f"{v:,.3f} s"


def render(request: Request, name: str, **context: Any) -> HTMLResponse:
    """A page of the dashboard; its forms carry the request's CSRF token (``csrf``)."""
    base = request.scope.get("root_path", "")
    context.setdefault("csrf", getattr(request.state, "csrf", ""))
    html = env.get_template(name).render(base=base, request=request, **context)
    return HTMLResponse(html)


def to(request: Request, path: str) -> RedirectResponse:
    """A redirect (after a form) to ``path`` under the app's root."""
    return RedirectResponse(request.scope.get("root_path", "") + path, status_code=303)


def failure(request: Request, who: Principal | None, exc: PerdureError) -> Response:
    """A refusal as a page, with its real status (401, 403, 404, 409, 415, 429, ...)."""
    response = render(
        request, "error.html", who=who, code=exc.code, message=exc.message, fix=exc.fix
    )
    response.status_code = status_of(exc)
    response.headers.update(error_headers(exc))
    return response


async def form_of(request: Request) -> dict[str, str]:
    """The posted form's fields; a body of another type is ``unsupported_media_type``."""
    await require_media_type(request, FORM)
    raw = await request.body()
    if len(raw) > MAX_FORM:
        raise InvalidInputError(f"the form is over {MAX_FORM} bytes", fix="send less")
    return dict(parse_qsl(raw.decode("utf-8", "replace"), keep_blank_values=True))
