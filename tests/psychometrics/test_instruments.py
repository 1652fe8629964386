"""Instrument file format: validation, scoring, the shipped AQ-50 (checked against the shared key) and partial SATA."""
from __future__ import annotations

import copy
import dataclasses
import json
import random
import runpy
from pathlib import Path

import pytest

from psychometrics.instruments import (
    INSTRUMENTS_DIR,
    InstrumentError,
    instrument_path,
    load_instrument,
    parse_instrument,
    read_instrument,
    score_responses,
    shipped_instrument,
    shipped_instruments,
)

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared"
SHARED_AQ = SHARED / "instruments" / "aq50.json"
SEED_000 = SHARED / "seeds" / "000_533141d0ef90053c.txt"
BUILD_SCRIPT = INSTRUMENTS_DIR / "build_aq50.py"

DA, SA, SD, DD = 0, 1, 2, 3  # AQ options: Definitely agree, Slightly agree, Slightly disagree, Definitely disagree


@pytest.fixture(scope="module")
def shared_aq() -> dict:
    if not SHARED_AQ.is_file():
        pytest.skip(f"shared AQ definition not found at {SHARED_AQ}")
    return json.loads(SHARED_AQ.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def aq():
    return shipped_instrument("aq50")


@pytest.fixture(scope="module")
def sata():
    return shipped_instrument("sata_partial")


def reference_item_score(shared: dict, number: int, index: int) -> int:
    """The shared file's own rule: agree_scored items score 1 on options 0-1, disagree_scored on options 2-3."""
    if number in shared["agree_scored"]:
        return 1 if index in (DA, SA) else 0
    assert number in shared["disagree_scored"]
    return 1 if index in (SD, DD) else 0


def reference_scores(shared: dict, responses: dict[int, int]) -> tuple[int, dict[str, int]]:
    total = sum(reference_item_score(shared, n, i) for n, i in responses.items())
    subscales = {name: sum(reference_item_score(shared, n, responses[n]) for n in numbers)
                 for name, numbers in shared["subscales"].items()}
    return total, subscales


def all_items(shared: dict, index: int) -> dict[int, int]:
    return {item["number"]: index for item in shared["items"]}


# ------------------------------------------------------------------------------------------------- AQ-50


@pytest.mark.parametrize(("index", "expected_total"), [(DA, 24), (SA, 24), (SD, 26), (DD, 26)])
def test_aq_uniform_answers_score_the_shared_key(aq, shared_aq, index, expected_total):
    # Agreeing with everything scores the agree_scored items (24), disagreeing the disagree_scored ones (26).
    assert len(shared_aq["agree_scored"]) == 24 and len(shared_aq["disagree_scored"]) == 26
    responses = all_items(shared_aq, index)
    score = score_responses(aq, responses)
    ref_total, ref_subscales = reference_scores(shared_aq, responses)
    assert score.total == expected_total == ref_total
    agreeing = index in (DA, SA)
    scored = set(shared_aq["agree_scored"] if agreeing else shared_aq["disagree_scored"])
    expected_subscales = {name: len(scored & set(numbers)) for name, numbers in shared_aq["subscales"].items()}
    assert dict(score.subscales) == expected_subscales == ref_subscales
    assert score.complete and score.n_answered == score.n_items == 50


def test_aq_mixed_pattern_hand_computed(aq, shared_aq):
    # Items 1-10 Definitely agree, 11-20 Slightly agree, 21-30 Slightly disagree, 31-40 Definitely disagree,
    # 41-50 Definitely agree. So agree_scored items in 1-20 and 41-50 score, disagree_scored items in 21-40 score.
    responses = {n: [DA, SA, SD, DD, DA][(n - 1) // 10] for n in range(1, 51)}
    # agree_scored in 1-20:  2,4,5,6,7,9,12,13,16,18,19,20            = 12
    # agree_scored in 41-50: 41,42,43,45,46                            =  5
    # disagree_scored in 21-40: 24,25,27,28,29,30,31,32,34,36,37,38,40 = 13
    # total = 12 + 5 + 13 = 30 -> elevated (26-31)
    expected_subscales = {
        # 1 D- 11 D- 13 A+ 15 D- 22 A- 36 D+ 44 D- 45 A+ 47 D- 48 D-        (+ scores, - not) = 3
        "social_skill": 3,
        # 2 A+ 4 A+ 10 D- 16 A+ 25 D+ 32 D+ 34 D+ 37 D+ 43 A+ 46 A+          = 9
        "attention_switching": 9,
        # 5 A+ 6 A+ 9 A+ 12 A+ 19 A+ 23 A- 28 D+ 29 D+ 30 D+ 49 D-           = 8
        "attention_to_detail": 8,
        # 7 A+ 17 D- 18 A+ 26 A- 27 D+ 31 D+ 33 A- 35 A- 38 D+ 39 A-         = 5
        "communication": 5,
        # 3 D- 8 D- 14 D- 20 A+ 21 A- 24 D+ 40 D+ 41 A+ 42 A+ 50 D-          = 5
        "imagination": 5,
    }  # 3 + 9 + 8 + 5 + 5 = 30, the total again
    score = score_responses(aq, responses)
    assert score.total == 30
    assert score.tier == "elevated (26–31)"
    assert dict(score.subscales) == expected_subscales
    assert reference_scores(shared_aq, responses) == (30, expected_subscales)


def test_aq_random_patterns_match_the_shared_key(aq, shared_aq):
    rng = random.Random(20240601)
    for _ in range(200):
        responses = {n: rng.randrange(4) for n in range(1, 51)}
        score = score_responses(aq, responses)
        total, subscales = reference_scores(shared_aq, responses)
        assert score.total == total
        assert dict(score.subscales) == subscales


def responses_with_total(shared: dict, k: int) -> dict[int, int]:
    """Items 1..k answered so that they score, the rest so that they do not."""
    agree = set(shared["agree_scored"])
    return {n: (DA if n in agree else DD) if n <= k else (DD if n in agree else DA) for n in range(1, 51)}


@pytest.mark.parametrize(("total", "tier"), [
    (0, "below screening threshold (< 26)"),
    (25, "below screening threshold (< 26)"),
    (26, "elevated (26–31)"),
    (31, "elevated (26–31)"),
    (32, "clinical range (≥ 32)"),
    (50, "clinical range (≥ 32)"),
])
def test_aq_tier_boundaries(aq, shared_aq, total, tier):
    responses = responses_with_total(shared_aq, total)
    assert reference_scores(shared_aq, responses)[0] == total
    score = score_responses(aq, responses)
    assert (score.total, score.tier) == (total, tier)


def test_shipped_aq_is_what_the_build_script_produces(shared_aq):
    build = runpy.run_path(str(BUILD_SCRIPT), run_name="build_aq50")  # not "__main__": does not write
    expected = build["build"](shared_aq)
    shipped_text = (INSTRUMENTS_DIR / "aq50.json").read_text(encoding="utf-8")
    assert json.loads(shipped_text) == expected
    assert shipped_text == build["render"](expected)


def test_shipped_aq_copies_the_shared_file(aq, shared_aq):
    assert [(i.number, i.text) for i in aq.items] == [(i["number"], i["text"]) for i in shared_aq["items"]]
    assert aq.response_options == tuple(shared_aq["response_options"])
    assert aq.source == shared_aq["source"]
    assert aq.licence_note == shared_aq["licence_note"]
    assert dict(aq.cutoffs) == shared_aq["cutoffs"]
    assert {k: list(v) for k, v in aq.subscales.items()} == shared_aq["subscales"]
    assert {i.number for i in aq.items if i.key == "agree"} == set(shared_aq["agree_scored"])
    assert {i.number for i in aq.items if i.key == "disagree"} == set(shared_aq["disagree_scored"])
    assert dict(aq.keys) == {"agree": (1, 1, 0, 0), "disagree": (0, 0, 1, 1)}
    assert aq.total == "all" and aq.total_range == (0, 50)
    assert not aq.partial


# ------------------------------------------------------------------------------------------------- partial SATA


def test_partial_sata_is_labelled_partial(sata):
    assert sata.partial is True
    assert sata.name == "SATA (partial: 5 published items, demo only)"
    assert sata.tiers == ()  # Figure 2's tiers assume 26 items (26-104)
    assert "not public" in sata.notes and "our assumption" in sata.notes and "inferred from item wording" in sata.notes
    assert "Flood, Bulgrin & Morgan (2013)" in sata.source and "Hanel & Shah (2020)" in sata.source
    assert sata.response_options == ("Strongly disagree", "Disagree", "Agree", "Strongly agree")


def test_partial_sata_holds_only_published_items(sata):
    if not SEED_000.is_file():
        pytest.skip(f"seed 000 not found at {SEED_000}")
    appendix = SEED_000.read_text(encoding="utf-8").split("### A.1 SATA", 1)[1].split("### A.2 AQ", 1)[0]
    readme = (SHARED / "instruments" / "README.md").read_text(encoding="utf-8")
    quoted_by_seed = [f"- {line}" for line in (i.text for i in sata.items[:4])]
    assert all(line in appendix.splitlines() for line in quoted_by_seed)
    assert f'"{sata.items[4].text}"' in " ".join(readme.split())  # quoted by Hanel & Shah (2020), per the README
    assert len(sata.items) == 5


def test_partial_sata_reverse_keying_and_range(sata):
    keys = {i.number: i.key for i in sata.items}
    assert keys == {1: "reverse", 2: "forward", 3: "reverse", 4: "reverse", 5: "reverse"}
    assert dict(sata.keys) == {"forward": (1, 2, 3, 4), "reverse": (4, 3, 2, 1)}
    assert sata.total_range == (5, 20)
    # Strongly disagree with everything: 4 negative items x 4 + university x 1 = 17
    assert score_responses(sata, dict.fromkeys(range(1, 6), 0)).total == 17
    # Strongly agree with everything: 4 negative items x 1 + university x 4 = 8
    assert score_responses(sata, dict.fromkeys(range(1, 6), 3)).total == 8
    # Most positive attitude: reject the negative items, endorse university = 20; the reverse = 5
    most = score_responses(sata, {1: 0, 2: 3, 3: 0, 4: 0, 5: 0})
    least = score_responses(sata, {1: 3, 2: 0, 3: 3, 4: 3, 5: 3})
    assert (most.total, least.total) == (20, 5)
    assert most.tier is None and dict(most.subscales) == {}


def test_figure_2_tiers_are_rejected_on_the_partial_form(sata):
    data = sata.to_dict()
    data["tiers"] = [{"min": 26, "max": 49, "label": "negative"}, {"min": 50, "max": 73, "label": "moderate"},
                     {"min": 74, "max": 97, "label": "strongly positive"}, {"min": 98, "max": 104, "label": "ceiling"}]
    with pytest.raises(InstrumentError) as excinfo:
        load_instrument(data)
    assert excinfo.value.problems == [
        f"tiers[{i}]: range {t['min']}–{t['max']} lies outside the possible total 5–20"
        for i, t in enumerate(data["tiers"])
    ]


# ------------------------------------------------------------------------------------------------- scoring rules


def test_incomplete_responses_have_no_total(aq, shared_aq):
    responses = all_items(shared_aq, DA)
    del responses[13]  # item 13 is in social_skill only
    score = score_responses(aq, responses)
    assert (score.complete, score.total, score.tier) == (False, None, None)
    assert (score.n_answered, score.n_items) == (49, 50)
    assert score.subscales["social_skill"] is None
    # the other subscales are complete, so defined (all agree: count the agree_scored items in each)
    agree = set(shared_aq["agree_scored"])
    for name, numbers in shared_aq["subscales"].items():
        if name != "social_skill":
            assert score.subscales[name] == len(agree & set(numbers))
    assert 13 not in score.item_scores and score.item_scores[2] == 1


def test_none_counts_as_unanswered_and_empty_responses(aq):
    score = score_responses(aq, {1: None, 2: DA})
    assert (score.n_answered, score.complete, score.total) == (1, False, None)
    empty = score_responses(aq, {})
    assert (empty.n_answered, empty.total, empty.tier) == (0, None, None)
    assert set(empty.subscales.values()) == {None}


@pytest.mark.parametrize(("responses", "message"), [
    ({1: 4}, "item 1: response index 4 out of range 0–3 (4 options)"),
    ({1: -1}, "item 1: response index -1 out of range 0–3 (4 options)"),
    ({1: "2"}, "item 1: response index '2' is not an int"),
    ({1: 1.0}, "item 1: response index 1.0 is not an int"),
    ({1: True}, "item 1: response index True is not an int"),
    ({51: 0}, "unknown item number 51 (not an item of 'aq50')"),
    ({0: 0}, "unknown item number 0"),
    ({"1": 0}, "item number '1' is not an int"),
])
def test_bad_responses_raise(aq, responses, message):
    with pytest.raises(ValueError, match="invalid responses for instrument 'aq50'") as excinfo:
        score_responses(aq, responses)
    assert message in str(excinfo.value)


def test_every_bad_response_is_reported(aq):
    with pytest.raises(ValueError, match=r"^invalid responses for instrument 'aq50': ") as excinfo:
        score_responses(aq, {1: 9, 2: 0, 77: 1})
    assert "item 1: response index 9" in str(excinfo.value) and "unknown item number 77" in str(excinfo.value)


def test_numpy_integers_are_accepted(aq):
    np = pytest.importorskip("numpy")
    assert score_responses(aq, {np.int64(n): np.int64(DA) for n in range(1, 51)}).total == 24


# ------------------------------------------------------------------------------------------------- validation


def minimal() -> dict:
    return {
        "slug": "demo",
        "name": "Demo",
        "version": "1",
        "source": "Test fixture, not a published scale",
        "licence_note": "",
        "partial": False,
        "notes": "",
        "response_options": ["No", "Yes"],
        "keys": {"forward": [0, 1], "reverse": [1, 0]},
        "items": [{"number": 1, "text": "A", "key": "forward"}, {"number": 2, "text": "B", "key": "reverse"},
                  {"number": 3, "text": "C", "key": "forward"}],
        "subscales": {"ab": [1, 2]},
        "total": {"items": "all"},
        "tiers": [{"min": 0, "max": 1, "label": "low"}, {"min": 2, "max": 3, "label": "high"}],
        "cutoffs": {"2": "high"},
    }


def problems_of(data) -> list[str]:
    with pytest.raises(InstrumentError) as excinfo:
        load_instrument(data)
    assert str(excinfo.value).count("\n- ") == len(excinfo.value.problems)
    return excinfo.value.problems


def test_minimal_instrument_loads_and_scores():
    demo = load_instrument(minimal())
    score = score_responses(demo, {1: 1, 2: 0, 3: 1})
    assert (score.total, score.tier, dict(score.subscales)) == (3, "high", {"ab": 2})
    assert load_instrument({k: v for k, v in minimal().items() if k not in ("tiers", "cutoffs")}).tiers == ()


def test_several_problems_are_reported_at_once_with_paths():
    data = minimal()
    del data["version"]
    data["keys"]["reverse"] = [1, 0, 0]
    data["items"][1]["key"] = "foo"
    data["items"][2]["number"] = 1
    data["subscales"]["ab"] = [1, 9]
    data["tiers"][1]["min"] = 1
    data["partial"] = "no"
    data["colour"] = "red"
    assert problems_of(data) == [
        "version: missing field",
        "colour: unknown field",
        "partial: expected true or false, got 'no'",
        "keys.reverse: 3 scores for 2 response options",
        "items[1].key: unknown key 'foo'",
        "items[2].number: duplicate item number 1 (also items[0])",
        "tiers[1]: overlaps tiers[0] (1–3 and 0–1)",
    ]  # subscale items are not checked against a list of items with a duplicate number


def test_subscale_and_total_items_must_exist():
    data = minimal()
    data["subscales"] = {"ab": [1, 9], "empty": [], "twice": [2, 2]}
    data["total"] = {"items": [1, 4]}
    assert problems_of(data) == [
        "subscales.ab[1]: item 9 does not exist",
        "subscales.empty: no items",
        "subscales.twice[1]: item 2 listed twice",
        "total.items[1]: item 4 does not exist",
    ]


def test_missing_fields_and_empty_items():
    assert problems_of({"items": []}) == [f"{name}: missing field" for name in (
        "slug", "name", "version", "source", "licence_note", "partial", "notes", "response_options", "keys",
        "subscales", "total")] + ["items: no items"]


@pytest.mark.parametrize(("change", "problem"), [
    (lambda d: d["items"][0].pop("text"), "items[0].text: missing field"),
    (lambda d: d["items"][0].update(number=0), "items[0].number: expected an int ≥ 1, got 0"),
    (lambda d: d["items"][0].update(number="1"), "items[0].number: expected an int ≥ 1, got '1'"),
    (lambda d: d["items"][0].update(text=" "), "items[0].text: must not be empty"),
    (lambda d: d["items"][0].update(reverse=True), "items[0].reverse: unknown field"),
    (lambda d: d["keys"]["forward"].__setitem__(1, "1"), "keys.forward[1]: expected a number, got '1'"),
    (lambda d: d.update(keys={}), "keys: no keys"),
    (lambda d: d.update(response_options=["Only"]), "response_options: at least 2 options needed, got 1"),
    (lambda d: d.update(response_options=["No", "No"]), "response_options[1]: repeats option 'No'"),
    (lambda d: d.update(slug="Demo Scale"), "slug: 'Demo Scale' is not a slug (lower-case letters, digits, '_' and '-')"),
    (lambda d: d.update(name=""), "name: must not be empty"),
    (lambda d: d.update(total={"items": "some"}), "total.items: expected \"all\" or a list of item numbers, got 'some'"),
    (lambda d: d.update(total={}), "total.items: missing field"),
    (lambda d: d["tiers"][0].update(min=2, max=1), "tiers[0]: min 2 is above max 1"),
    (lambda d: d["tiers"][0].pop("label"), "tiers[0].label: missing field"),
    (lambda d: d["tiers"].append({"min": 1, "max": 1, "label": "x"}), "tiers[2]: overlaps tiers[0] (1–1 and 0–1)"),
    (lambda d: d.update(cutoffs={"high": "x"}), "cutoffs.high: threshold 'high' is not a number"),
    (lambda d: d.update(subscales=[1, 2]), "subscales: expected an object (name → item numbers), got list"),
])
def test_each_problem_names_its_path(change, problem):
    data = minimal()
    change(data)
    assert problem in problems_of(data)


def test_root_must_be_an_object():
    assert problems_of([1, 2]) == ["(root): expected an object, got list"]


def test_parse_instrument_reports_bad_json_and_repeated_keys():
    with pytest.raises(InstrumentError, match=r"\(json\): not valid JSON"):
        parse_instrument("{not json", origin="upload.json")
    text = json.dumps(minimal())
    repeated = text.replace('"subscales": {"ab": [1, 2]}', '"subscales": {"ab": [1, 2], "ab": [3]}')
    assert repeated != text
    with pytest.raises(InstrumentError) as excinfo:
        parse_instrument(repeated)
    assert excinfo.value.problems == ["(json): key 'ab' appears twice in one object"]
    with pytest.raises(InstrumentError, match=r"upload\.json"):
        parse_instrument(json.dumps({**minimal(), "items": []}), origin="upload.json")
    assert parse_instrument(text.encode()) == load_instrument(minimal())


def test_instrument_is_immutable():
    demo = load_instrument(minimal())
    with pytest.raises(dataclasses.FrozenInstanceError):
        demo.name = "x"
    with pytest.raises(TypeError):
        demo.keys["forward"] = (1, 1)
    assert demo.item(2).key == "reverse"
    with pytest.raises(KeyError):
        demo.item(9)


# ------------------------------------------------------------------------------------------------- content hash


PINNED_HASH = "e52520ea389c83e444227fbafec2616e7808d5a936dc8dfbc10992ed0799967f"


def test_content_hash_is_stable():
    demo = load_instrument(minimal())
    # pinned: a change of canonical form would silently orphan every recorded score
    assert demo.content_hash == PINNED_HASH
    reordered = json.loads(json.dumps(minimal(), indent=4, sort_keys=True))
    reordered["keys"] = dict(reversed(list(reordered["keys"].items())))
    assert load_instrument(reordered).content_hash == demo.content_hash
    assert load_instrument(demo.to_dict()).content_hash == demo.content_hash
    as_floats = minimal()
    as_floats["keys"]["forward"] = [0.0, 1.0]
    assert load_instrument(as_floats).content_hash == demo.content_hash
    assert hash(demo) == hash(load_instrument(minimal()))



@pytest.mark.parametrize("change", [
    lambda d: d["items"][0].update(text="A."),
    lambda d: d["items"][0].update(key="reverse"),
    lambda d: d["items"].reverse(),
    lambda d: d["keys"].update(forward=[0, 2]),
    lambda d: d["tiers"][0].update(label="lower"),
    lambda d: d.update(version="2"),
])
def test_content_hash_changes_with_the_content(change):
    data = minimal()
    changed = copy.deepcopy(data)
    change(changed)
    assert load_instrument(changed).content_hash != load_instrument(data).content_hash


def test_score_records_the_content_hash(aq):
    assert score_responses(aq, {}).content_hash == aq.content_hash


# ------------------------------------------------------------------------------------------------- shipped files


def test_shipped_instruments():
    shipped = {i.slug: i for i in shipped_instruments()}
    assert set(shipped) == {"aq50", "sata_partial"}
    assert instrument_path("aq50") == INSTRUMENTS_DIR / "aq50.json"
    assert read_instrument(instrument_path("sata_partial")) == shipped["sata_partial"]
    with pytest.raises(FileNotFoundError, match="shipped: aq50, sata_partial"):
        instrument_path("sata")
    with pytest.raises(ValueError, match=r"'\.\./aq50' is not an instrument slug"):
        instrument_path("../aq50")
