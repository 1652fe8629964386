"""A logged-in staff researcher's page in the browser, shared by the dashboards' browser tests."""
from __future__ import annotations

from django.conf import settings
from django.test import Client

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
