"""Two coders code a 12-excerpt round in Chromium with the keyboard only (the coding pages' acceptance test): coder A
closes the tab halfway and resumes on another device (a new browser context) at the right excerpt with the earlier codes
shown; each coder sees only their own codes; the database then holds exactly the codes typed, checked against
counts per code and per pair of codes worked by hand, and the round's results page, opened by a researcher in
Chromium, shows those counts, the two-or-more share and the agreement per code of ``krippendorff`` and
scikit-learn computed here from the keys typed. axe on the intro, excerpt and done pages."""
from __future__ import annotations

import json
import time
from collections import Counter
from itertools import combinations

import krippendorff
import numpy as np
import pytest
from django.db import OperationalError
from django.test import Client
from playwright.sync_api import Page, expect
from sklearn.metrics import cohen_kappa_score

from coding import views as coding_views
from coding.models import ExcerptCoding
from tests.browser.accessibility import assert_accessible
from tests.browser.staff import assert_no_sideways_scroll
from tests.coding.coder_rounds import add_coder, make_round
from tests.factories import make_researcher

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

# The keys each coder types on excerpts 1..12 (w WORDING, s STEREOTYPES, t TONE, i INTENT, f FOCUS); a key typed
# twice ticks and unticks its code. Coder A stops after typing "wt" on excerpt 7 without confirming it.
A_KEYS = ["ws", "wtt", "", "st", "wsi", "f", "wt", "t", "ws", "", "i", "wf"]
B_KEYS = ["w", "s", "t", "", "wi", "f", "ws", "", "s", "t", "wi", "w"]
A_MEMOS = {3: "the prompt's word, not its intent", 6: "pathologizing wording"}  # keys typed in memos do nothing
B_MEMOS = {5: "sidesteps: not primarily about autism"}

# Worked by hand from the keys above (excerpts numbered from 0).
# A: WORDING 0 1 4 6 8 11; STEREOTYPES 0 3 4 8; TONE 3 6 7; INTENT 4 10; FOCUS 5 11.
A_PER_CODE = {"WORDING": 6, "STEREOTYPES": 4, "TONE": 3, "INTENT": 2, "FOCUS": 2}
# A's pairs: 0 ws, 3 st, 4 ws wi si, 6 wt, 8 ws, 11 wf.
A_PER_PAIR = {("STEREOTYPES", "WORDING"): 3, ("STEREOTYPES", "TONE"): 1, ("INTENT", "WORDING"): 1,
              ("INTENT", "STEREOTYPES"): 1, ("TONE", "WORDING"): 1, ("FOCUS", "WORDING"): 1}
# B: WORDING 0 4 6 10 11; STEREOTYPES 1 6 8; TONE 2 9; INTENT 4 10; FOCUS 5. Pairs: 4 wi, 6 ws, 10 wi.
B_PER_CODE = {"WORDING": 5, "STEREOTYPES": 3, "TONE": 2, "INTENT": 2, "FOCUS": 1}
B_PER_PAIR = {("INTENT", "WORDING"): 2, ("STEREOTYPES", "WORDING"): 1}
# The results page: each code's share of the 12 confirmed excerpts, rounded ("WORDING 50% (6 of 12)").
# A: 6/12 = 50%, 4/12 = 33.3%, 3/12 = 25%, 2/12 = 16.7% → 17%. B: 5/12 = 41.7% → 42%, 3/12 = 25%, 2/12 → 17%,
# 1/12 = 8.3% → 8%.
A_SHARES = {"WORDING": "50% (6 of 12)", "STEREOTYPES": "33% (4 of 12)", "TONE": "25% (3 of 12)",
            "INTENT": "17% (2 of 12)", "FOCUS": "17% (2 of 12)"}
B_SHARES = {"WORDING": "42% (5 of 12)", "STEREOTYPES": "25% (3 of 12)", "TONE": "17% (2 of 12)",
            "INTENT": "17% (2 of 12)", "FOCUS": "8% (1 of 12)"}
# Two or more codes. A: excerpts 0 ws, 3 st, 4 wsi, 6 wt, 8 ws, 11 wf = 6 of 12 = 50%; B: 4 wi, 6 ws, 10 wi = 3 of
# 12 = 25%.
A_MULTI, B_MULTI = "50% (6 of 12)", "25% (3 of 12)"
CODE_OF_KEY = {"w": "WORDING", "s": "STEREOTYPES", "t": "TONE", "i": "INTENT", "f": "FOCUS"}


def _ready(page: Page, number: int, total: int = 12) -> None:
    expect(page.locator("#excerpt-heading")).to_have_text(f"Excerpt {number} of {total}")
    expect(page.locator("#coding-form[data-ready=true]")).to_have_count(1)


def _ticked(page: Page) -> set[str]:
    return set(page.eval_on_selector_all("input[name=code]:checked", "boxes => boxes.map(b => b.dataset.key)"))


def _expected_ticks(keys: str) -> set[str]:
    return {key for key, typed in Counter(keys).items() if typed % 2}


def _type_codes(page: Page, keys: str, memo: str | None) -> None:
    for key in keys:
        page.keyboard.press(key)
    if memo is not None:
        page.keyboard.press("m")
        assert page.evaluate("() => document.activeElement.id") == "memo"
        page.keyboard.type(memo)
        page.keyboard.press("Escape")
        assert page.evaluate("() => document.activeElement.id") == "codes"
    assert _ticked(page) == _expected_ticks(keys)  # the memo's letters toggled nothing


def _code_excerpts(page: Page, plan: list[str], memos: dict[int, str], start: int, stop: int) -> None:
    """Code excerpts start..stop-1 (from 0) with the keyboard, each confirmed with Enter; checks on each page that
    only this coder's own earlier codes are ticked."""
    for index in range(start, stop):
        _ready(page, index + 1)
        assert _ticked(page) == set() and page.input_value("#memo") == ""  # nothing of the other coder's
        _type_codes(page, plan[index], memos.get(index))
        page.keyboard.press("Enter")
        if index + 1 < len(plan):
            _ready(page, index + 2)


def _open_link(context, link: str) -> Page:
    page = context.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(str(error)))
    page.on("console", lambda message: problems.append(message.text) if message.type == "error" else None)
    page.problems = problems
    page.goto(link)
    return page


def _start_from_the_intro(page: Page) -> None:
    expect(page.locator("h1")).to_have_text("Thematic content and error type")
    for _ in range(5):
        page.keyboard.press("Tab")
        if page.evaluate("() => document.activeElement.id") == "start-coding":
            break
    page.keyboard.press("Enter")


def _stored_codes(coder) -> dict[int, set[str]]:
    return {coding.excerpt.position: {code.name for code in coding.codes.all()}
            for coding in ExcerptCoding.objects.filter(coder=coder).select_related("excerpt").prefetch_related("codes")}


def _tick_wording_with_saves_routed(chromium, live_server, coder, excerpt, handler):
    """A new browser whose saves go through ``handler`` (set before the page exists), the coder's link opened on
    the first of two excerpts, and WORDING ticked with its key: the context and the page."""
    context = chromium.new_context()
    context.route("**/save/", handler)
    page = _open_link(context, f"{live_server.url}/c/{coder.invite_token}/excerpts/{excerpt.id}/")
    _ready(page, 1, 2)
    page.keyboard.press("w")
    return context, page


def _until(read, expected, wait):
    """``read()`` once it equals ``expected`` (or its last value after about 5 s), waiting with ``wait(ms)``: a
    page's ``wait_for_timeout`` while a route must answer meanwhile (Playwright's sync API runs route handlers only
    during its own calls)."""
    value = None
    for _ in range(50):
        value = read()
        if value == expected:
            break
        wait(100)
    return value


def _per_code_and_pair(codes_by_excerpt: dict[int, set[str]]) -> tuple[dict, dict]:
    per_code = Counter(name for names in codes_by_excerpt.values() for name in names)
    per_pair = Counter(pair for names in codes_by_excerpt.values() for pair in combinations(sorted(names), 2))
    return dict(per_code), dict(per_pair)


def test_two_coders_code_a_round_with_the_keyboard_and_one_resumes_on_another_device(live_server, chromium):
    round_ = make_round(12, name="Error analysis round")
    coder_a, coder_b = add_coder(round_, "Coder A"), add_coder(round_, "Coder B")
    link_a, link_b = (f"{live_server.url}/c/{coder.invite_token}/" for coder in (coder_a, coder_b))

    # Coder A: the intro, then excerpts 1-6 confirmed, then "wt" and a memo on excerpt 7, and the tab is closed.
    laptop = chromium.new_context(viewport={"width": 1200, "height": 900})
    page = _open_link(laptop, link_a)
    expect(page.locator("#lens-name")).to_have_text("Thematic content and error type")
    assert_accessible(page, "intro")
    assert_no_sideways_scroll(page)
    _start_from_the_intro(page)
    _ready(page, 1)
    assert_accessible(page, "excerpt")
    assert_no_sideways_scroll(page, unfold="details")
    _ready(page, 1)
    page.keyboard.press("?")
    expect(page.locator("#keys-help")).to_have_attribute("open", "")
    page.keyboard.press("?")
    expect(page.locator("#keys-help")).not_to_have_attribute("open", "")
    page.keyboard.press("?")
    page.keyboard.press("Escape")
    expect(page.locator("#keys-help")).not_to_have_attribute("open", "")
    assert page.evaluate("() => document.activeElement.id") == "codes"
    _code_excerpts(page, A_KEYS, A_MEMOS, 0, 6)
    _ready(page, 7)
    expect(page.locator("#coded-count")).to_have_text("6 of 12 coded")
    _type_codes(page, A_KEYS[6], A_MEMOS[6])
    expect(page.locator("#save-status")).to_have_text("Saved.")
    assert page.problems == []
    laptop.close()

    # Coder B codes all twelve meanwhile, seeing none of A's codes or memos.
    other = chromium.new_context(viewport={"width": 1200, "height": 900})
    page_b = _open_link(other, link_b)
    _start_from_the_intro(page_b)
    _code_excerpts(page_b, B_KEYS, B_MEMOS, 0, 12)
    expect(page_b.locator("h1")).to_have_text("Thank you: all 12 excerpts are coded")
    assert_accessible(page_b, "done")
    assert_no_sideways_scroll(page_b)
    assert page_b.problems == []
    other.close()

    # Coder A on another device: the link opens excerpt 7 with A's own ticks and memo; excerpt 6 keeps its codes.
    phone = chromium.new_context(viewport={"width": 800, "height": 900})
    page = _open_link(phone, link_a)
    _ready(page, 7)
    expect(page.locator("#coded-count")).to_have_text("6 of 12 coded")
    assert _ticked(page) == {"w", "t"} and page.input_value("#memo") == A_MEMOS[6]
    page.keyboard.press("p")
    _ready(page, 6)
    assert _ticked(page) == {"f"}
    page.keyboard.press("n")
    _ready(page, 7)
    page.keyboard.press("Enter")
    _code_excerpts(page, A_KEYS, A_MEMOS, 7, 12)
    expect(page.locator("h1")).to_have_text("Thank you: all 12 excerpts are coded")
    assert page.problems == []
    phone.close()

    # The database holds exactly what was typed.
    for coder, keys, memos, per_code, per_pair in ((coder_a, A_KEYS, A_MEMOS, A_PER_CODE, A_PER_PAIR),
                                                   (coder_b, B_KEYS, B_MEMOS, B_PER_CODE, B_PER_PAIR)):
        stored = _stored_codes(coder)
        assert stored == {n: {CODE_OF_KEY[key] for key in _expected_ticks(typed)} for n, typed in enumerate(keys)}
        assert _per_code_and_pair(stored) == (per_code, per_pair)
        codings = ExcerptCoding.objects.filter(coder=coder)
        assert codings.count() == 12 and not codings.filter(confirmed_at__isnull=True).exists()
        assert {c.excerpt.position: c.memo for c in codings.exclude(memo="").select_related("excerpt")} == memos
        coder.refresh_from_db()
        assert coder.started_at is not None and coder.completed_at is not None

    _the_results_page_shows_the_hand_counts_and_the_libraries_agreement(live_server, chromium, round_)


def _the_results_page_shows_the_hand_counts_and_the_libraries_agreement(live_server, chromium, round_) -> None:
    researcher = Client()
    researcher.force_login(make_researcher("results-reader")[0])
    context = chromium.new_context(viewport={"width": 1200, "height": 900})
    context.add_cookies([{"name": "sessionid", "value": researcher.cookies["sessionid"].value,
                          "url": live_server.url}])
    page = _open_link(context, f"{live_server.url}/coding/rounds/{round_.id}/results/")
    expect(page.locator("#round-name")).to_have_text("Error analysis round")
    expect(page.locator("#partial")).to_have_count(0)
    for name, shares, multi, pair in (("Coder A", A_SHARES, A_MULTI, "WORDING + STEREOTYPES (n = 3)"),
                                      ("Coder B", B_SHARES, B_MULTI, "(n = 2)")):
        figures = page.locator(f'.coder-figures[data-coder="{name}"]')
        for code, share in shares.items():
            expect(figures.locator(f'.frequencies tr[data-code="{code}"] td.num')).to_have_text(share)
        expect(figures.locator(".multi-code")).to_contain_text(multi)
        expect(figures.locator(".top-pairs .label").first).to_contain_text(pair)
    expect(page.locator('.coder-figures[data-coder="Coder B"] .top-pairs .label').first).to_contain_text("INTENT")

    # Agreement per code on presence/absence over the 12 excerpts, from the keys typed, by the libraries.
    for key, code in CODE_OF_KEY.items():
        a = np.array([int(key in _expected_ticks(typed)) for typed in A_KEYS])
        b = np.array([int(key in _expected_ticks(typed)) for typed in B_KEYS])
        alpha = krippendorff.alpha(reliability_data=np.vstack([a, b]), level_of_measurement="nominal")
        row = page.locator(f'table.agreement tr[data-code="{code}"]')
        expect(row.locator("td.alpha")).to_have_text(f"{alpha:.3f}")
        expect(row.locator("td.kappa")).to_have_text(f"{cohen_kappa_score(a, b):.3f}")
    assert_accessible(page, "round results")
    assert_no_sideways_scroll(page, unfold="details")
    assert page.problems == []
    context.close()


def test_a_failed_save_is_shown_and_retried_a_closed_tab_sends_its_memo_and_a_closed_round_is_shown(
        live_server, chromium):
    round_ = make_round(2)
    coder = add_coder(round_, "Coder A")
    first = round_.excerpts.get(position=0)
    # The server is unreachable for the first two saves: the page says so and sends again by itself. (The route is
    # the context's, in place before the page exists.)
    failures = []

    def unreachable_twice(route):
        if len(failures) < 2:
            failures.append(route.request.url)
            route.abort()
        else:
            route.continue_()

    context, page = _tick_wording_with_saves_routed(chromium, live_server, coder, first, unreachable_twice)
    expect(page.locator("#save-status")).to_contain_text("Not saved yet")
    expect(page.locator("#save-status")).to_have_text("Saved.", timeout=10_000)
    assert len(failures) == 2 and _stored_codes(coder) == {0: {"WORDING"}}
    context.unroute("**/save/")  # a keepalive from a closing page must not wait on a route handler

    # A memo typed and the tab closed before the memo's delay: sent on pagehide with keepalive.
    page.keyboard.press("m")
    page.keyboard.type("closed at once")
    page.close()
    assert _until(lambda: ExcerptCoding.objects.get(coder=coder).memo, "closed at once",
                  lambda ms: time.sleep(ms / 1000)) == "closed at once"

    # The round closes while the page is open: the next tick is refused and the page says why.
    page = _open_link(context, f"{live_server.url}/c/{coder.invite_token}/excerpts/{first.id}/")
    _ready(page, 1, 2)
    round_.closed_at = round_.created_at
    round_.save(update_fields=["closed_at"])
    page.keyboard.press("s")
    expect(page.locator("#save-status")).to_contain_text("This coding round is closed")
    expect(page.locator("#code-" + str(first.round.lenses.get().codebook.codes.get(name="TONE").id))).to_be_disabled()
    assert _stored_codes(coder) == {0: {"WORDING"}}
    assert page.problems == [] or all("409" in problem for problem in page.problems)
    context.close()


def test_a_change_made_offline_never_overwrites_another_devices_later_save(live_server, chromium):
    """Device A ticks WORDING while the server is unreachable (kept on the page and in localStorage); device B then
    ticks TONE on the same excerpt; when A reaches the server again its save, based on the older revision, is
    refused: B's codes stay, and A's page shows them with the change it could not save."""
    round_ = make_round(2)
    coder = add_coder(round_, "Coder A")
    first = round_.excerpts.get(position=0)
    url = f"{live_server.url}/c/{coder.invite_token}/excerpts/{first.id}/"
    device_a, device_b = chromium.new_context(), chromium.new_context()
    offline = {"on": True}
    device_a.route("**/save/", lambda route: route.abort() if offline["on"] else route.continue_())
    page_a = _open_link(device_a, url)
    _ready(page_a, 1, 2)
    page_a.keyboard.press("w")
    expect(page_a.locator("#save-status")).to_contain_text("Not saved yet")

    page_b = _open_link(device_b, url)
    _ready(page_b, 1, 2)
    page_b.keyboard.press("t")
    expect(page_b.locator("#save-status")).to_have_text("Saved.")
    assert _stored_codes(coder) == {0: {"TONE"}}

    offline["on"] = False  # A's retry now reaches the server
    expect(page_a.locator("#save-status")).to_contain_text("Changed on another device", timeout=15_000)
    expect(page_a.locator("#save-status")).to_contain_text("codes: WORDING")
    assert _ticked(page_a) == {"t"}
    assert _stored_codes(coder) == {0: {"TONE"}}
    # A can now code on top of what is stored.
    page_a.keyboard.press("w")
    expect(page_a.locator("#save-status")).to_have_text("Saved.")
    assert _stored_codes(coder) == {0: {"TONE", "WORDING"}}
    # The aborted saves and the 409 are logged by Chromium as failed loads; nothing else went wrong.
    assert [p for p in page_a.problems if not p.startswith("Failed to load resource")] == []
    assert page_b.problems == []
    device_a.close()
    device_b.close()


def _log_in(context, live_server, user) -> None:
    """``user`` logs in on this browser through the login page, in a tab of its own: Django gives the browser a new
    session and a new CSRF token, which pages already open must pick up."""
    user.set_password("coding-pages-1")
    user.save(update_fields=["password"])
    context.clear_cookies(name="sessionid")  # whoever was logged in has left (the login page would go on to them)
    tab = context.new_page()
    tab.goto(f"{live_server.url}/admin/login/")
    tab.fill("#id_username", user.username)
    tab.fill("#id_password", "coding-pages-1")
    tab.click("input[type=submit]")
    expect(tab.locator("#user-tools")).to_contain_text(user.username)
    tab.close()


def test_two_researchers_sharing_a_browser_never_see_or_save_each_others_changes(live_server, chromium):
    """Rita ticks WORDING and types a memo while the server is away (kept in this browser's storage), then Carl
    logs in on the same browser and opens the same excerpt of the round: his page shows nothing of Rita's, and
    Rita's page, reaching the server again under Carl's session, is refused instead of saving her change as his.
    Carl's own change made after his session ended is kept on his page and saved once he has logged in again (with
    the new CSRF token the login gave), and Rita's once she has."""
    round_ = make_round(2)
    rita, _ = make_researcher("rita")
    carl, _ = make_researcher("carl")
    rita_coder, carl_coder = add_coder(round_, "Rita", user=rita), add_coder(round_, "Carl", user=carl)
    first = round_.excerpts.get(position=0)
    url = f"{live_server.url}/coding/rounds/{round_.id}/code/excerpts/{first.id}/"
    browser = chromium.new_context()
    offline = {"on": True}
    browser.route("**/save/", lambda route: route.abort() if offline["on"] else route.continue_())
    _log_in(browser, live_server, rita)
    page_rita = _open_link(browser, url)
    _ready(page_rita, 1, 2)
    _type_codes(page_rita, "w", "RITA'S PRIVATE MEMO")
    expect(page_rita.locator("#save-status")).to_contain_text("Not saved yet")

    _log_in(browser, live_server, carl)
    page_carl = _open_link(browser, url)
    _ready(page_carl, 1, 2)
    page_carl.wait_for_timeout(500)  # a pending change would be put back at once
    assert _ticked(page_carl) == set() and page_carl.input_value("#memo") == ""
    assert "RITA" not in page_carl.locator("#save-status").inner_text()

    offline["on"] = False  # Rita's page's retry reaches the server, with Carl's session
    expect(page_rita.locator("#save-status")).to_contain_text("opened by another account", timeout=15_000)
    assert not ExcerptCoding.objects.exists()

    # Carl's session ends; his tick is kept on the page and sent once he has logged in again.
    browser.add_cookies([{"name": "sessionid", "value": "expired", "url": live_server.url}])
    page_carl.keyboard.press("t")
    expect(page_carl.locator("#save-status")).to_contain_text("log in again")
    _log_in(browser, live_server, carl)
    expect(page_carl.locator("#save-status")).to_have_text("Saved.", timeout=15_000)
    assert _stored_codes(carl_coder) == {0: {"TONE"}} and not ExcerptCoding.objects.filter(coder=rita_coder).exists()
    # Rita logs in again: her page, still open and still sending, saves her change as hers.
    _log_in(browser, live_server, rita)
    expect(page_rita.locator("#save-status")).to_have_text("Saved.", timeout=15_000)
    assert _stored_codes(rita_coder) == {0: {"WORDING"}}
    assert ExcerptCoding.objects.get(coder=rita_coder).memo == "RITA'S PRIVATE MEMO"
    assert _stored_codes(carl_coder) == {0: {"TONE"}}
    browser.close()


def test_a_save_answered_as_superseded_sends_the_pages_state_again(live_server, chromium):
    """The server answers a save that arrived after the same page's later one with what is stored (the server's
    side is tested in tests/coding/test_coder_pages.py); here that answer is played to the page for its first
    save, with a stored state other than the page's: the page sends its own state again, and the server holds it."""
    round_ = make_round(2)
    coder = add_coder(round_, "Coder A")
    first = round_.excerpts.get(position=0)
    (tone,) = [code.id for code in round_.lenses.get().codebook.codes.filter(name="TONE")]
    answered = []

    def superseded_once(route):
        if answered:
            route.continue_()
            return
        answered.append(route.request.post_data_json)
        route.fulfill(status=200, content_type="application/json", body=json.dumps({
            "confirmed": False, "revision": 0, "progress": {"confirmed": 0, "total": 2}, "next_url": "",
            "superseded": True, "stored": {"codes": [tone], "memo": "stored by a later save"}}))

    context, page = _tick_wording_with_saves_routed(chromium, live_server, coder, first, superseded_once)
    expect(page.locator("#save-status")).to_have_text("Saved.")
    assert _until(lambda: _stored_codes(coder), {0: {"WORDING"}}, page.wait_for_timeout) == {0: {"WORDING"}}
    assert [answer["codes"] for answer in answered] == [[round_.lenses.get().codebook.codes.get(name="WORDING").id]]
    assert page.problems == []
    context.close()


def test_a_change_kept_by_a_closed_tab_is_sent_when_the_excerpt_is_opened_again_but_not_taken_from_an_open_one(
        live_server, chromium, monkeypatch):
    """While the database is away, a tick is kept in the browser; the tab is closed; opened again, the excerpt
    shows the tick and saves it once the database is back. A second tab opened while the first is still open and
    sending leaves the first's change to it (the tabs ask each other), so the two never save as one page; the first
    tab's change lands when the server is back."""
    round_ = make_round(2)
    coder = add_coder(round_, "Coder A")
    first, second = round_.excerpts.order_by("position")
    url = f"{live_server.url}/c/{coder.invite_token}/excerpts/{first.id}/"
    context = chromium.new_context()
    page = _open_link(context, url)
    _ready(page, 1, 2)
    # The database is away, not the browser's network: Chromium sends a closed tab's keepalive save after the page
    # is gone, outside the browser's offline mode, and it would land before the excerpt is opened again.
    database_away = {"on": True}
    real_save = coding_views.coding_save

    def save_unless_away(**kwargs):
        if database_away["on"]:
            raise OperationalError("the database is away")
        return real_save(**kwargs)
    monkeypatch.setattr(coding_views, "coding_save", save_unless_away)
    page.keyboard.press("w")
    expect(page.locator("#save-status")).to_contain_text("Not saved yet")
    page.close()
    page = _open_link(context, url)
    _ready(page, 1, 2)
    # The kept change is put back once the page has asked the other tabs (none answer), and sent until it lands.
    expect(page.locator("#save-status")).to_contain_text("Not saved yet", timeout=15_000)
    assert _ticked(page) == {"w"} and not ExcerptCoding.objects.exists()
    database_away["on"] = False
    expect(page.locator("#save-status")).to_have_text("Saved.", timeout=15_000)
    assert _ticked(page) == {"w"} and _stored_codes(coder) == {0: {"WORDING"}}

    # The second excerpt: tab one keeps a change while saves fail; tab two opens meanwhile and leaves it alone.
    away = {"on": True}
    context.route("**/save/", lambda route: route.abort() if away["on"] else route.continue_())
    tab_one = _open_link(context, url.replace(f"/{first.id}/", f"/{second.id}/"))
    _ready(tab_one, 2, 2)
    tab_one.keyboard.press("t")
    expect(tab_one.locator("#save-status")).to_contain_text("Not saved yet")
    tab_two = _open_link(context, url.replace(f"/{first.id}/", f"/{second.id}/"))
    _ready(tab_two, 2, 2)
    expect(tab_two.locator("#save-status")).to_contain_text("Another tab of this excerpt is still sending")
    assert _ticked(tab_two) == set()
    away["on"] = False
    expect(tab_one.locator("#save-status")).to_have_text("Saved.", timeout=15_000)
    assert _stored_codes(coder) == {0: {"WORDING"}, 1: {"TONE"}}
    # Tab two, on the revision it loaded, cannot overwrite what tab one saved since: it is shown instead.
    tab_two.keyboard.press("s")
    expect(tab_two.locator("#save-status")).to_contain_text("Changed on another device or tab")
    assert _stored_codes(coder) == {0: {"WORDING"}, 1: {"TONE"}} and _ticked(tab_two) == {"t"}
    context.close()
