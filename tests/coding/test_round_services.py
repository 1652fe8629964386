"""Rounds drawn from audits (coding.round_services), the classification paradigm's explained replies, coders,
mappings, closing; and one round drawn from an audit run by the real engine against the test LLM server."""
from __future__ import annotations

import dataclasses
from collections import Counter

import pandas as pd
import pytest
from django.contrib.auth import get_user_model

from auditapp.engine import analysis, launch, preparation, registry
from auditapp.engine import runner as audit_runner
from auditapp.models import Audit, AuditItem, AuditRequest, LLMEndpoint, distinct_names
from auditapp.paradigms.classification import services as classification_services
from coding import round_services as services
from coding.codebook_services import codebook_save, codebook_spec
from coding.coding_services import coding_save
from coding.models import Coder, CodingRound, Excerpt, ExcerptCoding
from coding.sampling import proportional_allocation
from coding.selectors import round_analysis, round_codings
from tests.coding.round_support import (
    CONDITIONS,
    make_codebook,
    make_completed_audit,
    model_answer,
    weighted_truth,
)
from tests.factories import AUDIT_POSITIVE_WORDS, make_audit_study
from tests.llm_server import LLMServer

pytestmark = pytest.mark.usefixtures("audit_tasks_off")


def strata_counts(coding_round: CodingRound) -> dict[tuple[int, str], int]:
    return Counter(Excerpt.objects.filter(round=coding_round).values_list("request__audit_model_id", "condition"))


def test_explained_replies_are_the_labelled_explained_replies_read_in_one_query(audit, django_assert_num_queries):
    explained = registry.get("classification").explained_replies
    with django_assert_num_queries(1):
        frame = explained(audit)
    # 2 models × 3 conditions × 30 items, less item 1 (refusals) and item 2 (no explanation): 6 × 28.
    assert len(frame) == 6 * 28
    assert list(frame.columns) == ["request_id", "model", "model_name", "condition", "target", "preceding",
                                   "following", "label", "explanation", "reference_label", "majority_label"]
    assert set(frame.model_name) == {"Model A", "model-b"}, "the label, or the model's name when it has none"
    row = frame[frame.explanation.str.endswith("item 3: 1")].iloc[0]
    request = AuditRequest.objects.select_related("item").get(pk=row.request_id)
    truth = AuditItem.objects.get(audit=audit, item=request.item)
    assert (row.target, row.preceding, row.following) == (request.item.target, request.item.preceding,
                                                          request.item.following)
    assert (row.reference_label, row.majority_label) == (truth.weighted_label, truth.majority_label)


def test_a_round_snapshots_a_stratified_sample_whose_strata_equal_the_allocation(audit, lenses):
    coding_round = services.round_create(audit=audit, codebooks=[c.id for c in lenses], sample_size=40, seed=11)
    excerpts = list(coding_round.excerpts.select_related("request__item", "request__audit_model"))
    assert len(excerpts) == 40 and [e.position for e in excerpts] == list(range(40))
    # Six strata of 28 replies each: quotas 40/6 = 6⅔; floors 6 × 6 = 36, four seats to the first four (equal
    # remainders and sizes) → 7, 7, 7, 7, 6, 6 in the strata's order (model id, then condition).
    assert proportional_allocation([28] * 6, 40) == [7, 7, 7, 7, 6, 6]
    recorded = {(s["model"], s["condition"]): s["allocated"] for s in coding_round.draw["strata"]}
    assert strata_counts(coding_round) == recorded and sorted(recorded.values()) == [6, 6, 7, 7, 7, 7]
    assert all(s["eligible"] == 28 for s in coding_round.draw["strata"])
    assert [e.request_id for e in excerpts] == coding_round.draw["ids"]
    for excerpt in excerpts:  # the snapshot is the reply as stored
        request = excerpt.request
        assert (excerpt.target, excerpt.label, excerpt.explanation, excerpt.condition) == (
            request.item.target, request.label, request.explanation, request.condition)
        assert excerpt.model_name == request.audit_model.display_name
        assert excerpt.reference_label == weighted_truth(int(request.item.external_id[1:]))
    assert [lens.codebook_id for lens in coding_round.lenses.order_by("position")] == [c.id for c in lenses]
    assert coding_round.seed == 11 and coding_round.name == "Error analysis of recorded audit"


def test_disagree_takes_only_replies_that_differ_from_the_weighted_ground_truth(audit, lenses):
    no_truth = AuditItem.objects.get(audit=audit, item__external_id="a00005")
    AuditItem.objects.filter(pk=no_truth.pk).update(weighted_label=None)
    model_a = audit.models.get(model="model-a")
    frame = services.eligible_replies(audit=audit, eligible="disagree", models_included=[model_a.id])
    # Model A answers the majority rule, so it disagrees exactly on the items the weighted label flips: every 17th
    # item (0 and 17), less item 1 and 2 (not explained replies) → items 0 and 17, under each of 3 conditions.
    indices = [i for i in range(30) if i not in (1, 2, 5) and model_answer(0, i) != weighted_truth(i)]
    assert indices == [0, 17]
    assert len(frame) == 3 * len(indices)
    coding_round = services.round_create(audit=audit, codebooks=[lenses[0].id], eligible="disagree",
                                         models_included=[model_a.id], sample_size=6, seed=3)
    assert all(e.label != e.reference_label for e in coding_round.excerpts.all())
    # Model B answers 1 everywhere: it disagrees on every item whose weighted label is 0; item 5 (label 0 but no
    # weighted label now) is never eligible.
    everyone = services.eligible_replies(audit=audit, eligible="disagree")
    assert no_truth.item_id not in set(AuditRequest.objects.filter(pk__in=everyone.request_id)
                                       .values_list("item_id", flat=True))
    expected_b = [i for i in range(30) if i not in (1, 2, 5) and weighted_truth(i) == 0]
    assert len(everyone) == 3 * (len(indices) + len(expected_b))


def test_the_same_seed_rebuilds_the_same_sample(audit, lenses):
    first = services.round_create(audit=audit, codebooks=[lenses[0].id], sample_size=20, allocation="equal",
                                  conditions_included=["zs", "cot"], seed=99)
    again = services.round_create(audit=audit, codebooks=[lenses[0].id], sample_size=20, allocation="equal",
                                  conditions_included=["zs", "cot"], seed=99)
    other = services.round_create(audit=audit, codebooks=[lenses[0].id], sample_size=20, allocation="equal",
                                  conditions_included=["zs", "cot"], seed=100)
    ids = list(first.excerpts.values_list("request_id", flat=True))
    assert ids == list(again.excerpts.values_list("request_id", flat=True))
    assert ids != list(other.excerpts.values_list("request_id", flat=True))
    assert {condition for _, condition in strata_counts(first)} == {"zs", "cot"}
    assert services.round_verify(coding_round=first).matches
    AuditRequest.objects.filter(pk=ids[0]).update(outcome=AuditRequest.Outcome.UNPARSEABLE)  # a re-parse
    check = services.round_verify(coding_round=first)
    assert not check.matches and "differ" in check.detail


def test_a_round_without_a_seed_draws_one_and_records_it(audit, lenses):
    coding_round = services.round_create(audit=audit, codebooks=[lenses[0].id], sample_size=5)
    assert coding_round.draw["seed"] == coding_round.seed
    assert services.round_verify(coding_round=coding_round).matches


def test_every_problem_is_named_at_once_and_nothing_is_stored(audit, lenses):
    other_version = make_codebook("Thematic v2")
    other_version.lineage = lenses[0].lineage
    other_version.version = 2
    other_version.save()
    empty = make_codebook("Empty", ())
    with pytest.raises(services.RoundError) as raised:
        services.round_create(audit=audit, codebooks=[lenses[0].id, lenses[0].id, other_version.id, empty.id, 999999],
                              models_included=[424242], conditions_included=["icl_z"], allocation="random",
                              eligible="all", sample_size=0,
                              mappings=[services.MappingSpec("STEREOTYPES", (lenses[0].codes.first().id,))])
    problems = " | ".join(raised.value.problems)
    for expected in ("allocation must be one of proportional, equal", "eligible must be one of parsed, disagree",
                     "at least 1", "no model with id 424242", "no condition 'icl_z'", "repeated: " + str(lenses[0].id),
                     "no codebook with id 999999", "two versions of one codebook", f"codebook {empty.id}",
                     "at least two lenses"):
        assert expected in problems, expected
    assert not CodingRound.objects.exists() and not Excerpt.objects.exists()


def test_a_sample_larger_than_the_eligible_replies_is_refused(audit, lenses):
    with pytest.raises(services.RoundError, match=r"sample size 500 is larger than the 168 eligible replies"):
        services.round_create(audit=audit, codebooks=[lenses[0].id], sample_size=500)
    with pytest.raises(services.RoundError, match="1 to 6 lenses"):
        services.round_create(audit=audit, codebooks=[])
    assert not CodingRound.objects.exists()


@pytest.mark.parametrize("status", [Audit.Status.RUNNING, Audit.Status.PAUSED, Audit.Status.STOPPED,
                                    Audit.Status.FAILED])
def test_only_a_completed_audit_is_sampled(db, lenses, status):
    audit = make_completed_audit(6, status=status)
    with pytest.raises(services.RoundError, match="completed audit only"):
        services.round_create(audit=audit, codebooks=[lenses[0].id], sample_size=3)


def test_a_paradigm_without_explained_replies_is_refused(audit, lenses):
    Audit.objects.filter(pk=audit.pk).update(paradigm="self_report")
    audit.refresh_from_db()
    assert registry.get("self_report").explained_replies is None
    with pytest.raises(services.RoundError, match="gives no replies with a label and an explanation"):
        services.round_create(audit=audit, codebooks=[lenses[0].id], sample_size=3)


def test_coders_accounts_and_invited_names(audit, lenses, researcher):
    coding_round = services.round_create(audit=audit, codebooks=[c.id for c in lenses], sample_size=5, seed=1)
    first, second = coding_round.lenses.order_by("position")
    staff = researcher[0]
    account = services.coder_add(coding_round=coding_round, lens_id=first.id, user_id=staff.id)
    assert account.user == staff and account.name == "Coder 1", "an account coder is never named by username"
    outside = services.coder_add(coding_round=coding_round, lens_id=second.id, name="Analyst 2")
    assert outside.user is None and services.invite_path(outside) == f"/c/{outside.invite_token}/"
    participant = get_user_model().objects.create_user("nonstaff")
    with pytest.raises(services.RoundError) as raised:
        services.coder_add(coding_round=coding_round, lens_id=999999, user_id=participant.id, name="Analyst 2")
    problems = " | ".join(raised.value.problems)
    assert "no lens with id 999999" in problems and "not a researcher" in problems
    assert "already has a coder named 'Analyst 2'" in problems
    with pytest.raises(services.RoundError, match="already codes in this round"):
        services.coder_add(coding_round=coding_round, lens_id=second.id, user_id=staff.id, name="Again")
    with pytest.raises(services.RoundError, match="needs a name"):
        services.coder_add(coding_round=coding_round, lens_id=second.id)
    ExcerptCoding.objects.create(coder=outside, excerpt=coding_round.excerpts.first(), memo="started")
    with pytest.raises(services.RoundError, match="coded 1 excerpt"):
        services.coder_remove(coder=outside, by=None)
    services.coder_remove(coder=account, by=None)
    assert list(Coder.objects.filter(round=coding_round)) == [outside]


def test_close_and_reopen(audit, lenses):
    coding_round = services.round_create(audit=audit, codebooks=[lenses[0].id], sample_size=3, seed=1)
    closed_at = services.round_close(coding_round=coding_round, by=None).closed_at
    assert closed_at is not None
    assert services.round_close(coding_round=coding_round, by=None).closed_at == closed_at
    lens = coding_round.lenses.get()
    with pytest.raises(services.RoundError, match="closed"):
        services.coder_add(coding_round=coding_round, lens_id=lens.id, name="Late")
    assert services.round_reopen(coding_round=coding_round, by=None).closed_at is None
    assert CodingRound.objects.get(pk=coding_round.pk).closed_at is None


def test_mappings_join_codes_of_two_lenses_and_are_replaced(audit, lenses):
    thematic, linguistic = lenses
    stereotypes = [thematic.codes.get(name="STEREOTYPES").id, linguistic.codes.get(name="STEREOTYPES").id]
    coding_round = services.round_create(audit=audit, codebooks=[thematic.id, linguistic.id], sample_size=3,
                                         seed=1, mappings=[services.MappingSpec("Stereotypes", tuple(stereotypes))])
    mapping = coding_round.mappings.get()
    assert sorted(mapping.codes.values_list("id", flat=True)) == sorted(stereotypes)
    outsider = make_codebook("Not a lens").codes.first().id
    with pytest.raises(services.RoundError) as raised:
        services.mappings_replace(coding_round=coding_round, mappings=[
            services.MappingSpec("Wording", (thematic.codes.get(name="WORDING").id,
                                             thematic.codes.get(name="TONE").id)),
            services.MappingSpec("Other", (outsider, 123456789)),
            services.MappingSpec("", stereotypes)])
    problems = " | ".join(raised.value.problems)
    assert "'Wording' must join codes of at least two lenses" in problems
    assert "no code with id 123456789" in problems and f"code {outsider} is not in any" in problems
    assert "needs a name" in problems
    assert coding_round.mappings.get() == mapping, "nothing changed"
    replaced = services.mappings_replace(coding_round=coding_round, mappings=[
        services.MappingSpec("Identity", (thematic.codes.get(name="TONE").id, linguistic.codes.get(name="IFL").id))])
    assert [m.name for m in replaced] == ["Identity"] and coding_round.mappings.count() == 1
    assert services.mappings_replace(coding_round=coding_round, mappings=[]) == []


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_a_round_from_an_audit_run_by_the_engine_against_the_test_llm_server(audit_tasks_off):
    study = make_audit_study(24, n_examples=4)
    with LLMServer(latency=0.001, positive_words=AUDIT_POSITIVE_WORDS) as server:
        endpoint = LLMEndpoint.objects.create(name="test server", protocol="openai", base_url=server.base_url,
                                              max_concurrency=8, attempt_timeout_s=2.0, deadline_s=30)
        audit = classification_services.audit_create(
            study=study, name="engine audit", conditions=["zs", "cot"], n_resamples=100,
            models=[launch.ModelChoice(endpoint=endpoint, model="model-a"),
                    launch.ModelChoice(endpoint=endpoint, model="model-b")])
        preparation.audit_prepare(audit_id=audit.id)
        assert audit_runner.audit_work(audit.id) == "finished"
        analysis.audit_analyse(audit_id=audit.id)
    audit.refresh_from_db()
    assert audit.status == Audit.Status.COMPLETED, audit.status_reason
    thematic = make_codebook("Thematic")
    explained = AuditRequest.objects.filter(audit=audit, outcome="label").exclude(explanation="")
    disagreeing = [r for r in explained.select_related("item")
                   if r.label != AuditItem.objects.get(audit=audit, item=r.item).weighted_label]
    assert disagreeing, "the test server's rule disagrees with the weighted labels on some items"
    n = min(12, len(disagreeing))
    coding_round = services.round_create(audit=audit, codebooks=[thematic.id], eligible="disagree", sample_size=n,
                                         seed=5)
    assert coding_round.excerpts.count() == n
    assert set(coding_round.excerpts.values_list("request_id", flat=True)) <= {r.id for r in disagreeing}
    recorded = {(s["model"], s["condition"]): s["allocated"] for s in coding_round.draw["strata"] if s["allocated"]}
    assert strata_counts(coding_round) == recorded
    assert all(e.explanation and e.label != e.reference_label for e in coding_round.excerpts.all())
    assert services.round_verify(coding_round=coding_round).matches
    assert set(CONDITIONS) >= {c for _, c in recorded}


def test_two_audited_models_sharing_a_name_stay_two_strata_in_the_tables(db):
    """The same model under two parameter sets, neither labelled: the sample is drawn per audit model, and the
    by-model tables and the codings keep them apart (named with their audit model's id), not merged under one name."""
    audit = make_completed_audit(n_items=12)
    first, second = audit.models.order_by("position")
    first.model, first.label, first.params = "model-b", "", {"temperature": 1}
    first.save()
    codebook = make_codebook("Thematic")
    coding_round = services.round_create(audit=audit, codebooks=[codebook.id], sample_size=12, seed=5)
    coder = services.coder_add(coding_round=coding_round, lens_id=coding_round.lenses.get().id, name="ann")
    for excerpt in coding_round.excerpts.all():
        coding_save(coder=coder, excerpt_id=excerpt.id, code_ids=[], memo="", confirm=True)
    excerpts = round_codings(coding_round).excerpts
    per_model = excerpts.groupby("model").size().to_dict()
    assert set(per_model) == {f"model-b (audit model {first.id})", f"model-b (audit model {second.id})"}
    assert per_model == Counter(f"model-b (audit model {model})" for model in
                                Excerpt.objects.filter(round=coding_round).values_list("request__audit_model_id",
                                                                                       flat=True))
    [lens] = round_analysis(coding_round)["lenses"]
    assert sorted(lens["coders"][0]["by_model"]["levels"], key=lambda level: level["level"]) == sorted(
        ({"level": name, "n": n} for name, n in per_model.items()), key=lambda level: level["level"])
    # A name used by one audit model is left as it is.
    names = pd.Series([1, 1, 2]).map(distinct_names([(1, "A"), (2, "B")]))
    assert names.tolist() == ["A", "A", "B"]


def test_a_codebook_edited_while_a_round_is_drawn_is_checked_again_under_its_lock(audit, lenses, monkeypatch):
    """An in-place edit of a lens's codebook lands while the sample is drawn (the edit replaces the codes, so the
    mapped code is gone): the round is refused with the reason, and nothing is stored."""
    thematic, linguistic = lenses
    stereotypes = (thematic.codes.get(name="STEREOTYPES").id, linguistic.codes.get(name="STEREOTYPES").id)
    draw = services.sampling.stratified_sample

    def draw_while_edited(*args, **kwargs):
        spec = codebook_spec(thematic)
        codebook_save(codebook=thematic, spec=dataclasses.replace(spec, codes=tuple(reversed(spec.codes))))
        return draw(*args, **kwargs)

    monkeypatch.setattr(services.sampling, "stratified_sample", draw_while_edited)
    with pytest.raises(services.RoundError, match=f"{stereotypes[0]}"):
        services.round_create(audit=audit, codebooks=[thematic.id, linguistic.id], sample_size=3, seed=1,
                              mappings=[services.MappingSpec("Stereotypes", stereotypes)])
    assert not CodingRound.objects.exists() and not Excerpt.objects.exists()
