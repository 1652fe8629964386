"""Benchmark: how long a researcher waits for a dashboard's charts on a cold load, and how many bytes it costs.

Against a running app (``bin/run``, or anything serving the same pages), headless Debian Chromium driven by
Playwright logs in once as the demo researcher, then opens each dashboard ``--runs`` times, each time in a new
browser context with an empty cache (a cold load, as a first visit), and once more in that context (a warm load:
what the cache headers save on the next visit). For each load it prints:

* the bytes transferred (every response, headers and compressed body, as Chromium's network layer counted them);
* the time from navigation to the page's HTML received (``responseEnd``: the server's share), and to the load event
  (``loadEventEnd``);
* the time until the last chart's SVG was in the page (charts drawn).

Then the median of the cold loads per dashboard. Target: a cold load under 1 s to charts drawn.

    bin/run &                                    # or PORT=8790 VAR_DIR=/tmp/x bin/run
    .venv/bin/python benchmarks/dashboard_load.py [--base-url http://127.0.0.1:8000] [--runs 5] [--page PATH ...]

The demo researcher's password is read from VAR_DIR's demo-researcher.txt (as ``bin/run`` left it; ``--password``
overrides). Without ``--page``: the demo study's and the demo audit's dashboards, found through the API.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]
VIEWPORT = {"width": 1440, "height": 900}
TARGET_S = 1.0

# Installed before any page script: notes the page-clock time whenever a chart's SVG (plotly's .main-svg) appears.
CHART_WATCH = r"""
(() => {
  window.__chartTimes = [];
  new MutationObserver((changes) => {
    for (const change of changes) {
      for (const node of change.addedNodes) {
        if (node.nodeType === 1 && (node.matches(".main-svg") || node.querySelector(".main-svg"))) {
          window.__chartTimes.push(performance.now());
        }
      }
    }
  }).observe(document, { childList: true, subtree: true });
})();
"""


def demo_password(var_dir: Path) -> str:
    """The password load_demo generated for the demo researcher and kept in VAR_DIR."""
    path = var_dir / "demo-researcher.txt"
    if not path.exists():
        sys.exit(f"No {path}: pass --password, or --var-dir of the running app.")
    return path.read_text().strip()


def log_in(browser, base_url: str, username: str, password: str) -> dict:
    """The session of a researcher logged in through the admin's login form, as Playwright storage state."""
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{base_url}/admin/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("input[type=submit]")
    page.wait_for_load_state()
    if "/admin/login/" in page.url:
        sys.exit(f"Could not log in as {username} at {base_url}.")
    state = context.storage_state()
    context.close()
    return state


def demo_pages(browser, base_url: str, state: dict) -> list[str]:
    """The dashboards of the first study and the first audit the API lists (bin/run's demo study and audit)."""
    context = browser.new_context(storage_state=state)
    pages = []
    for kind, path in (("studies", "/studies/{}/dashboard/"), ("audits", "/audits/{}/dashboard/")):
        listing = context.request.get(f"{base_url}/api/{kind}/?format=json").json()
        rows = listing["results"] if isinstance(listing, dict) else listing
        if rows:
            pages.append(path.format(min(row["id"] for row in rows)))
    context.close()
    return pages


def load(page, cdp, url: str) -> dict:
    """Open ``url`` in ``page`` and measure it (bytes from the Network domain of ``cdp``, times from the page)."""
    transferred: list[int] = []

    def finished(event: dict) -> None:
        transferred.append(event["encodedDataLength"])

    cdp.on("Network.loadingFinished", finished)
    page.goto(url, wait_until="load")
    page.wait_for_load_state("networkidle")
    timing = page.evaluate("""() => {
      const navigation = performance.getEntriesByType("navigation")[0];
      return { response: navigation.responseEnd, load: navigation.loadEventEnd,
               charts: document.querySelectorAll(".js-plotly-plot").length,
               drawn: window.__chartTimes.length ? Math.max(...window.__chartTimes) : null };
    }""")
    cdp.remove_listener("Network.loadingFinished", finished)
    return {"bytes": sum(transferred), "requests": len(transferred), "html_ms": timing["response"],
            "load_ms": timing["load"],
            "drawn_ms": timing["drawn"], "charts": timing["charts"]}


def describe(figures: dict) -> str:
    drawn = "no chart" if figures["drawn_ms"] is None else f"charts drawn {figures['drawn_ms']:6.0f} ms"
    return (f"{figures['bytes'] / 1024:6.0f} KiB in {figures['requests']:2d} responses, page "
            f"{figures['html_ms']:4.0f} ms, load event "
            f"{figures['load_ms']:6.0f} ms, {drawn} ({figures['charts']} charts)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base-url", default="http://127.0.0.1:8000")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--page", action="append", help="a dashboard's path (repeat); default: the demo's")
    parser.add_argument("--username", default="researcher")
    parser.add_argument("--password")
    parser.add_argument("--var-dir", type=Path, default=Path(os.environ.get("VAR_DIR", REPO / "var")))
    args = parser.parse_args()
    base_url = args.base_url.rstrip("/")

    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        state = log_in(browser, base_url, args.username, args.password or demo_password(args.var_dir))
        pages = args.page or demo_pages(browser, base_url, state)
        for path in pages:
            print(f"{path}  ({base_url}, {VIEWPORT['width']}×{VIEWPORT['height']})")
            cold = []
            for run in range(1, args.runs + 1):
                context = browser.new_context(storage_state=state, viewport=VIEWPORT)
                context.add_init_script(CHART_WATCH)
                page = context.new_page()
                cdp = context.new_cdp_session(page)
                cdp.send("Network.enable")
                first = load(page, cdp, base_url + path)
                # A later visit in the same browser: a new navigation, not a reload, which would revalidate.
                page.goto("about:blank")
                second = load(page, cdp, base_url + path)
                context.close()
                cold.append(first)
                print(f"  run {run} cold: {describe(first)}")
                print(f"        warm: {describe(second)}")
                time.sleep(0.2)
            drawn = [f["drawn_ms"] if f["drawn_ms"] is not None else f["load_ms"] for f in cold]
            median = statistics.median(drawn)
            print(f"  median cold: {statistics.median(f['bytes'] for f in cold) / 1024:.0f} KiB, load event "
                  f"{statistics.median(f['load_ms'] for f in cold):.0f} ms, charts drawn {median:.0f} ms; "
                  f"target (< {TARGET_S * 1000:.0f} ms): {'met' if median < TARGET_S * 1000 else 'NOT met'}")
        browser.close()


if __name__ == "__main__":
    main()
