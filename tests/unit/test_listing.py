"""Cursors and filters of run listings: a cursor survives its round trip, anything else is a
one-line invalid_input with a fix."""

from __future__ import annotations

import base64
from datetime import UTC, datetime

import pytest

from perdure.core.errors import InvalidInputError
from perdure.core.listing import RunCursor, RunFilter


def test_a_cursor_survives_its_round_trip() -> None:
    cursor = RunCursor(datetime(2026, 12, 2, 10, 0, 0, 123456, tzinfo=UTC), "0193-run")
    assert RunCursor.parse(cursor.token()) == cursor
    assert "=" not in cursor.token()


@pytest.mark.parametrize(
    "token",
    [
        "",
        "not a cursor",
        "%%%",
        "\x00",
        "\udcff",
        "A" * 600,
        base64.urlsafe_b64encode(b"\xff\xfe").decode(),
        base64.urlsafe_b64encode(b"2026-12-02T10:00:00").decode(),  # no run id
        base64.urlsafe_b64encode(b"2026-12-02T10:00:00|r1").decode(),  # no time zone
        base64.urlsafe_b64encode(b"yesterday|r1").decode(),
        base64.urlsafe_b64encode(b"2026-12-02T10:00:00+00:00|").decode(),
        base64.urlsafe_b64encode(b"2026-12-02T10:00:00+00:00|a\x00b").decode(),
    ],
)
def test_anything_but_a_cursor_is_invalid_input_with_a_fix(token: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        RunCursor.parse(token)
    assert caught.value.code == "invalid_input" and caught.value.fix
    assert "\n" not in caught.value.one_line()


def test_a_filter_refuses_a_time_without_a_zone_and_a_nul_in_its_search() -> None:
    with pytest.raises(InvalidInputError, match="has no time zone"):
        RunFilter(since=datetime(2026, 12, 2))
    with pytest.raises(InvalidInputError, match="NUL"):
        RunFilter(search="a\x00")
