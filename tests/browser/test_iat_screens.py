"""What the IAT's screens show a participant. On a touch screen the word and the error mark never cover a category
label: every stimulus with every combined pairing (three lines of label each side) in either arrangement, put into
the live page at phone sizes in portrait and landscape, and the boxes of the rendered text intersected. Orientation as
Project Implicit gives it: every category's words before block 1, a notice before block 5 that the categories have
switched sides, targets and attributes in two looks (colour and style)."""
from __future__ import annotations

import pytest
from django.test import Client
from playwright.sync_api import expect

from annotation import simulation
from psychometrics.models import IATSession
from psychometrics.services import iat_block_submit
from tests.browser.annotator import iat_config, wait_for_tap_to_begin
from tests.participant.helpers import consent_and_finish_questionnaires, flow_study, invite

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SIZES = [(320, 568), (360, 740), (390, 844), (844, 390)]

# Runs in the page: for each combined pairing and each stimulus, what the page shows (labels set as iat.js sets
# them, the word, the error mark), then the client rectangles of each text intersected. Returns the overlaps found,
# how many placements were checked, and any word or mark outside the task area or below the screen (the page as it
# is when the block waits for its first tap, unscrolled).
MEASURE = """async () => {
  const config = JSON.parse(document.getElementById("iat-config").textContent);
  const root = document.getElementById("iat");
  const left = document.getElementById("iat-left"), right = document.getElementById("iat-right");
  const stimulus = document.getElementById("iat-stimulus"), error = document.getElementById("iat-error");
  const frame = () => new Promise((resolve) => requestAnimationFrame(() => resolve()));
  const textRects = (element) => {
    const range = document.createRange();
    range.selectNodeContents(element);
    return [...range.getClientRects()].filter((r) => r.width > 0 && r.height > 0);
  };
  const meet = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
  // This participant's two combined pairings, and each mirrored: the four arrangements the counterbalancing
  // conditions show participants.
  const pairings = new Map();
  for (const block of config.blocks) {
    if (block.left_labels.length < 2) continue;
    for (const [onLeft, onRight] of [[block.left_labels, block.right_labels], [block.right_labels, block.left_labels]]) {
      pairings.set(JSON.stringify([onLeft, onRight]), {number: block.number, left_labels: onLeft, right_labels: onRight});
    }
  }
  const stimuli = [...new Set(config.blocks.flatMap((block) => block.trials.map((trial) => trial.stimulus)))];
  const overlaps = [], outside = [];
  let checked = 0;
  for (const block of pairings.values()) {
    left.textContent = block.left_labels.join("\\nor\\n");
    right.textContent = block.right_labels.join("\\nor\\n");
    for (const word of stimuli) {
      stimulus.textContent = word;
      error.hidden = false;
      await frame();
      const labels = [...textRects(left), ...textRects(right)];
      const area = root.getBoundingClientRect();
      for (const [name, element] of [["word", stimulus], ["error mark", error]]) {
        for (const rect of textRects(element)) {
          if (labels.some((label) => meet(rect, label))) overlaps.push(`${name} ${word} / ${block.number}`);
          if (rect.bottom > Math.min(area.bottom, window.innerHeight) || rect.left < area.left
              || rect.right > area.right) {
            outside.push(`${name} ${word} / ${block.number}`);
          }
        }
      }
      checked++;
    }
  }
  return {checked: checked, pairings: pairings.size, stimuli: stimuli.length, overlaps: overlaps, outside: outside};
}"""


def test_no_stimulus_or_error_mark_covers_a_category_label_on_a_phone(live_server, chromium):
    study = flow_study(n_items=1, items_per_annotator=1)
    (participant,) = invite(study)
    base = consent_and_finish_questionnaires(Client(), participant)
    for width, height in SIZES:
        context = chromium.new_context(viewport={"width": width, "height": height}, has_touch=True, is_mobile=True,
                                       device_scale_factor=3)
        page = context.new_page()
        page.goto(f"{live_server.url}{base}iat/")
        wait_for_tap_to_begin(page, 1)
        found = page.evaluate(MEASURE)
        context.close()
        # The shipped IAT: 2 combined pairings (blocks 3–4 and 6–7), each also mirrored, and 28 stimuli.
        assert (found["pairings"], found["stimuli"], found["checked"]) == (4, 28, 112), (width, height)
        assert found["overlaps"] == [], (width, height, len(found["overlaps"]), found["overlaps"][:5])
        assert found["outside"] == [], (width, height, found["outside"][:5])


def test_orientation_words_before_block_one_a_notice_before_the_switch_and_two_looks(live_server, chromium):
    study = flow_study(n_items=1, items_per_annotator=1)
    (participant,) = invite(study)
    base = consent_and_finish_questionnaires(Client(), participant)
    page = chromium.new_page(viewport={"width": 1366, "height": 900})
    page.goto(f"{live_server.url}{base}iat/")
    expect(page.locator("#iat-message")).to_contain_text("Block 1 of 7")
    # Every category with all its words, targets first, each in its kind's look.
    terms = page.locator("#iat-preview dt")
    expect(terms).to_have_text(["Autism Spectrum", "Typically Developing", "Pleasant", "Unpleasant"])
    assert [terms.nth(n).get_attribute("class") for n in range(4)] == ["target", "target", "attribute", "attribute"]
    expect(page.locator("#iat-preview dd").first).to_have_text("Autism, Autistic, Autism Spectrum, On the spectrum, "
                                                               "ASD")
    expect(page.locator("#iat-switch-notice")).to_have_count(0)
    looks = page.evaluate("""() => ["target", "attribute"].map((kind) => {
        const style = getComputedStyle(document.querySelector("#iat-preview dt." + kind));
        return [style.color, style.fontStyle]; })""")
    assert looks == [["rgb(27, 63, 143)", "normal"], ["rgb(138, 65, 0)", "italic"]]
    # The labels and each word take their category's look.
    page.keyboard.press(" ")
    expect(page.locator("#iat-preview")).to_have_count(0)
    first = iat_config(page)["blocks"][0]["trials"][0]
    expect(page.locator("#iat-stimulus")).to_have_text(first["stimulus"])
    expect(page.locator("#iat-stimulus")).to_have_class("target")
    expect(page.locator("#iat-left span")).to_have_class("target")
    page.close()

    # Blocks 1–4 done (posted as a participant's page would): block 5 opens with the switch, named.
    session = IATSession.objects.get(participant=participant)
    for number, trials in enumerate(simulation.iat_trials(session.design[:4], 0.3, seed=1, participant=0), start=1):
        iat_block_submit(participant=participant, block_number=number, trials=trials)
    page = chromium.new_page(viewport={"width": 390, "height": 844})
    page.goto(f"{live_server.url}{base}iat/")
    expect(page.locator("#iat-message")).to_contain_text("Block 5 of 7")
    block = iat_config(page)["blocks"][4]
    notice = page.locator("#iat-switch-notice")
    expect(notice).to_have_text(f"Watch out: the categories have switched sides. {block['left_labels'][0]} is now on "
                                f"the left, {block['right_labels'][0]} on the right.")
    expect(page.locator("#iat-preview")).to_have_count(0)
    page.close()
