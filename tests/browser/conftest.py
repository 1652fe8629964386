"""Headless Debian Chromium driven by Playwright, against pytest-django's live server."""
from __future__ import annotations

import os

import pytest

CHROMIUM = "/usr/bin/chromium"
# Flags this workplace needs: no sandbox as root, and no background connections to the closed network.
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def chromium():
    """One browser per test module: Playwright's sync API keeps an event loop running in this thread while it
    lives, which would break every later test that runs asyncio itself."""
    if not os.path.exists(CHROMIUM):
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true: {CHROMIUM} is missing (apt-get install chromium)")
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install chromium)")
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # Playwright's sync API runs an event loop
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:  # Playwright gives each launch a new, empty profile
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        yield browser
        browser.close()


@pytest.fixture
def browser_context(chromium):
    context = chromium.new_context(viewport={"width": 1200, "height": 900})
    yield context
    context.close()
