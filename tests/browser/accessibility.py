"""axe-core (vendored under tests/data/vendor/axe-core) run in a Playwright page: the serious and critical
violations of a page, and the controls that have no accessible name."""
from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page

AXE_SOURCE = (Path(__file__).resolve().parents[1] / "data" / "vendor" / "axe-core" / "axe.min.js").read_text()
BLOCKING_IMPACTS = ("serious", "critical")
CONTROLS = "input:not([type=hidden]), button, select, textarea, [role=button], [role=radio], [role=checkbox]"


def _inject(page: Page) -> None:
    # Evaluated through the DevTools protocol, which the pages' Content-Security-Policy does not govern.
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate(AXE_SOURCE)


def serious_violations(page: Page, within: tuple[str, ...] = ()) -> list[str]:
    """axe's serious and critical violations on the page as it is now (or only in the elements the CSS selectors
    ``within`` name), one line per failing element."""
    _inject(page)
    results = page.evaluate("""within => axe.run(within.length ? {include: within.map(s => [s])} : document,
                                                {resultTypes: ['violations']})""", list(within))
    return [f"{violation['id']} ({violation['impact']}): {node['target']} — {violation['help']}"
            for violation in results["violations"] if violation["impact"] in BLOCKING_IMPACTS
            for node in violation["nodes"]]


def unnamed_controls(page: Page) -> list[str]:
    """The visible controls (not those in a closed <details>) whose accessible name (as axe computes it, what a screen reader reads) is empty."""
    _inject(page)
    return page.evaluate("""selector => {
        axe.setup(document);
        try {
            return [...document.querySelectorAll(selector)]
                .filter(el => el.checkVisibility() && !el.disabled)
                .filter(el => !axe.commons.text.accessibleTextVirtual(axe.utils.getNodeFromTree(el)).trim())
                .map(el => el.outerHTML.slice(0, 120));
        } finally { axe.teardown(); }
    }""", CONTROLS)


def assert_accessible(page: Page, where: str, within: tuple[str, ...] = ()) -> None:
    """0 serious or critical axe violations (in the elements ``within`` names, when given) and a name on every
    control."""
    problems = serious_violations(page, within)
    assert problems == [], f"{where}: " + "; ".join(problems)
    unnamed = unnamed_controls(page)
    assert unnamed == [], f"{where}: controls without an accessible name: {unnamed}"
