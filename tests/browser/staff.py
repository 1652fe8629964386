"""A logged-in staff researcher's page in the browser, and the checks the dashboards' browser tests share."""
from __future__ import annotations

import os
from urllib.parse import urlsplit

from django.conf import settings
from django.test import Client
from playwright.sync_api import expect

from tests.factories import make_researcher


def logged_in_page(browser_context, live_server, username: str = "dashboard-researcher"):
    """A page of a logged-in staff researcher, with the console errors, page errors and requests it sees."""
    user, _ = make_researcher(username)
    client = Client()
    client.force_login(user)
    browser_context.add_cookies([{"name": settings.SESSION_COOKIE_NAME,
                                  "value": client.cookies[settings.SESSION_COOKIE_NAME].value,
                                  "url": live_server.url}])
    page = browser_context.new_page()
    problems: list[str] = []
    page.on("console", lambda message: problems.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: problems.append(str(error)))
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    return page, problems, requests


def outside_requests(requests: list[str], live_server) -> list[str]:
    """The requests a page sent anywhere but the live server (data: URLs aside): a page must send none."""
    live_host = urlsplit(live_server.url).netloc
    return [url for url in requests if not url.startswith("data:") and urlsplit(url).netloc != live_host]


def screenshot_if_asked(page, variable: str) -> None:
    """Save a full-page screenshot to the path in environment variable ``variable``, if it is set (to look at)."""
    if os.environ.get(variable):
        page.wait_for_timeout(300)
        page.screenshot(path=os.environ[variable], full_page=True)


def open_status_details(page) -> None:
    """Unfold a dashboard's per-row progress and parse quality, which a completed audit's page folds away."""
    summary = page.locator("#status-details > summary")
    if page.locator("#status-details").get_attribute("open") is None:
        summary.click()


def assert_results_first(page) -> None:
    """A completed audit's page at 1440×900 opens on its results: the first results section's heading (the first
    section after the status strip) is on the first screen, the per-row progress and parse quality are folded away,
    and the bar of the page's sections is there and stays at the top when the page scrolls; and at a phone's width
    the page does not scroll sideways (:func:`assert_no_sideways_scroll`)."""
    page.set_viewport_size({"width": 1440, "height": 900})
    page.evaluate("window.scrollTo(0, 0)")
    heading = page.locator("#progress-section ~ section h2").first
    box = heading.bounding_box()
    assert box is not None and box["y"] + box["height"] <= 900, f"first result heading at {box}"
    assert page.locator("#status-details").get_attribute("open") is None
    toc = page.locator("#toc")
    expect(toc).to_be_visible()
    first_link = toc.locator("a").nth(1)  # the first after the progress
    target = first_link.get_attribute("href")
    assert target == "#" + heading.evaluate("h => h.parentNode.id")
    page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
    toc_box = toc.bounding_box()
    assert toc_box is not None and abs(toc_box["y"]) < 1, "the section bar stays at the top"
    page.evaluate("window.scrollTo(0, 0)")
    assert_no_sideways_scroll(page)


PHONE = {"width": 390, "height": 844}
_WIDER_THAN_THE_SCREEN = """width => [...document.querySelectorAll('body *')]
    .filter(e => e.getBoundingClientRect().right > width + 1)
    .filter(e => { for (let a = e.parentElement; a; a = a.parentElement) {
        const overflow = getComputedStyle(a).overflowX;
        if (overflow === 'auto' || overflow === 'scroll' || overflow === 'hidden') return false; } return true; })
    .filter(e => e.parentElement && e.parentElement.getBoundingClientRect().right <= width + 1)
    .map(e => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + ' in #' + ((e.closest('section') || {}).id || '?'))"""


def assert_no_sideways_scroll(page, unfold: str = "") -> None:
    """At a phone's width (390 px, the page loaded at that width as a phone would) the page does not scroll
    sideways: a wide table scrolls within its own box. ``unfold``, a CSS selector, names the ``<details>`` to open
    once loaded there, so that what a page folds away is checked too. Names the widest offenders when it scrolls.
    Leaves the page at its former size, reloaded."""
    former = page.viewport_size
    page.set_viewport_size(PHONE)
    page.reload()
    page.wait_for_load_state("networkidle")
    if unfold:
        page.eval_on_selector_all(unfold, "folded => folded.forEach(details => { details.open = true; })")
        # Their "toggle" events (which size the charts inside) come in a later task: wait for a frame and a task.
        page.evaluate("() => new Promise(done => requestAnimationFrame(() => setTimeout(done)))")
    overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    offenders = page.evaluate(_WIDER_THAN_THE_SCREEN, PHONE["width"]) if overflow > 1 else []
    if former:
        page.set_viewport_size(former)
    page.reload()
    page.wait_for_load_state("networkidle")
    assert overflow <= 1, f"at {PHONE['width']} px the page scrolls sideways by {overflow} px: {offenders[:10]}"
