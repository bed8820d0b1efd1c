"""Hostile or nonsense input gets one line with a code, the cause and the fix, exit code 1, and
changes nothing: bytes that are not UTF-8, NUL, negative settings, click's own usage errors, a
module that fails while loading."""

from __future__ import annotations

import json

import pytest

from perdure import InvalidInputError, Runtime, Workflow, step
from perdure.core.errors import ConfigError, DefinitionError
from tests.apps.counting import counting
from tests.conftest import run_cli

APP = "tests.apps.counting"
NOT_UTF8 = "\udcff"  # what Python makes of the byte 0xff on a command line


def one_line_error(out: object, code: str) -> str:
    assert out.returncode == 1, (out.stdout, out.stderr)  # type: ignore[attr-defined]
    err: str = out.stderr  # type: ignore[attr-defined]
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"error[{code}]:") and "(fix: " in err, err
    return err


@pytest.mark.parametrize(
    "args",
    [
        ("--tenant", NOT_UTF8, "runs"),
        ("runs", "--thread", NOT_UTF8),
        ("show", NOT_UTF8),
        ("cancel", NOT_UTF8),
        ("start", "counting", "--app", APP, "--thread", NOT_UTF8),
        ("start", "counting", "--app", APP, "--idempotency-key", NOT_UTF8),
        ("start", "counting", "--app", APP, "--thread", "a\x01b" + "x" * 300),
    ],
    ids=["tenant", "thread-filter", "show", "cancel", "thread", "idempotency-key", "long"],
)
def test_ids_that_are_not_utf8_text_are_refused_in_one_line(
    db_url: str, args: tuple[str, ...]
) -> None:
    assert run_cli(db_url, "migrate").returncode == 0  # reads need a database
    one_line_error(run_cli(db_url, *args), "invalid_input")
    listed = run_cli(db_url, "runs", "--json")
    assert json.loads(listed.stdout) == [], "nothing was created"


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (("worker", "--concurrency", "many"), "invalid_input"),
        (("runs", "--limit", "-1"), "invalid_input"),
        (("no-such-command",), "invalid_input"),
        (("worker", "--app", APP, "--lease", "-5"), "invalid_config"),
        (("worker", "--app", APP, "--poll", "-1"), "invalid_config"),
        (("worker", "--app", APP, "--concurrency", "0"), "invalid_config"),
        (("start", "counting", "--app", APP, "--release", "code"), "invalid_input"),
        (("start", "counting", "--app", "tests.apps.broken_app"), "invalid_config"),
    ],
    ids=["usage", "limit", "command", "lease", "poll", "concurrency", "release", "broken-app"],
)
def test_nonsense_options_are_one_line_errors(
    db_url: str, args: tuple[str, ...], code: str
) -> None:
    err = one_line_error(run_cli(db_url, *args), code)
    if "broken_app" in args:
        assert "RuntimeError" in err and "settings file is missing" in err


def test_the_python_api_refuses_bad_ids_and_settings(tmp_path: object) -> None:
    url = f"sqlite:///{tmp_path}/perdure.db"
    with pytest.raises(ConfigError, match="lease_seconds"):
        Runtime(url, lease_seconds=-5)
    with Runtime(url, workflows=[counting]) as rt:
        with pytest.raises(InvalidInputError, match="thread"):
            rt.start(counting, {}, thread=NOT_UTF8)
        with pytest.raises(InvalidInputError, match="tenant"):
            rt.runs(tenant="a\x00b")
        with pytest.raises(InvalidInputError, match="UTF-8"):
            rt.get(NOT_UTF8)
        assert rt.runs() == []


def test_a_step_definition_cannot_smuggle_a_bad_name() -> None:
    with pytest.raises(DefinitionError, match="workflow name"):
        Workflow("bad\x00name", state=dict, steps=[step(lambda ctx, s: None)])
