"""Labelling as an annotator meets it in Chromium, at a desktop size with the keyboard and on a phone by taps:
back to the previous sentence and change its label, flag a sentence, skip one with a reason, the progress
bar; the changes stored as the page made them; nothing overlapping on the phone; axe-core clean."""
from __future__ import annotations

import json

import pytest
from playwright.sync_api import Page, expect

from annotation.models import Assignment, Label, LabelChange
from tests.browser.accessibility import assert_accessible
from tests.browser.test_touch_iat import PHONE
from tests.participant.helpers import labelling_study, start_labelling

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

DESKTOP = {"viewport": {"width": 1366, "height": 900}}


def choose(page: Page, key: str, *, touch: bool) -> None:
    """Give the label of key ``key`` as the participant would: a tap on a phone; on a computer the key, or a
    click when the typing cursor is in a text field (where the keys type)."""
    shown = page.locator("input[name=item]").get_attribute("value")
    if touch:
        page.locator(f"#label-{key}").tap()
    elif page.evaluate("() => ['INPUT', 'TEXTAREA'].includes(document.activeElement.tagName)"):
        page.locator(f"#label-{key}").click()
    else:
        page.keyboard.press(key)
    page.wait_for_function("item => document.querySelector('input[name=item]')?.value !== item"
                           " || !!document.querySelector('.chosen')", arg=shown)
    page.wait_for_load_state("load")


def boxes_overlapping(page: Page, selector: str) -> list[tuple[str, str]]:
    """The pairs of visible elements matching ``selector`` whose boxes intersect."""
    return page.evaluate("""selector => {
        const boxes = [...document.querySelectorAll(selector)].filter(e => e.getClientRects().length)
            .map(e => [e.id || e.tagName, e.getBoundingClientRect()]);
        const pairs = [];
        for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
            const [a, p] = boxes[i], [b, q] = boxes[j];
            if (p.left < q.right && q.left < p.right && p.top < q.bottom && q.top < p.bottom) pairs.push([a, b]);
        }
        return pairs;
    }""", selector)


@pytest.mark.parametrize("device", ["desktop", "phone"])
def test_back_change_flag_and_skip_in_the_page_are_stored_as_given(live_server, chromium, device):
    touch = device == "phone"
    study = labelling_study(n_items=3, per_annotator=3)
    _, participant, url = start_labelling(study)
    first, second, third = Assignment.objects.filter(participant=participant).order_by("position")
    context = chromium.new_context(**(PHONE if touch else DESKTOP))
    page = context.new_page()
    page.goto(live_server.url + url)
    expect(page.locator("#progress")).to_have_text("Sentence 1 of 3")
    assert page.locator("#progress-bar").evaluate("e => [e.value, e.max]") == [0, 3]
    assert_accessible(page, f"labelling ({device})")
    if touch:
        controls = "#label-0, #label-1, #label-u, #flag-box summary, #rationale, #label-back, #label-forward"
        assert boxes_overlapping(page, controls) == []
        heights = page.locator(".label-buttons button, .sentence-note summary").evaluate_all(
            "els => els.map(e => e.getBoundingClientRect().height)")
        assert min(heights) >= 44, heights

    # The first sentence, flagged, with the label 1.
    page.locator("#flag-box summary").click()
    page.fill("#flag-reason", "The text is broken, cut off or garbled")
    choose(page, "1", touch=touch)
    expect(page.locator("#progress")).to_have_text("Sentence 2 of 3")
    assert page.locator("#progress-bar").evaluate("e => e.value") == 1

    # Back: the first sentence with its label marked and its flag; change the label to 0.
    page.locator("#label-back").click()
    expect(page.locator("#progress")).to_contain_text("you labelled it")
    expect(page.locator("#label-1")).to_have_attribute("aria-pressed", "true")
    expect(page.locator("#flag-reason")).to_have_value("The text is broken, cut off or garbled")
    assert_accessible(page, f"a labelled sentence opened again ({device})")
    choose(page, "0", touch=touch)
    expect(page.locator("#progress")).to_have_text("Sentence 2 of 3")  # on to where the participant was

    # Skip the second: without a reason the page asks for one and sends nothing.
    page.locator("#skip-box summary").click()
    page.locator("#skip-button").click()
    expect(page.locator("#label-status")).to_have_text("Please say why you skip this sentence.")
    assert not Assignment.objects.filter(skipped_at__isnull=False).exists()
    page.fill("#skip-reason", "I cannot judge this sentence")
    page.locator("#skip-button").click()
    expect(page.locator("#progress")).to_have_text("Sentence 3 of 3")
    choose(page, "1", touch=touch)
    expect(page.locator("#completion-code")).to_be_visible()

    label = Label.objects.get(participant=participant, item_id=first.item_id)
    (change,) = LabelChange.objects.filter(label=label)
    assert (label.value, change.previous_value) == (0, 1) and change.changed_at > change.previous_at
    flagged = Assignment.objects.get(pk=first.pk)
    assert flagged.flag_reason == "The text is broken, cut off or garbled" and flagged.flagged_at is not None
    skipped = Assignment.objects.get(pk=second.pk)
    assert skipped.skip_reason == "I cannot judge this sentence" and skipped.skipped_at is not None
    assert not Label.objects.filter(participant=participant, item_id=second.item_id).exists()
    assert Label.objects.get(participant=participant, item_id=third.item_id).value == 1
    context.close()


def test_a_change_kept_by_a_closed_tab_is_sent_from_the_next_page_opened(live_server, chromium):
    study = labelling_study(n_items=3, per_annotator=3)
    client, participant, url = start_labelling(study)
    first = Assignment.objects.filter(participant=participant).order_by("position").first()
    client.post(url, {"item": first.item_id, "value": 1})
    context = chromium.new_context(**DESKTOP)
    page = context.new_page()
    page.goto(live_server.url + url)
    # What the review page of the first sentence keeps while its post has not been acknowledged.
    kept = {"item": str(first.item_id), "url": f"{url}?at={first.position}", "after": url,
            "entries": [["item", str(first.item_id)], ["revise", "1"], ["rationale", "a quote"],
                        ["flag_reason", ""], ["value", "0"]]}
    page.evaluate("([key, value]) => localStorage.setItem(key, value)",
                  [f"pending-label:{url}", json.dumps(kept)])
    page.reload()
    page.wait_for_function(f"() => localStorage.getItem('pending-label:{url}') === null")
    label = Label.objects.get(participant=participant, item_id=first.item_id)
    assert (label.value, label.rationale, LabelChange.objects.filter(label=label).count()) == (0, "a quote", 1)
    expect(page.locator("#progress")).to_have_text("Sentence 2 of 3")  # the page stayed where it was
    context.close()
