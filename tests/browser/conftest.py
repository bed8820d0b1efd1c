"""A headless Chromium for the dashboard's tests (Debian's ``chromium``, driven by Playwright;
never ``playwright install``), once per module."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, expect, sync_playwright

expect.set_options(timeout=30_000)  # a loaded CI machine gets time; nothing waits for a timer

ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.fail("Debian's chromium is not installed (.ci/run installs it with apt-get)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, args=ARGS, headless=True)
        yield b
        b.close()
