"""Evaluation sets of classification audits (which items are classified): which items an audit classifies (all, a stored
item set, the complement of the ICL examples, a list of ids), a seeded sample of n, the overlap check, the manifest; the
engine runs in one process against the test LLM server (as in test_audit_engine)."""
from __future__ import annotations

import hashlib

import pandas as pd
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from sklearn.metrics import accuracy_score, cohen_kappa_score, f1_score, precision_score, recall_score

from annotation.models import Item, ItemGroundTruth, ItemSetMember
from auditapp.engine import launch as engine_launch
from auditapp.models import Audit, AuditItem, AuditMetric, AuditRequest, Corpus, LLMEndpoint
from auditapp.paradigms.classification import evaluation
from auditapp.paradigms.classification import services as classification_services
from tests.auditapp.test_audit_engine import run_audit
from tests.factories import AUDIT_POSITIVE_WORDS, make_audit_study
from tests.llm_server import LLMServer

CHAT = "/v1/chat/completions"


# ------------------------------------------------------------------------------------------------ pure parts

def test_pasted_ids_split_on_lines_commas_and_tabs_once_each_in_order():
    assert evaluation.parse_item_ids("a2\r\na1, a3;;\n\t a2 \n\n") == ["a2", "a1", "a3"]
    assert evaluation.parse_item_ids(" \n ") == []


def test_a_sample_depends_only_on_the_set_n_and_the_seed():
    ids = [f"s{i:03d}" for i in range(300)]
    first = evaluation.seeded_sample(ids, 100, 7)
    assert len(first) == len(set(first)) == 100 and set(first) <= set(ids) and first == sorted(first)
    assert evaluation.seeded_sample(list(reversed(ids)) + ids[:5], 100, 7) == first, "order and repeats ignored"
    assert evaluation.seeded_sample(ids, 100, 8) != first
    assert evaluation.seeded_sample(ids, 100, -(2**63)) != first, "any 64-bit seed, negative too"
    assert evaluation.seeded_sample(ids, 300, 7) == sorted(ids)
    for n in (0, 301):
        with pytest.raises(ValueError, match=f"a sample of {n} items from a set of 300"):
            evaluation.seeded_sample(ids, n, 7)


def test_the_items_hash_is_the_sha256_of_the_sorted_ids_one_per_line():
    assert evaluation.item_ids_sha256(["b", "a", "c"]) == hashlib.sha256(b"a\nb\nc").hexdigest()


def test_the_overlap_problem_counts_each_set_and_names_a_few_ids():
    problem = evaluation.overlap_problem({"a1", "a2", "a3", "x"}, {"icl_a": {"a1", "a2"}, "icl_b": {"a2", "a3", "z"}})
    assert "3 items (2 in icl_a, 2 in icl_b; e.g. a1, a2, a3)" in problem and "allow_overlap" in problem
    assert evaluation.overlap_problem({"x"}, {"icl_a": {"a1"}}) is None
    assert evaluation.some_ids([f"i{k}" for k in range(8)]) == "i0, i1, i2, i3, i4 and 3 more"


# ------------------------------------------------------------------------------------------------ the engine

@pytest.fixture(scope="module")
def server():
    """A server without faults, so every request is answered once and counted once."""
    with LLMServer(latency=0.001, positive_words=AUDIT_POSITIVE_WORDS) as running:
        yield running


@pytest.fixture
def no_tasks(monkeypatch):
    for name in ("audit_prepare_task", "audit_work_task", "audit_analyse_task"):
        monkeypatch.setattr(f"tasks.audits.{name}.delay", lambda audit_id: None)


def endpoint_of(server) -> LLMEndpoint:
    return LLMEndpoint.objects.create(name="test server", protocol="openai", base_url=server.base_url,
                                      max_concurrency=16, attempt_timeout_s=2.0, deadline_s=30, max_attempts=2)


def members(study, set_name: str) -> set[int]:
    return set(ItemSetMember.objects.filter(study=study, set_name=set_name).values_list("item_id", flat=True))


def assert_metrics_equal_scikit_learn(audit: Audit) -> None:
    """Every stored metric equals scikit-learn on the audit's labels against its own items' references."""
    frame = pd.DataFrame(AuditRequest.objects.filter(audit=audit, outcome="label")
                         .values("audit_model_id", "condition", "item_id", "label"))
    truth = pd.DataFrame(audit.items.values("item_id", "weighted_label", "majority_label")).set_index("item_id")
    metrics = list(AuditMetric.objects.filter(audit=audit))
    assert metrics
    for metric in metrics:
        replicates = frame[(frame.audit_model_id == metric.audit_model_id) & (frame.condition == metric.condition)]
        # Replicates vote; a tie gives no prediction (mean 0.5).
        votes = replicates.groupby("item_id")["label"].mean()
        votes = votes[votes != 0.5]
        reference = truth.loc[votes.index, f"{metric.reference}_label"].to_numpy()
        predicted = votes.round().astype(int).to_numpy()
        assert metric.values["n"] == len(votes) and metric.values["n_items"] == len(truth)
        assert metric.values["kappa"] == pytest.approx(cohen_kappa_score(predicted, reference))
        assert metric.values["f1"] == pytest.approx(f1_score(reference, predicted))
        assert metric.values["precision"] == pytest.approx(precision_score(reference, predicted))
        assert metric.values["recall"] == pytest.approx(recall_score(reference, predicted))
        assert metric.values["accuracy"] == pytest.approx(accuracy_score(reference, predicted))


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_not_examples_sends_no_request_for_an_example_of_the_chosen_sets(server, no_tasks):
    study = make_audit_study(30, n_examples=5)
    icl_a, icl_b = members(study, "icl_a"), members(study, "icl_b")
    endpoint = endpoint_of(server)
    server.reset_stats()
    audit = classification_services.audit_create(
        study=study, name="not examples", conditions=["zs", "icl_a"], n_resamples=200,
        models=[engine_launch.ModelChoice(endpoint=endpoint, model="model-a"),
                engine_launch.ModelChoice(endpoint=endpoint, model="model-b")],
        evaluation=classification_services.EvaluationSet(kind="not_examples"))
    audit = run_audit(audit)

    assert audit.status == Audit.Status.COMPLETED, audit.status_reason
    asked = set(AuditRequest.objects.filter(audit=audit).values_list("item_id", flat=True))
    assert not asked & icl_a, "no request for an example of icl_a, the set the conditions use"
    # icl_b is no condition's example set here, so its items are evaluation items: 30 + 5.
    assert icl_b <= asked and len(asked) == 35
    assert AuditRequest.objects.filter(audit=audit).count() == audit.n_requests == 35 * 2 * 2
    assert server.stats()["by_path"][CHAT] == 35 * 2 * 2
    assert set(audit.items.values_list("item_id", flat=True)) == asked, "the snapshot holds only evaluation items"
    assert audit.corpus.n_units == 35
    assert_metrics_equal_scikit_learn(audit)

    record = audit.manifest["data"]["evaluation_set"]
    external = Item.objects.filter(pk__in=asked).values_list("external_id", flat=True)
    assert record["kind"] == "not_examples" and record["n"] == 35 and record["sample"] is None
    assert record["items_sha256"] == hashlib.sha256("\n".join(sorted(external)).encode()).hexdigest()


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_a_seeded_sample_of_100_sends_100_requests_per_condition_model_and_replicate(server, no_tasks):
    study = make_audit_study(160, n_examples=5)
    endpoint = endpoint_of(server)
    models = [engine_launch.ModelChoice(endpoint=endpoint, model="model-a"),
              engine_launch.ModelChoice(endpoint=endpoint, model="model-b")]
    pilot = classification_services.EvaluationSet(kind="not_examples", sample=100)
    server.reset_stats()
    audit = classification_services.audit_create(
        study=study, name="pilot", conditions=["zs", "cot", "icl_b"], models=models, replicates=2, seed=11,
        n_resamples=200, evaluation=pilot)
    audit = run_audit(audit)

    assert audit.status == Audit.Status.COMPLETED, audit.status_reason
    requests = AuditRequest.objects.filter(audit=audit)
    # 100 items × 3 conditions × 2 models × 2 replicates.
    assert requests.count() == audit.n_requests == server.stats()["by_path"][CHAT] == 1200
    sampled = set(audit.items.values_list("item_id", flat=True))
    assert len(sampled) == 100 and set(requests.values_list("item_id", flat=True)) == sampled
    assert not sampled & members(study, "icl_b")
    assert_metrics_equal_scikit_learn(audit)
    record = audit.manifest["data"]["evaluation_set"]
    assert (record["kind"], record["sample"], record["sample_seed"], record["n_set"], record["n"]) == (
        "not_examples", 100, 11, 165, 100)

    def sample_with(seed: int) -> set[int]:
        again = classification_services.audit_create(study=study, name=f"seed {seed}", conditions=["zs", "icl_b"],
                                                     models=models[:1], seed=seed, evaluation=pilot)
        return set(again.items.values_list("item_id", flat=True))

    assert sample_with(11) == sampled
    assert sample_with(12) != sampled


# ------------------------------------------------------------------------------------------------ launching

@pytest.fixture
def prepare_sent(monkeypatch) -> list:
    sent = []
    monkeypatch.setattr("tasks.audits.audit_prepare_task.delay", sent.append)
    return sent


@pytest.fixture
def study_with_sets(db):
    """12 evaluation items, icl_a and icl_b of 3 examples each, a test set high_aq of items 0–3 and two icl_a
    examples, and an attention check with a ground truth."""
    study = make_audit_study(12, n_examples=3)
    items = list(Item.objects.filter(study=study).order_by("position"))
    ItemSetMember.objects.bulk_create([ItemSetMember(study=study, set_name="high_aq", item=item, label=1)
                                       for item in items[:4] + items[12:14]])
    check = Item.objects.create(study=study, external_id="check", target="Choose 1.", attention_check_answer=1,
                                position=99)
    ItemGroundTruth.objects.create(item=check, n_labels=3, n_excluded=0, majority_label=1, majority_tie=False,
                                   n_weighted=3, weighted_score=1.0, weighted_label=1, weighted_tie=False)
    return study


@pytest.fixture
def endpoint(db) -> LLMEndpoint:
    return LLMEndpoint.objects.create(name="listed", base_url="http://127.0.0.1:9/v1",
                                      listed_models=[{"name": "m", "digest": None, "details": {}}])


def launch(api_client, study, endpoint, **body):
    return api_client.post("/api/audits/", {"study": study.id, "name": "launch", "conditions": ["zs", "icl_a"],
                                            "models": [{"endpoint": endpoint.id, "model": "m"}], **body},
                           format="json")


def external_ids(audit_id: int) -> list[str]:
    return sorted(AuditItem.objects.filter(audit_id=audit_id).values_list("item__external_id", flat=True))


def test_all_is_the_default_and_keeps_every_example_out(api_client, study_with_sets, endpoint, prepare_sent,
                                                        django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = launch(api_client, study_with_sets, endpoint, conditions=["zs"])
    assert response.status_code == 201, response.content
    assert external_ids(response.json()["id"]) == [f"a{i:05d}" for i in range(12)]
    assert Audit.objects.get().design["evaluation_set"]["kind"] == "all"


def test_a_stored_set_overlapping_the_chosen_examples_is_refused_unless_allowed(
        api_client, study_with_sets, endpoint, prepare_sent, django_capture_on_commit_callbacks):
    refused = launch(api_client, study_with_sets, endpoint, evaluation_set="item_set", item_set="high_aq")
    assert refused.status_code == 400
    detail = refused.json()["detail"]
    assert "overlaps the ICL examples" in detail and "2 items (2 in icl_a; e.g. a00012, a00013)" in detail
    assert not Audit.objects.exists() and not Corpus.objects.exists() and not prepare_sent

    # Without an ICL-A condition the same set does not overlap: the two examples are ordinary items.
    with django_capture_on_commit_callbacks(execute=True):
        plain = launch(api_client, study_with_sets, endpoint, conditions=["zs", "icl_b"], evaluation_set="item_set",
                       item_set="high_aq")
    assert plain.status_code == 201, plain.content
    assert external_ids(plain.json()["id"]) == ["a00000", "a00001", "a00002", "a00003", "a00012", "a00013"]

    with django_capture_on_commit_callbacks(execute=True):
        allowed = launch(api_client, study_with_sets, endpoint, evaluation_set="item_set", item_set="high_aq",
                         allow_overlap=True)
    assert allowed.status_code == 201, allowed.content
    record = Audit.objects.get(pk=allowed.json()["id"]).design["evaluation_set"]
    assert (record["kind"], record["name"], record["n_set"], record["n_overlap"], record["allow_overlap"]) == (
        "item_set", "high_aq", 6, 2, True)


def test_a_list_of_ids_is_the_evaluation_set_and_can_be_sampled(api_client, study_with_sets, endpoint,
                                                                prepare_sent, django_capture_on_commit_callbacks):
    listed = ["a00005", "a00001", "a00007", "a00001", "a00009", "a00010"]
    with django_capture_on_commit_callbacks(execute=True):
        response = launch(api_client, study_with_sets, endpoint, evaluation_set="items", item_ids=listed)
    assert response.status_code == 201, response.content
    assert external_ids(response.json()["id"]) == sorted(set(listed))
    with django_capture_on_commit_callbacks(execute=True):
        sampled = launch(api_client, study_with_sets, endpoint, evaluation_set="items", item_ids=listed, sample=3,
                         seed=5)
    assert sampled.status_code == 201, sampled.content
    assert external_ids(sampled.json()["id"]) == evaluation.seeded_sample(listed, 3, 5)


@pytest.mark.parametrize(("body", "named"), [
    ({"evaluation_set": "item_set", "item_set": "low_bias"}, "no item set 'low_bias'; its sets: high_aq, icl_a, icl_b"),
    ({"evaluation_set": "item_set"}, "needs item_set"),
    ({"evaluation_set": "items", "item_ids": ["a00001", "nope", "gone"]}, "2 ids are not items of study"),
    ({"evaluation_set": "items", "item_ids": ["a00001", "check"]}, "1 items have no ground truth or are attention "
                                                                 "checks: check"),
    ({"evaluation_set": "items"}, "needs item_ids"),
    ({"evaluation_set": "all", "item_ids": ["a00001"]}, "item_ids are read only with evaluation_set 'items'"),
    ({"evaluation_set": "not_examples", "sample": 16}, "16 items asked from an evaluation set of 15"),
    ({"sample": 13}, "13 items asked from an evaluation set of 12"),
])
def test_bad_evaluation_sets_are_a_400_naming_the_problem_with_nothing_stored(api_client, study_with_sets, endpoint,
                                                                             prepare_sent, body, named):
    response = launch(api_client, study_with_sets, endpoint, **body)
    assert response.status_code == 400
    assert named in response.json()["detail"]
    if "ids are not items" in named:
        assert "gone, nope" in response.json()["detail"]
    assert not Audit.objects.exists() and not Corpus.objects.exists() and not prepare_sent


@pytest.mark.parametrize(("body", "field"), [({"evaluation_set": "some"}, "evaluation_set"),
                                             ({"sample": 0}, "sample")])
def test_malformed_evaluation_fields_are_a_400_on_the_field(api_client, study_with_sets, endpoint, prepare_sent, body,
                                                           field):
    response = launch(api_client, study_with_sets, endpoint, **body)
    assert response.status_code == 400 and field in response.json()
    assert not Audit.objects.exists()


# ------------------------------------------------------------------------------------------------ the admin form

ADD = "/admin/auditapp/audit/add/"


def admin_form(study, endpoint, **changes) -> dict:
    return {"name": "from the admin", "study": study.id, "models": [f"{endpoint.id}:m"], "params": "{}",
            "conditions": ["zs", "icl_a"], "replicates": 1, "seed": 3, "use_cache": "on", "error_budget": 0.2,
            "unparsed": "exclude", "n_resamples": 500, "parallel_tasks": 1, **changes}


def test_the_admin_form_takes_pasted_and_uploaded_ids_and_a_sample(staff_client, study_with_sets, endpoint,
                                                                   prepare_sent):
    page = staff_client.get(ADD).content.decode()
    for field in ("evaluation_set", "item_set", "item_ids", "item_ids_file", "sample", "allow_overlap"):
        assert f'name="{field}"' in page, field
    assert 'enctype="multipart/form-data"' in page
    upload = SimpleUploadedFile("ids.txt", b"a00003\na00004\r\na00006\n")
    response = staff_client.post(ADD, admin_form(study_with_sets, endpoint, evaluation_set="items",
                                                 item_ids="a00001, a00002", item_ids_file=upload, sample=4))
    assert response.status_code == 302, response.content.decode()[-3000:]
    audit = Audit.objects.get(name="from the admin")
    assert external_ids(audit.id) == evaluation.seeded_sample(["a00001", "a00002", "a00003", "a00004", "a00006"], 4, 3)
    assert audit.design["evaluation_set"]["sample"] == 4


@pytest.mark.parametrize("order", ["label_first", "explanation_first"])
def test_the_admin_form_records_the_answer_order_chosen(staff_client, study_with_sets, endpoint, prepare_sent,
                                                        order):
    assert 'name="answer_order"' in staff_client.get(ADD).content.decode()
    response = staff_client.post(ADD, admin_form(study_with_sets, endpoint, answer_order=order))
    assert response.status_code == 302, response.content.decode()[-3000:]
    assert Audit.objects.get(name="from the admin").design["answer_order"] == order


def test_the_admin_form_names_an_overlap_and_stores_nothing(staff_client, study_with_sets, endpoint, prepare_sent):
    response = staff_client.post(ADD, admin_form(study_with_sets, endpoint, evaluation_set="item_set",
                                                 item_set="high_aq"))
    assert response.status_code == 200
    assert "overlaps the ICL examples of this audit" in response.content.decode()
    assert not Audit.objects.exists() and not Corpus.objects.exists()
    response = staff_client.post(ADD, admin_form(study_with_sets, endpoint, evaluation_set="item_set",
                                                 item_set="high_aq", allow_overlap="on"))
    assert response.status_code == 302, response.content.decode()[-3000:]
    assert len(external_ids(Audit.objects.get().id)) == 6


def test_a_list_of_thousands_of_ids_is_read_whole(api_client, endpoint, prepare_sent):
    study = make_audit_study(1200, n_examples=2)
    listed = [f"a{i:05d}" for i in range(1100)]
    response = launch(api_client, study, endpoint, conditions=["zs"], evaluation_set="items",
                      item_ids=[*listed, "missing-1"])
    assert response.status_code == 400 and "1 ids are not items of study" in response.json()["detail"]
    response = launch(api_client, study, endpoint, conditions=["zs"], evaluation_set="items", item_ids=listed)
    assert response.status_code == 201, response.content
    assert external_ids(response.json()["id"]) == listed


@pytest.mark.django_db
def test_a_recompute_that_redraws_icl_a_changes_no_prompt_and_shows_no_evaluated_item(server, no_tasks):
    """The examples are snapshot at launch: redrawing icl_a from the evaluated items (as a recompute after an
    import may) changes neither the examples shown, nor the request keys, nor the manifest's example items."""
    study = make_audit_study(20, n_examples=4)
    endpoint = endpoint_of(server)
    audit = classification_services.audit_create(
        study=study, name="snapshot", conditions=["zs", "icl_a"],
        models=[engine_launch.ModelChoice(endpoint=endpoint, model="model-a")],
        evaluation=classification_services.EvaluationSet(kind="not_examples"))
    launched_examples = sorted(ItemSetMember.objects.filter(study=study, set_name="icl_a")
                               .values_list("item_id", "label"))
    assert sorted(map(tuple, audit.conditions.get(condition="icl_a").examples)) == launched_examples
    assert audit.conditions.get(condition="zs").examples == []
    before = classification_services.ClassificationRequests(audit)
    keys = [request.key for request in before.requests()]

    evaluated = sorted(AuditItem.objects.filter(audit=audit).values_list("item_id", flat=True))
    ItemSetMember.objects.filter(study=study, set_name="icl_a").delete()
    ItemSetMember.objects.bulk_create([ItemSetMember(study=study, set_name="icl_a", item_id=item, label=0)
                                       for item in evaluated[:4]])

    after = classification_services.ClassificationRequests(audit)
    shown = sorted((e.item_id, e.label) for e in after.examples["icl_a"])
    assert shown == launched_examples
    assert not {item for item, _ in shown} & set(evaluated), "no evaluated item is an example"
    assert [request.key for request in after.requests()] == keys
    template = next(t for t in after.manifest()["templates"] if t["condition"] == "icl_a")
    assert template["example_items"] == sorted(str(item) for item, _ in launched_examples)
    assert template["examples_source"] == "snapshot at launch"


@pytest.mark.django_db
def test_an_audit_from_before_the_snapshot_reads_the_live_set_and_its_manifest_says_so(server, no_tasks):
    study = make_audit_study(10, n_examples=3)
    audit = classification_services.audit_create(
        study=study, name="legacy", conditions=["icl_a"],
        models=[engine_launch.ModelChoice(endpoint=endpoint_of(server), model="model-a")])
    audit.conditions.update(examples=None)
    ItemSetMember.objects.filter(study=study, set_name="icl_a").update(label=1)
    builder = classification_services.ClassificationRequests(audit)
    assert {e.label for e in builder.examples["icl_a"]} == {1}
    assert builder.manifest()["templates"][0]["examples_source"] == (
        "the live item set (audit created before example snapshots)")


def test_an_empty_example_set_is_refused_with_why_it_is_empty(api_client, study_with_sets, endpoint, prepare_sent):
    study = study_with_sets
    ItemSetMember.objects.filter(study=study, set_name__in=("icl_a", "high_aq")).delete()
    response = launch(api_client, study, endpoint, conditions=["zs", "icl_a"])
    assert response.status_code == 400
    detail = response.json()["detail"]
    assert ("condition icl_a needs the study's example set 'icl_a', which is empty: it is drawn from the high_aq test "
            "set (items every high-AQ annotator labelled alike, with enough labels each), which is empty too") in detail
    # A source test set that is all the analysis's evaluation set: the examples, which never overlap it, are none.
    ItemSetMember.objects.filter(study=study, set_name__in=("icl_b", "low_aq")).delete()
    ItemSetMember.objects.bulk_create([ItemSetMember(study=study, set_name="low_aq", item=item, label=0)
                                       for item in Item.objects.filter(study=study).order_by("position")[:3]])
    response = launch(api_client, study, endpoint, conditions=["icl_b"])
    assert response.status_code == 400
    assert "drawn from the low_aq test set, which has 3 items but gave none" in response.json()["detail"]
    assert not Audit.objects.exists() and not prepare_sent
