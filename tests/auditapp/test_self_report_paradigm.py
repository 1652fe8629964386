"""The self-report paradigm's pure parts (seed 000 §3.3, §4.4, Appendix A): item pools, the masked questionnaire's
mapping back and seeded order, requests, reply parsing, scoring through the instrument definitions, validity,
and the analysis checked against scipy."""
from __future__ import annotations

import math

import pytest
from scipy import stats

from auditapp.paradigms.self_report import instruments as sr
from psychometrics.instruments import score_responses, shipped_instrument

AQ = shipped_instrument("aq50")
SATA = shipped_instrument("sata_partial")
FILLERS = sr.shipped_fillers()
DUMMIES = sr.shipped_dummies()
AQ_OPTIONS = AQ.response_options  # Definitely agree, Slightly agree, Slightly disagree, Definitely disagree
SATA_OPTIONS = SATA.response_options  # Strongly disagree, Disagree, Agree, Strongly agree


def masked(seed: int = 7, **kwargs) -> sr.MaskedQuestionnaire:
    return sr.build_masked_questionnaire([SATA, AQ], seed=seed, fillers=FILLERS, dummies=DUMMIES, **kwargs)


# ---------------------------------------------------------------------------------------------- item pools


def test_ipip_filler_pool_is_the_50_big_five_markers_in_published_order():
    assert FILLERS.slug == "ipip_big_five_50" and "public domain" in FILLERS.licence_note.lower()
    assert [item.number for item in FILLERS.items] == list(range(1, 51))
    factors = ["Extraversion", "Agreeableness", "Conscientiousness", "Emotional Stability", "Intellect/Imagination"]
    assert all(item.factor == factors[(item.number - 1) % 5] for item in FILLERS.items)
    keyed = {(f, k): sum(1 for i in FILLERS.items if (i.factor, i.keying) == (f, k)) for f in factors for k in "+-"}
    assert keyed == {("Extraversion", "+"): 5, ("Extraversion", "-"): 5, ("Agreeableness", "+"): 6,
                     ("Agreeableness", "-"): 4, ("Conscientiousness", "+"): 6, ("Conscientiousness", "-"): 4,
                     ("Emotional Stability", "+"): 2, ("Emotional Stability", "-"): 8,
                     ("Intellect/Imagination", "+"): 7, ("Intellect/Imagination", "-"): 3}
    assert FILLERS.item(1).text == "Am the life of the party." and FILLERS.item(1).keying == "+"
    assert FILLERS.item(2).text == "Feel little concern for others." and FILLERS.item(2).keying == "-"
    assert FILLERS.item(19).text == "Seldom feel blue." and FILLERS.item(19).keying == "+"
    assert FILLERS.item(50).text == "Am full of ideas."


def test_dummy_items_are_52_distinct_first_person_statements_of_our_own():
    assert DUMMIES.source == "written for this product; not a published scale"
    assert len(DUMMIES.items) == 52 and len({item.text for item in DUMMIES.items}) == 52
    assert [item.number for item in DUMMIES.items] == list(range(1, 53))
    texts = {item.text for item in DUMMIES.items}
    assert {"I am a dishwasher.", "I have blue eyes.", "I ate breakfast this morning."} <= texts
    assert {item.category for item in DUMMIES.items} == {"body", "identity", "possessions", "places", "biography",
                                                         "sensations"}
    for item in DUMMIES.items:
        assert item.text.startswith(("I ", "My ")) and item.text.endswith(".")
        assert not {"autism", "autistic", "disab", "disorder"} & set(item.text.lower().split())


def test_item_pool_validation_lists_every_problem():
    with pytest.raises(ValueError, match=r"^invalid item pool:") as error:
        sr.load_item_pool({"slug": "x", "name": "x", "source": "x", "licence_note": "", "notes": "", "extra": 1,
                           "items": [{"number": 1, "text": "A."}, {"number": 1, "text": " ", "keying": "r"}]})
    message = str(error.value)
    assert "extra: unknown field" in message and "duplicate item number 1" in message
    assert "items[1].text" in message and "items[1].keying" in message


# ---------------------------------------------------------------------------------------------- masked form


def test_masked_questionnaire_maps_every_item_back_exactly():
    form = masked()
    assert [item.position for item in form.items] == list(range(1, 5 + 50 + 50 + 52 + 1))
    seen = {}
    for item in form.items:
        seen[(item.kind, item.slug, item.number)] = seen.get((item.kind, item.slug, item.number), 0) + 1
        if item.kind == "instrument":
            instrument = {"aq50": AQ, "sata_partial": SATA}[item.slug]
            source = instrument.item(item.number)
            assert item.key == source.key
            assert item.text == item.published_text == source.text
            assert item.options == instrument.response_options
        else:
            pool = FILLERS if item.kind == "filler" else DUMMIES
            assert item.slug == pool.slug and item.key is None
            assert item.text == item.published_text == pool.item(item.number).text
            assert item.options == SATA_OPTIONS, "fillers and dummies take the first instrument's options"
        assert not item.rewritten and item.licence_note == ""
    expected = ({("instrument", "aq50", i.number) for i in AQ.items}
                | {("instrument", "sata_partial", i.number) for i in SATA.items}
                | {("filler", FILLERS.slug, i.number) for i in FILLERS.items}
                | {("dummy", DUMMIES.slug, i.number) for i in DUMMIES.items})
    assert set(seen) == expected and set(seen.values()) == {1}


def test_order_is_deterministic_for_a_seed_and_differs_across_seeds():
    def order(seed):
        return [(i.kind, i.slug, i.number) for i in masked(seed).items]

    assert order(7) == order(7)
    assert len({tuple(order(seed)) for seed in range(5)}) == 5
    canonical = ([("instrument", "sata_partial", i.number) for i in SATA.items]
                 + [("instrument", "aq50", i.number) for i in AQ.items])
    assert order(7)[:55] != canonical, "items are shuffled, not laid out by instrument"


def test_variants_are_recorded_with_the_licence_note_and_unknown_targets_fail():
    variants = {("aq50", 5): "Small sounds often catch my attention when nobody else hears them.",
                (FILLERS.slug, 1): "I am the life of the party."}
    form = masked(variants=variants)
    rewritten = {(i.slug, i.number): i for i in form.items if i.rewritten}
    assert set(rewritten) == set(variants)
    aq5 = rewritten[("aq50", 5)]
    assert aq5.text == variants[("aq50", 5)] and aq5.published_text == AQ.item(5).text
    assert aq5.licence_note == AQ.licence_note and aq5.key == AQ.item(5).key
    assert rewritten[(FILLERS.slug, 1)].licence_note == FILLERS.licence_note
    assert [i.position for i in form.items] == [i.position for i in masked().items]
    with pytest.raises(ValueError, match=r"\('aq50', 51\): no such item"):
        masked(variants={("aq50", 51): "x"})


def test_other_options_and_build_errors():
    form = sr.build_masked_questionnaire([AQ, SATA], seed=1, fillers=FILLERS, dummies=DUMMIES)
    assert {i.options for i in form.items if i.kind != "instrument"} == {AQ_OPTIONS}
    assert {i.options for i in form.items if i.slug == "sata_partial"} == {SATA_OPTIONS}
    with pytest.raises(ValueError, match=r"^cannot build the masked questionnaire:") as error:
        sr.build_masked_questionnaire([AQ, AQ], seed=-1, fillers=FILLERS, dummies=DUMMIES,
                                      other_options=["Often", "Never"])
    message = str(error.value)
    assert "seed must be an int" in message and "slugs used twice: aq50" in message
    assert "cannot tell the agree side" in message


# ---------------------------------------------------------------------------------------------- requests


def test_original_item_requests_present_one_item_with_numbered_options():
    specs = sr.build_original_requests(AQ, "item")
    assert len(specs) == 50 and [s.unit_id for s in specs[:2]] == ["item:1", "item:2"]
    first = specs[0]
    assert first.positions == (1,) and first.options == (AQ_OPTIONS,) and first.labels == "numbers"
    assert len(first.messages) == 1 and first.messages[0]["role"] == "user"
    content = first.messages[0]["content"]
    assert f"Statement: {AQ.item(1).text}" in content
    assert "1. Definitely agree\n2. Slightly agree\n3. Slightly disagree\n4. Definitely disagree" in content
    assert "autis" not in content.lower() and "quotient" not in content.lower()
    titled = sr.build_original_requests(AQ, "item", labels="letters", title=AQ.name)[0].messages[0]["content"]
    assert titled.startswith(AQ.name + "\n\n") and "A. Definitely agree" in titled


def test_batch_requests_number_every_item_and_ask_for_n_colon_option():
    (spec,) = sr.build_original_requests(AQ, "batch")
    content = spec.messages[0]["content"]
    assert spec.unit_id == "batch" and spec.positions == tuple(range(1, 51)) and spec.labels == "text"
    assert f"\n1. {AQ.item(1).text}\n" in content and f"\n50. {AQ.item(50).text}\n" in content
    assert "Response options: Definitely agree; Slightly agree; Slightly disagree; Definitely disagree" in content
    assert '"n: option"' in content
    with pytest.raises(ValueError, match="a batch request writes options out: labels must be 'text'"):
        sr.build_original_requests(AQ, "batch", labels="numbers")
    with pytest.raises(ValueError, match="mode must be 'item' or 'batch', got 'page'"):
        sr.build_original_requests(AQ, "page")


def test_masked_requests_follow_the_order_and_give_each_item_its_own_options():
    form = masked()
    items = sr.build_masked_requests(form, "item")
    assert [s.positions[0] for s in items] == [i.position for i in form.items]
    assert all(form.items[s.positions[0] - 1].text in s.messages[0]["content"] for s in items)
    (batch,) = sr.build_masked_requests(form, "batch")
    content = batch.messages[0]["content"]
    aq_item = next(i for i in form.items if i.slug == "aq50")
    assert f"{aq_item.position}. {aq_item.text} (Options: {'; '.join(AQ_OPTIONS)})" in content
    assert batch.options == tuple(i.options for i in form.items)
    assert "quotient" not in content.lower() and "sata" not in content.lower(), "no instrument is named"


# ---------------------------------------------------------------------------------------------- parsing

ANSWER, REFUSAL, UNPARSEABLE = "answer", "refusal", "unparseable"

# (reply, options, labels, expected outcome, expected index, expected reason)
REPLIES = [
    # option text, case/punctuation-insensitive
    ("Slightly agree", AQ_OPTIONS, "numbers", ANSWER, 1, ""),
    ("**definitely DISAGREE.**", AQ_OPTIONS, "numbers", ANSWER, 3, ""),
    ("Slightly-agree", AQ_OPTIONS, "numbers", ANSWER, 1, ""),
    ("I would say I slightly agree with this statement.", AQ_OPTIONS, "numbers", ANSWER, 1, ""),
    # longest match wins: "Strongly agree" is not also "Agree"; "Disagree" is not "Agree"
    ("Strongly agree", SATA_OPTIONS, "numbers", ANSWER, 3, ""),
    ("Disagree.", SATA_OPTIONS, "numbers", ANSWER, 1, ""),
    ("Agree", SATA_OPTIONS, "numbers", ANSWER, 2, ""),
    # numbers as presented (1-based)
    ("2", AQ_OPTIONS, "numbers", ANSWER, 1, ""),
    ("**4**", AQ_OPTIONS, "numbers", ANSWER, 3, ""),
    ("2. Slightly agree", AQ_OPTIONS, "numbers", ANSWER, 1, ""),
    ("Answer: 3", AQ_OPTIONS, "numbers", ANSWER, 2, ""),
    ("Option 1 fits best.", AQ_OPTIONS, "numbers", ANSWER, 0, ""),
    ("The answer is: 4", AQ_OPTIONS, "numbers", ANSWER, 3, ""),
    ("My answer would be 2 because it fits.", AQ_OPTIONS, "numbers", ANSWER, 1, ""),
    ("2 people would agree.", AQ_OPTIONS, "numbers", UNPARSEABLE, None, "no answer"),
    ("5", AQ_OPTIONS, "numbers", UNPARSEABLE, None, "no answer"),
    ("2.5", AQ_OPTIONS, "numbers", UNPARSEABLE, None, "no answer"),
    ("2", AQ_OPTIONS, "text", UNPARSEABLE, None, "no answer"),
    # letters only when letters were presented
    ("B", AQ_OPTIONS, "letters", ANSWER, 1, ""),
    ("(d)", AQ_OPTIONS, "letters", ANSWER, 3, ""),
    ("C) Slightly disagree", AQ_OPTIONS, "letters", ANSWER, 2, ""),
    ("A good question. Slightly disagree.", AQ_OPTIONS, "letters", ANSWER, 2, ""),
    ("B", AQ_OPTIONS, "numbers", UNPARSEABLE, None, "no answer"),
    # a keyed answer wins over other mentions
    ("Definitely agree is too strong, and I don't definitely disagree.\nFinal answer: Slightly disagree",
     AQ_OPTIONS, "numbers", ANSWER, 2, ""),
    ("<think>Definitely agree? Or 4?</think>\nSlightly agree", AQ_OPTIONS, "numbers", ANSWER, 1, ""),
    # negation in the same phrase, not across punctuation
    ("I don't agree.", SATA_OPTIONS, "numbers", UNPARSEABLE, None, "no answer"),
    ("I often notice small sounds when others do not: Slightly agree", AQ_OPTIONS, "numbers", ANSWER, 1, ""),
    # conflicting answers
    ("Slightly agree or slightly disagree", AQ_OPTIONS, "numbers", UNPARSEABLE, None, "conflicting answers"),
    ("2 - Definitely agree", AQ_OPTIONS, "numbers", UNPARSEABLE, None, "conflicting answers"),
    ("Answer: 1\nAnswer: 4", AQ_OPTIONS, "numbers", UNPARSEABLE, None, "conflicting answers"),
    # refusals; a clear answer wins over refusal words
    ("I'm sorry, but I can't answer personal questions.", AQ_OPTIONS, "numbers", REFUSAL, None,
     "refusal: I'm sorry, but"),
    ("As an AI language model, I don't have personal experiences.", AQ_OPTIONS, "numbers", REFUSAL, None,
     "refusal: As an AI"),
    ("I don't have a body, so neither Definitely agree nor Slightly agree applies.", AQ_OPTIONS, "numbers", REFUSAL,
     None, "refusal: I don't have a body"),
    ("As an AI I don't have eyes, so: Definitely disagree.", AQ_OPTIONS, "numbers", ANSWER, 3, ""),
    # nothing
    ("", AQ_OPTIONS, "numbers", UNPARSEABLE, None, "empty reply"),
    (None, AQ_OPTIONS, "numbers", UNPARSEABLE, None, "empty reply"),
    ("   \n", AQ_OPTIONS, "numbers", UNPARSEABLE, None, "empty reply"),
    ("<think>Let me think about agreeing.", AQ_OPTIONS, "numbers", UNPARSEABLE, None, "empty reply"),
    ("Hmm, interesting.", AQ_OPTIONS, "numbers", UNPARSEABLE, None, "no answer"),
]


@pytest.mark.parametrize(("reply", "options", "labels", "outcome", "index", "reason"), REPLIES)
def test_parse_likert_reply(reply, options, labels, outcome, index, reason):
    assert sr.parse_likert_reply(reply, options, labels=labels) == sr.ParsedLikert(outcome, index, reason)


def test_parse_batch_reply():
    reply = ("Here are my answers:\n1: Slightly agree\n**2.** I prefer routines – Definitely disagree\n"
             "3) definitely agree\n3: Definitely agree\n4: 2\n5: Slightly agree\n5: Slightly disagree\n"
             "7: I can't answer this one.\n99: Slightly agree")
    parsed = sr.parse_batch_reply(reply, 8, AQ_OPTIONS)
    assert parsed[1] == sr.ParsedLikert(ANSWER, 1) and parsed[2] == sr.ParsedLikert(ANSWER, 3)
    assert parsed[3] == sr.ParsedLikert(ANSWER, 0)
    assert parsed[4] == sr.ParsedLikert(UNPARSEABLE, None, "no answer"), "options were not numbered in a batch"
    assert parsed[5] == sr.ParsedLikert(UNPARSEABLE, None, "conflicting answers")
    assert parsed[6] == parsed[8] == sr.ParsedLikert(UNPARSEABLE, None, "missing from reply")
    assert parsed[7].outcome == REFUSAL
    assert set(parsed) == set(range(1, 9))
    per_item = sr.parse_batch_reply("1: Agree\n2: Slightly agree", 2, [SATA_OPTIONS, AQ_OPTIONS])
    assert per_item == {1: sr.ParsedLikert(ANSWER, 2), 2: sr.ParsedLikert(ANSWER, 1)}
    refused = sr.parse_batch_reply("As an AI, I cannot complete personality questionnaires.", 3, AQ_OPTIONS)
    assert {p.outcome for p in refused.values()} == {REFUSAL}
    assert {p.reason for p in sr.parse_batch_reply("", 2, AQ_OPTIONS).values()} == {"empty reply"}
    with pytest.raises(ValueError, match="1 option lists for 2 items"):
        sr.parse_batch_reply("1: Agree", 2, [SATA_OPTIONS])


# ---------------------------------------------------------------------------------------------- scoring


def by_key(item: sr.FormItem) -> int:
    """A fixed-key persona: the option scoring highest under the item's key; fillers and dummies get option 0."""
    if item.kind != "instrument":
        return 0
    scores = {"aq50": AQ, "sata_partial": SATA}[item.slug].keys[item.key]
    return max(range(len(scores)), key=lambda i: scores[i])


@pytest.mark.parametrize("persona", [by_key, lambda item: 0, lambda item: 2, lambda item: item.number % 4])
def test_a_fixed_key_persona_scores_the_same_on_masked_and_original_forms(persona):
    form = masked()
    mapped = sr.score_masked(form, {item.position: persona(item) for item in form.items})
    for instrument in (AQ, SATA):
        original = sr.OriginalForm.of(instrument)
        on_original = sr.score_masked(original, {item.position: persona(item) for item in original.items})
        masked_score = score_responses(instrument, mapped.responses[instrument.slug])
        original_score = score_responses(instrument, on_original.responses[instrument.slug])
        assert masked_score.complete and masked_score.total == original_score.total
        assert masked_score.subscales == original_score.subscales
        assert masked_score.item_scores == original_score.item_scores
    if persona is by_key:
        assert score_responses(AQ, mapped.responses["aq50"]).total == 50
        assert score_responses(SATA, mapped.responses["sata_partial"]).total == 20


def test_replies_parsed_from_text_score_like_the_original():
    """The whole path: reply texts → parse → map back → score, masked (item mode) vs original (batch mode)."""
    form = masked(seed=3)
    persona = {("aq50", i.number): i.number % 4 for i in AQ.items}
    replies = {spec.positions[0]: spec.options[0][persona.get((item.slug, item.number), 0)]
               for spec, item in zip(sr.build_masked_requests(form, "item"), form.items, strict=True)}
    parsed = {pos: sr.parse_likert_reply(text, form.items[pos - 1].options) for pos, text in replies.items()}
    mapped = sr.score_masked(form, parsed)
    (batch,) = sr.build_original_requests(AQ, "batch")
    reply = "\n".join(f"{n}: {AQ_OPTIONS[persona[('aq50', n)]]}" for n in range(1, 51))
    original = sr.score_masked(sr.OriginalForm.of(AQ), sr.parse_batch_reply(reply, 50, batch.options))
    assert (score_responses(AQ, mapped.responses["aq50"]).total
            == score_responses(AQ, original.responses["aq50"]).total
            == sum(AQ.keys[i.key][i.number % 4] for i in AQ.items))


def test_dummy_endorsement_and_validity_counts():
    form = masked()

    def always(*labels):
        return {i.position: next(i.options.index(label) for label in labels if label in i.options) for i in form.items}

    agree_all = sr.score_masked(form, always("Strongly agree", "Definitely agree"))
    disagree_all = sr.score_masked(form, always("Strongly disagree", "Definitely disagree"))
    assert agree_all.validity == sr.Validity(dummy_items=52, dummy_answered=52, dummy_endorsed=52, refusals=0,
                                             unparseable=0, missing=0)
    assert disagree_all.validity.dummy_endorsed == 0 and disagree_all.validity.dummy_answered == 52

    dummies = [i for i in form.items if i.kind == "dummy"]
    answers = {i.position: 0 for i in form.items}
    answers[dummies[0].position] = sr.ParsedLikert(REFUSAL, None, "refusal: As an AI")
    answers[dummies[1].position] = sr.ParsedLikert(UNPARSEABLE, None, "no answer")
    answers[dummies[2].position] = None
    del answers[dummies[3].position]
    answers[dummies[4].position] = sr.ParsedLikert(ANSWER, 2)  # Agree
    validity = sr.score_masked(form, answers).validity
    assert validity == sr.Validity(dummy_items=52, dummy_answered=48, dummy_endorsed=1, refusals=1, unparseable=1,
                                   missing=2)
    aq_missing = sr.score_masked(form, {i.position: 0 for i in form.items if i.slug != "aq50" or i.number != 1})
    assert aq_missing.responses["aq50"][1] is None
    assert score_responses(AQ, aq_missing.responses["aq50"]).total is None
    with pytest.raises(ValueError, match=r"unknown position 999.*4 is not an option index 0–3"):
        sr.score_masked(form, {999: 0, 1: 4})


def test_agree_side_per_option_set():
    assert sr.agree_side(AQ_OPTIONS) == {0, 1}
    assert sr.agree_side(SATA_OPTIONS) == {2, 3}
    five = ["Strongly disagree", "Disagree", "Neither agree nor disagree", "Agree", "Strongly agree"]
    assert sr.agree_side(five) == {3, 4}
    ipip = ["Very Inaccurate", "Moderately Inaccurate", "Neither Inaccurate nor Accurate", "Moderately Accurate",
            "Very Accurate"]
    assert sr.agree_side(ipip) == {3, 4}
    assert sr.agree_side(["True", "False"]) == {0}
    with pytest.raises(ValueError, match=r"cannot tell the agree side of the options \['Never', 'Sometimes', 'Often'"):
        sr.agree_side(["Never", "Sometimes", "Often"])


# ---------------------------------------------------------------------------------------------- analysis


def test_paired_comparison_matches_scipy_and_a_hand_worked_d_z():
    original = [30.0, 28.0, 25.0, 40.0]
    masked_ = [31.0, 31.0, 27.0, 42.0]  # differences 1, 3, 2, 2: mean 2, SD sqrt(2/3)
    result = sr.paired_comparison(original, masked_)
    reference = stats.ttest_rel(masked_, original)
    assert result.n == 4 and result.df == 3 and result.mean_difference == pytest.approx(2.0)
    assert result.t == pytest.approx(reference.statistic) and result.p == pytest.approx(reference.pvalue)
    assert result.d_z == pytest.approx(2 / math.sqrt(2 / 3)) == pytest.approx(math.sqrt(6))
    assert result.t == pytest.approx(result.d_z * math.sqrt(4)), "t = d_z √n for paired samples"
    decline = sr.paired_comparison(masked_, original)
    assert decline.t == pytest.approx(-result.t) and decline.d_z == pytest.approx(-result.d_z)
    constant = sr.paired_comparison([1, 2, 3], [2, 3, 4])
    assert constant.mean_difference == 1 and math.isnan(constant.t) and math.isnan(constant.d_z)
    with pytest.raises(ValueError, match="original and masked must be paired lists of the same length"):
        sr.paired_comparison([1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match="a paired comparison needs at least two pairs"):
        sr.paired_comparison([1], [2])
    with pytest.raises(ValueError, match="scores must be finite numbers"):
        sr.paired_comparison([1, float("nan")], [2, 3])


def test_change_percent_of_max():
    assert sr.change_percent_of_max([20, 30], [25, 28], 0, 50) == pytest.approx([10.0, -4.0])
    assert sr.change_percent_of_max([80], [70], 26, 104) == pytest.approx([-1000 / 104])
    assert sr.change_percent_of_max([80], [70], 26, 104, relative_to="range") == pytest.approx([-1000 / 78])
    with pytest.raises(ValueError, match="outside the scale"):
        sr.change_percent_of_max([20], [51], 0, 50)


def test_threshold_crossings_in_each_direction():
    original = {"gpt-oss": 30, "deepseek": 31, "llama": 33, "gemma": 20, "qwen": 26}
    masked_ = {"gpt-oss": 33, "deepseek": 32, "llama": 29, "gemma": 26, "qwen": 25}
    crossings = sr.threshold_crossings(original, masked_, [26, 32])
    assert crossings[26] == sr.Crossings(26, upward=("gemma",), downward=("qwen",))
    assert crossings[32] == sr.Crossings(32, upward=("gpt-oss", "deepseek"), downward=("llama",))
    with pytest.raises(ValueError, match="models differ"):
        sr.threshold_crossings(original, {"gpt-oss": 1}, [26])
