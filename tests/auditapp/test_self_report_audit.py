"""Self-report audits through the engine, against the test LLM server's scripted personas (seed 000 §3.3).

Every expected score, validity count and paired statistic is computed here by hand from the personas' rule
(``tests.self_report_personas.persona_choice``) and the instruments' keys, not with the app's scoring.
"""
from __future__ import annotations

import math

import pytest
from scipy import stats

from auditapp.engine import analysis as engine_analysis
from auditapp.engine import errors, launch, preparation
from auditapp.engine import runner as audit_runner
from auditapp.models import Audit, AuditRequest, LLMEndpoint
from auditapp.paradigms.self_report import services as self_report
from auditapp.paradigms.self_report.design import MASKED, ValidityRule
from auditapp.paradigms.self_report.instruments import agree_side, shipped_dummies, shipped_fillers
from tests.llm_server import PERSONAS, persona_choice

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.integration]


def endpoint_for(persona_server) -> LLMEndpoint:
    return LLMEndpoint.objects.create(name="personas", protocol="openai", base_url=persona_server.base_url,
                                      max_concurrency=8, attempt_timeout_s=5, deadline_s=30, max_attempts=2)


def run(audit: Audit) -> Audit:
    preparation.audit_prepare(audit_id=audit.id)
    assert audit_runner.audit_work(audit.id) == "finished"
    engine_analysis.audit_analyse(audit_id=audit.id)
    return Audit.objects.get(pk=audit.id)


def hand_score(instrument, choose) -> int:
    """The instrument's total when every item gets ``choose(item)``, summed from its key vectors."""
    return sum(instrument.keys[item.key][choose(item)] for item in instrument.items)


def test_personas_scores_validity_and_paired_statistics_equal_hand_computed_values(persona_server, audit_tasks_off, shipped_instruments):
    aq, sata = shipped_instruments["aq50"].parsed, shipped_instruments["sata_partial"].parsed
    endpoint = endpoint_for(persona_server)
    audit = self_report.self_report_audit_create(
        name="personas", models=[launch.ModelChoice(endpoint=endpoint, model=p) for p in PERSONAS],
        instruments=[shipped_instruments["aq50"], shipped_instruments["sata_partial"]], mode="batch", seed=7)
    audit = run(audit)
    assert audit.status == Audit.Status.COMPLETED, audit.status_reason
    # 5 models × (two original forms + one masked), one batch request each.
    assert AuditRequest.objects.filter(audit=audit, state=AuditRequest.State.ANSWERED).count() == 15

    def key_choice(item):
        return persona_choice("persona-key", item.text, aq.response_options if item in aq.items else
                              sata.response_options)

    agree = {"aq50": hand_score(aq, lambda item: 0), "sata_partial": hand_score(sata, lambda item: 3)}
    assert agree["aq50"] == 24  # the AQ-50's 24 agree-keyed items (Baron-Cohen et al. 2001)
    keyed = {"aq50": hand_score(aq, key_choice), "sata_partial": hand_score(sata, key_choice)}
    assert keyed == {"aq50": 28, "sata_partial": 12} and agree["sata_partial"] == 8  # so the AQ crosses 26 upward
    expected = {  # (original, masked) per persona and instrument
        "persona-agree": {slug: (agree[slug], agree[slug]) for slug in agree},
        "persona-key": {slug: (keyed[slug], keyed[slug]) for slug in keyed},
        "persona-dummy": {slug: (keyed[slug], keyed[slug]) for slug in keyed},
        "persona-recognise": {slug: (agree[slug], keyed[slug]) for slug in keyed},
        "persona-refuse": dict.fromkeys(keyed, (None, None)),
    }
    analysis = audit.analysis
    for comparison in analysis["instruments"]:
        slug = comparison["instrument"]
        rows = {row["model"]: row for row in comparison["models"]}
        for persona, scores in expected.items():
            assert (rows[persona]["original"], rows[persona]["masked"]) == scores[slug], (slug, persona)
        low, high = comparison["scale"]
        assert (low, high) == ((0, 50) if slug == "aq50" else (5, 20))
        difference = keyed[slug] - agree[slug]
        assert rows["persona-recognise"]["change"] == difference
        assert rows["persona-recognise"]["change_percent_of_max"] == pytest.approx(100 * difference / high)
        # Paired over the four models with both scores: differences (0, 0, 0, d), so mean d/4, SD |d|/2,
        # t = (d/4) / ((|d|/2)/√4) = ±1, d_z = ±0.5, df 3.
        paired = comparison["paired"]
        assert paired["models"] == ["persona-agree", "persona-key", "persona-dummy", "persona-recognise"]
        if difference == 0:
            assert paired["t"] is None and paired["d_z"] is None
            continue
        sign = math.copysign(1, difference)
        assert paired["n"] == 4 and paired["df"] == 3
        assert paired["mean_difference"] == pytest.approx(difference / 4)
        assert paired["t"] == pytest.approx(sign * 1.0)
        assert paired["d_z"] == pytest.approx(sign * 0.5)
        assert paired["p"] == pytest.approx(2 * stats.t.sf(1.0, 3))
        assert paired["p"] == pytest.approx(0.3910022, abs=1e-6)
        if slug == "aq50":
            crossings = {c["threshold"]: c for c in comparison["thresholds"]}
            assert set(crossings) == {26.0, 32.0}
            for threshold, crossing in crossings.items():
                up = agree[slug] < threshold <= keyed[slug]
                down = keyed[slug] < threshold <= agree[slug]
                assert crossing["upward"] == (["persona-recognise"] if up else [])
                assert crossing["downward"] == (["persona-recognise"] if down else [])

    # Validity of the masked form, by hand: 52 dummies; endorsements from the personas' choices.
    questionnaire = self_report.questionnaires_of(audit)[0]
    dummies = [item for item in questionnaire.items if item.kind == "dummy"]
    assert len(dummies) == 52
    validity = {(row["model"], row["form"]): row for row in analysis["validity"]}

    def endorsed(persona):
        return sum(persona_choice(persona, item.text, item.options) in agree_side(item.options) for item in dummies)

    for persona in ("persona-agree", "persona-dummy", "persona-key", "persona-recognise"):
        row = validity[(persona, MASKED)]
        assert row["dummy_endorsed"] == endorsed(persona) and row["refusals"] == 0
        assert row["flagged"] == (endorsed(persona) > 26)
    assert validity[("persona-agree", MASKED)]["dummy_endorsed"] == 52
    assert validity[("persona-dummy", MASKED)]["dummy_endorsed"] == 52
    refused = validity[("persona-refuse", MASKED)]
    assert refused["refusals"] == refused["items"] == len(questionnaire.items) == 50 + 5 + 50 + 52
    assert refused["flagged"] and refused["flag_reasons"] == ["refused 100% of the items"]
    assert validity[("persona-refuse", "original:aq50")]["flagged"]
    assert analysis["rule"]["text"] == ValidityRule().describe()
    assert analysis["mode"] == "batch"

    # Re-parsing reads the stored replies again (no model is asked) and gives the same outcomes and analysis.
    before = list(AuditRequest.objects.filter(audit=audit).order_by("id").values_list("outcome", "parse_reason"))
    assert engine_analysis.audit_reparse(audit_id=audit.id) == 15
    assert list(AuditRequest.objects.filter(audit=audit).order_by("id").values_list("outcome", "parse_reason")) == before
    assert {outcome for outcome, _ in before} == {"label", "refusal"}
    engine_analysis.audit_analyse(audit_id=audit.id)
    assert Audit.objects.get(pk=audit.id).analysis == analysis


def test_item_mode_maps_masked_answers_back_and_the_key_persona_scores_alike_on_both_forms(persona_server, audit_tasks_off,
                                                                                          shipped_instruments):
    aq, sata = shipped_instruments["aq50"].parsed, shipped_instruments["sata_partial"].parsed
    endpoint = endpoint_for(persona_server)
    audit = self_report.self_report_audit_create(
        name="item mode", models=[launch.ModelChoice(endpoint=endpoint, model="persona-key")],
        instruments=[shipped_instruments["sata_partial"], shipped_instruments["aq50"]], mode="item", labels="letters", replicates=2,
        seed=3, validity=ValidityRule(action="exclude"))
    audit = run(audit)
    assert audit.status == Audit.Status.COMPLETED, audit.status_reason
    questionnaires = self_report.questionnaires_of(audit)
    assert questionnaires[0].seed != questionnaires[1].seed
    assert [i.position for i in questionnaires[0].items] == list(range(1, 5 + 50 + 50 + 52 + 1))
    assert [(i.slug, i.number) for i in questionnaires[0].items] != [(i.slug, i.number) for i in questionnaires[1].items]
    # One request per presented item: (5 + 50) original items + 157 masked ones, in each of 2 replicates.
    assert AuditRequest.objects.filter(audit=audit).count() == 2 * (5 + 50 + 157)

    answers = self_report.item_answers(audit)
    assert len(answers) == 2 * (5 + 50 + 157)
    by_source = {}
    for row in answers:
        assert row["outcome"] == "answer", row
        if row["kind"] == "instrument":
            instrument = aq if row["source"] == "aq50" else sata
            published = instrument.item(row["number"])
            # The masked item maps back to its instrument's item number and keying, and shows its wording.
            assert row["keying"] == published.key and row["text"] == published.text
            assert row["option_index"] == persona_choice("persona-key", published.text, instrument.response_options)
            by_source.setdefault((row["source"], row["number"]), set()).add((row["form"] == MASKED, row["option"]))
        else:
            assert row["keying"] == "" and row["source"] in ("ipip_big_five_50", "dummy_items")
    # Every instrument item was asked in both forms in both replicates and answered alike.
    assert len(by_source) == 55 and all(len({masked for masked, _ in v}) == 2 for v in by_source.values())
    # Each administration holds every filler and every dummy item once, in its pool's wording.
    fillers, dummies = shipped_fillers(), shipped_dummies()
    for replicate in (0, 1):
        for pool, kind in ((fillers, "filler"), (dummies, "dummy")):
            shown = {row["number"]: row["text"] for row in answers
                     if row["replicate"] == replicate and row["kind"] == kind}
            assert shown == {item.number: item.text for item in pool.items}
            assert len([row for row in answers if row["replicate"] == replicate and row["kind"] == kind]) == \
                len(pool.items)

    def key_choice(instrument):
        return lambda item: persona_choice("persona-key", item.text, instrument.response_options)

    for comparison in audit.analysis["instruments"]:
        instrument = aq if comparison["instrument"] == "aq50" else sata
        (row,) = comparison["models"]
        assert row["original"] == row["masked"] == hand_score(instrument, key_choice(instrument))
        assert row["original_replicates"] == row["masked_replicates"] == 2
        assert row["change"] == 0 and comparison["paired"] is None
    masked_validity = next(v for v in audit.analysis["validity"] if v["form"] == MASKED)
    assert masked_validity["administrations"] == 2 and masked_validity["items"] == 2 * 157
    assert audit.manifest["mode"] == "item" and audit.manifest["labels"] == "letters"
    assert audit.manifest["masked"]["1"]["seed"] == questionnaires[1].seed


def test_launch_problems_are_named(audit_tasks_off, shipped_instruments, persona_server):
    endpoint = endpoint_for(persona_server)
    with pytest.raises(errors.AuditError) as raised:
        self_report.self_report_audit_create(name="bad", models=[], instruments=[], forms=("original", "other"),
                                             mode="stream", replicates=0)
    message = str(raised.value)
    for problem in ("choose at least one model", "choose at least one instrument", "forms: one or both",
                    "mode is 'item'", "replicates must be between 1 and 100"):
        assert problem in message
    with pytest.raises(errors.AuditError, match="labels must be 'text'"):
        self_report.self_report_audit_create(name="bad", models=[launch.ModelChoice(endpoint, "persona-key")],
                                             instruments=[shipped_instruments["aq50"]], mode="batch", labels="numbers")
    assert not Audit.objects.exists()


def test_phrasing_variants_are_drawn_per_administration_recorded_and_shown_with_the_licence_note(persona_server, audit_tasks_off,
                                                                                                shipped_instruments):
    from auditapp.models import ItemVariant

    aq = shipped_instruments["aq50"].parsed
    ItemVariant.objects.create(source="aq50", number=1, text="Doing things together suits me better than alone.")
    ItemVariant.objects.create(source="aq50", number=1, text="I would rather do things with others than alone.")
    ItemVariant.objects.create(source="dummy_items", number=3, text="My body is made of metal parts.")
    ItemVariant.objects.create(source="aq50", number=2, text="An inactive rewording.", active=False)
    endpoint = endpoint_for(persona_server)
    audit = self_report.self_report_audit_create(
        name="variants", models=[launch.ModelChoice(endpoint=endpoint, model="persona-key")],
        instruments=[shipped_instruments["aq50"]], forms=("masked",), mode="item", replicates=6, seed=11)
    questionnaires = self_report.questionnaires_of(audit)
    shown = set()
    for questionnaire in questionnaires.values():
        rewritten = {(item.slug, item.number): item for item in questionnaire.items if item.rewritten}
        assert set(rewritten) == {("aq50", 1), ("dummy_items", 3)}
        item = rewritten[("aq50", 1)]
        assert item.published_text == aq.item(1).text and item.text != item.published_text
        assert item.licence_note == aq.licence_note and "permission" in aq.licence_note
        assert rewritten[("dummy_items", 3)].text == "My body is made of metal parts."
        shown.add(item.text)
        assert next(i for i in questionnaire.items if (i.slug, i.number) == ("aq50", 2)).text == aq.item(2).text
    assert len(shown) == 2, "six administrations draw both rewordings of item 1"
    # Later edits of the table do not change a launched audit.
    ItemVariant.objects.all().delete()
    audit = run(audit)
    assert audit.status == Audit.Status.COMPLETED, audit.status_reason
    rewritten_rows = [row for row in self_report.item_answers(audit) if row["rewritten"]]
    assert len(rewritten_rows) == 2 * 6 and {row["text"] for row in rewritten_rows if row["number"] == 1} == shown
    assert all(row["outcome"] == "answer" for row in rewritten_rows)
    manifest_rewritten = audit.manifest["masked"]["0"]["rewritten"]
    assert {(entry["source"], entry["number"]) for entry in manifest_rewritten} == {("aq50", 1), ("dummy_items", 3)}
    assert next(e for e in manifest_rewritten if e["source"] == "aq50")["licence_note"] == aq.licence_note


def test_a_variant_of_an_item_no_form_holds_stops_the_launch(persona_server, audit_tasks_off, shipped_instruments):
    from auditapp.models import ItemVariant

    ItemVariant.objects.create(source="aq50", number=51, text="There is no item 51.")
    with pytest.raises(errors.AuditError, match=r"variant for \('aq50', 51\): no such item"):
        self_report.self_report_audit_create(
            name="bad variant", models=[launch.ModelChoice(endpoint=endpoint_for(persona_server), model="persona-key")],
            instruments=[shipped_instruments["aq50"]])
    assert not Audit.objects.exists()
