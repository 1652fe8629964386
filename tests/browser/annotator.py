"""What an annotator does in the browser, step by step (used by the browser tests)."""
from __future__ import annotations

import json

from playwright.sync_api import Page, expect


def consent(page: Page) -> None:
    expect(page.locator("#content-warning")).to_be_visible()
    page.click("#consent-button")


def answer_questionnaire(page: Page, choice: int, *, limit: int | None = None, submit: bool = True) -> int:
    """Click option ``choice`` for each unanswered item (up to ``limit``); returns how many were clicked."""
    items = page.locator("li.item")
    clicked = 0
    for n in range(items.count()):
        if limit is not None and clicked >= limit:
            break
        radios = items.nth(n).locator("input[type=radio]")
        if items.nth(n).locator("input:checked").count():
            continue
        radios.nth(choice).check()
        clicked += 1
    if submit:
        page.click("#questionnaire-submit")
    return clicked


def iat_config(page: Page) -> dict:
    return json.loads(page.locator("#iat-config").text_content())


def run_iat_blocks(page: Page, *, until_block: int = 7, stop_after_trials: int | None = None,
                   wrong_first_on: tuple[int, ...] = (0,)) -> list[tuple[int, int]]:
    """Do the IAT from the page's start block, with a wrong key first on the trial indexes in
    ``wrong_first_on``; stop after ``until_block`` (or mid-block after ``stop_after_trials`` trials of it).
    Returns the (block, trial) pairs that had an error."""
    config = iat_config(page)
    # Count the stimuli the page shows, so each trial waits for its own showing. Waiting instead for the blank
    # between trials (250 ms) missed it whenever the machine was slow, and then waited on the next word.
    page.evaluate("""() => {
        window.iatShown = 0;
        new MutationObserver((records) => {
            for (const record of records) for (const node of record.addedNodes) if (node.textContent) window.iatShown++;
        }).observe(document.getElementById("iat-stimulus"), {childList: true});
    }""")
    shown = 0
    errors = []
    for block in config["blocks"]:
        if block["number"] < config["start_block"] or block["number"] > until_block:
            continue
        expect(page.locator("#iat-message")).to_contain_text(f"Block {block['number']} of 7")
        page.keyboard.press(" ")
        for trial in block["trials"]:
            if (stop_after_trials is not None and block["number"] == until_block
                    and trial["index"] >= stop_after_trials):
                return errors
            shown += 1
            page.wait_for_function("n => window.iatShown >= n", arg=shown)
            expect(page.locator("#iat-stimulus")).to_have_text(trial["stimulus"])
            if trial["index"] in wrong_first_on:
                page.keyboard.press("i" if trial["correct_key"] == "e" else "e")
                expect(page.locator("#iat-error")).to_be_visible()
                errors.append((block["number"], trial["index"]))
            page.keyboard.press(trial["correct_key"])
    return errors


def label_items(page: Page, *, count: int | None = None) -> int:
    """Label with the keyboard: 0 for attention checks ('Please choose…'), else 1. Returns how many."""
    done = 0
    while True:
        page.wait_for_load_state("load")  # the shortcuts script is in place
        if (count is not None and done >= count) or not page.locator("#target").count():
            break
        progress = page.locator("#progress").text_content()
        key = "0" if "Please choose" in page.locator("#target").text_content() else "1"
        page.keyboard.press(key)
        page.wait_for_function("p => !document.querySelector('#progress') || "
                               "document.querySelector('#progress').textContent !== p", arg=progress)
        done += 1
    return done


def _watch_stimuli(page: Page) -> None:
    page.evaluate("""() => {
        window.iatShown = 0;
        new MutationObserver((records) => {
            for (const record of records) for (const node of record.addedNodes) if (node.textContent) window.iatShown++;
        }).observe(document.getElementById("iat-stimulus"), {childList: true});
    }""")


def wait_for_tap_to_begin(page: Page, block_number: int) -> None:
    """Wait until the IAT asks for the tap that starts ``block_number``. The page's config is parsed before
    iat.js runs, so only this message says the script is listening and the response halves have their final
    size and place (the touch layout, the labels and the progress line are all set before it)."""
    expect(page.locator("#iat-message")).to_contain_text(f"Block {block_number} of 7")
    expect(page.locator("#iat-message")).to_contain_text("Tap anywhere to begin")


def tap_side(page: Page, side: str) -> None:
    """A tap in the middle of the lower part of the left or right response area."""
    box = page.locator("#iat-left" if side == "left" else "#iat-right").bounding_box()
    page.touchscreen.tap(box["x"] + box["width"] / 2, box["y"] + box["height"] * 0.8)


class TwoThumbs:
    """Taps with two thumbs, the left one on the left response area and the right one on the right, through
    CDP touch events. A thumb rests after its tap until the other thumb lands, so a tap with the other thumb
    comes while a finger is already down (a non-primary pointer); a second tap with the same thumb lifts it
    first. Chromium's CDP: a touchStart lists every finger down (a new id is pressed, a known one stays), a
    touchEnd the fingers it lifts. The halves are measured when the thumbs are made: make them once the IAT asks
    for its first tap (``wait_for_tap_to_begin``)."""

    FINGER = {"left": 0, "right": 1}

    def __init__(self, page: Page):
        self.cdp = page.context.new_cdp_session(page)
        self.points = {}
        for side in ("left", "right"):
            box = page.locator(f"#iat-{side}").bounding_box()
            self.points[side] = {"x": box["x"] + box["width"] / 2, "y": box["y"] + box["height"] * 0.8,
                                 "id": self.FINGER[side]}
        self.down: list[str] = []

    def _send(self, kind: str, sides: list[str]) -> None:
        self.cdp.send("Input.dispatchTouchEvent", {"type": kind, "touchPoints": [self.points[s] for s in sides]})

    def _lift(self, side: str) -> None:
        self.down.remove(side)
        self._send("touchEnd", [side])

    def tap(self, side: str) -> None:
        if side in self.down:
            self._lift(side)
        self.down.append(side)
        self._send("touchStart", self.down)
        for resting in [s for s in self.down if s != side]:
            self._lift(resting)  # the other thumb lifts once this one has landed

    def lift(self) -> None:
        for side in list(self.down):
            self._lift(side)


def run_iat_by_taps(page: Page, *, wrong_first_on: tuple[int, ...] = (0,)) -> list[tuple[int, int]]:
    """Do the whole IAT with taps on the two response areas, the wrong side first on the trial indexes in
    ``wrong_first_on``; returns the (block, trial) pairs that had an error."""
    config = iat_config(page)
    _watch_stimuli(page)
    shown, errors = 0, []
    side_of = {"e": "left", "i": "right"}
    for block in config["blocks"]:
        if block["number"] < config["start_block"]:
            continue
        wait_for_tap_to_begin(page, block["number"])
        tap_side(page, "left")
        for trial in block["trials"]:
            shown += 1
            page.wait_for_function("n => window.iatShown >= n", arg=shown)
            expect(page.locator("#iat-stimulus")).to_have_text(trial["stimulus"])
            correct = side_of[trial["correct_key"]]
            if trial["index"] in wrong_first_on:
                tap_side(page, "right" if correct == "left" else "left")
                expect(page.locator("#iat-error")).to_be_visible()
                errors.append((block["number"], trial["index"]))
            tap_side(page, correct)
    return errors


def label_items_by_taps(page: Page) -> int:
    """Label every item by tapping the buttons: 0 for attention checks ('Please choose…'), else 1."""
    done = 0
    while page.locator("#target").count():
        progress = page.locator("#progress").text_content()
        key = "0" if "Please choose" in page.locator("#target").text_content() else "1"
        page.locator(f"#label-{key}").tap()
        page.wait_for_function("p => !document.querySelector('#progress') || "
                               "document.querySelector('#progress').textContent !== p", arg=progress)
        page.wait_for_load_state("load")
        done += 1
    return done
