"""The admin's launch forms (Audits → Add): each offers only the models its paradigm can ask, disables the
conditions the chosen study cannot run, lets a counterfactual audit ask a subset of its tasks, previews the requests
it will send (the count is the number the launch creates), and a launched audit opens its dashboard."""
from __future__ import annotations

import re

import pytest

from auditapp.engine import endpoints, launch_preview, preparation, registry
from auditapp.llm_clients import ModelInfo
from auditapp.models import Audit, AuditRequest, Corpus, LLMEndpoint, LLMReply
from auditapp.paradigms.classification import services as classification_services
from auditapp.paradigms.counterfactual.tasks import NAMES_TASKS, tasks_asked
from tests.factories import make_audit_study

pytestmark = pytest.mark.django_db

ADD = "/admin/auditapp/audit/add/"


@pytest.fixture
def chat() -> LLMEndpoint:
    return LLMEndpoint.objects.create(name="chat", base_url="http://127.0.0.1:9/v1", max_concurrency=4,
                                      listed_models=[{"name": name, "digest": "", "details": {}}
                                                     for name in ("model-a", "model-b")])


@pytest.fixture
def lexicons() -> LLMEndpoint:
    endpoint = LLMEndpoint.objects.create(name="lexicons", protocol="local", base_url="")
    endpoints.endpoint_list_models(endpoint)
    return endpoint


@pytest.fixture
def listed_only(monkeypatch):
    """The preparation reads each endpoint's models from its stored listing instead of asking its server."""
    def listing(endpoint):
        return [ModelInfo(name=entry["name"], digest=entry.get("digest") or "", details={})
                for entry in endpoint.listed_models]
    monkeypatch.setattr(preparation, "endpoint_list_models", listing)


def classification_form(study, *models, **changes) -> dict:
    return {"name": "launch", "study": study.id, "models": list(models), "params": "{}", "conditions": ["zs", "cot"],
            "replicates": 1, "seed": 3, "use_cache": "on", "error_budget": 0.2, "unparsed": "exclude",
            "n_resamples": 500, "parallel_tasks": 1, "evaluation_set": "all", **changes}


def names_form(*models, **changes) -> dict:
    return {"name": "launch", "corpus": "", "models": list(models), "params": "{}", "iterations": 2,
            "pairs_per_iteration": 30, "reference_group": "White", "alpha": 0.05, "seed": 4, "use_cache": "on",
            "error_budget": 0.2, "parallel_tasks": 1, **changes}


# ------------------------------------------------------------------------------------- models the paradigm can ask

@pytest.mark.parametrize("name", registry.PARADIGMS)
def test_each_launch_form_offers_the_kinds_its_registry_entry_accepts(name):
    paradigm = registry.get(name)
    assert paradigm.launch_form.accepts == paradigm.accepts


def test_a_classification_form_offers_chat_models_and_not_the_lexicon_scorers(staff_client, chat, lexicons):
    page = staff_client.get(ADD).content.decode()
    assert f'value="{chat.id}:model-a"' in page
    assert f'value="{lexicons.id}:vader"' not in page and f'value="{lexicons.id}:textblob"' not in page
    assert "This paradigm asks chat LLMs" in page
    for name in ("names", "word_association", "self_report"):
        page = staff_client.get(f"{ADD}?paradigm={name}").content.decode()
        assert f'value="{chat.id}:model-a"' in page and f'value="{lexicons.id}:vader"' not in page, name


def test_a_bits_form_offers_the_lexicon_scorers_and_chat_models(staff_client, chat, lexicons):
    page = staff_client.get(f"{ADD}?paradigm=bits").content.decode()
    assert f'value="{lexicons.id}:vader"' in page and f'value="{lexicons.id}:textblob"' in page
    assert f'value="{chat.id}:model-a"' in page
    assert "lexicons — vader (local scorers (VADER, TextBlob))" in page


def test_a_lexicon_scorer_posted_to_a_classification_form_is_refused(staff_client, chat, lexicons):
    study = make_audit_study(4, n_examples=2)
    response = staff_client.post(ADD, classification_form(study, f"{lexicons.id}:vader"))
    assert response.status_code == 200
    assert f"{lexicons.id}:vader is not one of the available choices" in response.content.decode()
    assert not Audit.objects.exists()


# ---------------------------------------------------------------------------- conditions the study cannot run

def checkbox(page: str, condition: str) -> str:
    return re.search(rf'<input type="checkbox" name="conditions" value="{condition}"[^>]*>', page).group(0)


def test_a_study_without_example_sets_shows_its_icl_conditions_disabled_with_the_reason(staff_client, chat):
    small = make_audit_study(4, n_examples=0)
    page = staff_client.get(f"{ADD}?study={small.id}").content.decode()
    for condition in ("icl_a", "icl_b"):
        box = checkbox(page, condition)
        assert "disabled" in box and "checked" not in box, box
        label = page[page.index(box):page.index("</label>", page.index(box))]
        assert f"cannot run: needs the study&#x27;s example set &#x27;{condition}&#x27;, which is empty" in label
    assert "checked" in checkbox(page, "zs") and "disabled" not in checkbox(page, "zs")
    # A study with both example sets: every condition ticked, none disabled.
    full = make_audit_study(4, n_examples=2)
    page = staff_client.get(f"{ADD}?study={full.id}").content.decode()
    boxes = [checkbox(page, condition) for condition in classification_services.CONDITIONS]
    assert len(boxes) == 7 and all("checked" in box and "disabled" not in box for box in boxes)
    assert "cannot run:" not in page


def test_an_icl_condition_on_a_small_study_is_refused_naming_it_and_why(staff_client, chat):
    small = make_audit_study(4, n_examples=0)
    response = staff_client.post(ADD, classification_form(small, f"{chat.id}:model-a",
                                                          conditions=["zs", "icl_a"]))
    page = response.content.decode()
    assert response.status_code == 200
    assert "condition icl_a needs the study&#x27;s example set &#x27;icl_a&#x27;, which is empty" in page
    assert not Audit.objects.exists()
    response = staff_client.post(ADD, classification_form(small, f"{chat.id}:model-a", conditions=["zs"]))
    assert response.status_code == 302


def test_the_launch_and_the_form_share_the_rule(chat):
    small, full = make_audit_study(4, n_examples=0), make_audit_study(4, n_examples=2)
    assert set(classification_services.conditions_unavailable(small)) == {"icl_a", "icl_b"}
    assert classification_services.conditions_unavailable(full) == {}
    assert classification_services.conditions_unavailable(small, conditions=["zs", "cot"]) == {}


# ------------------------------------------------------------------------------------------ a subset of tasks

def test_tasks_asked_keeps_the_material_order_and_names_unknown_slugs():
    assert tasks_asked(NAMES_TASKS, []) == (list(NAMES_TASKS), [])
    chosen, problems = tasks_asked(NAMES_TASKS, ["intelligent", "hireable"])
    assert [task.slug for task in chosen] == ["hireable", "intelligent"] and problems == []
    _, problems = tasks_asked(NAMES_TASKS, ["hireable", "astrologer"])
    assert len(problems) == 1 and problems[0].startswith("only_tasks: the material has no task 'astrologer'")


def test_a_names_audit_of_two_tasks_records_them_and_plans_only_them(staff_client, chat, listed_only):
    page = staff_client.get(f"{ADD}?paradigm=names").content.decode()
    assert 'name="only_tasks" value="hireable"' in page and "<label>Employability</label>" in page
    response = staff_client.post(f"{ADD}?paradigm=names",
                                 names_form(f"{chat.id}:model-a", only_tasks=["intelligent", "hireable"]))
    assert response.status_code == 302, response.content.decode()[-2000:]
    audit = Audit.objects.get()
    assert audit.design["only_tasks"] == ["intelligent", "hireable"]
    assert [task["slug"] for task in audit.design["tasks"]] == ["hireable", "intelligent"]
    preparation.audit_prepare(audit_id=audit.id)
    audit.refresh_from_db()
    assert audit.status == Audit.Status.RUNNING, audit.status_reason
    conditions = list(AuditRequest.objects.filter(audit=audit).values_list("condition", flat=True))
    assert sorted(set(conditions)) == ["hireable", "intelligent"] and len(conditions) == 2 * 2
    assert audit.manifest["design"]["only_tasks"] == ["intelligent", "hireable"]
    assert audit.manifest["design"]["tasks"] == ["hireable", "intelligent"]


def test_a_task_the_material_does_not_have_is_refused_by_the_api(api_client, chat):
    response = api_client.post("/api/audits/", {
        "paradigm": "dialect", "name": "subset", "models": [{"endpoint": chat.id, "model": "model-a"}],
        "iterations": 1, "only_tasks": ["toxic", "astrologer"]}, format="json")
    assert response.status_code == 400 and "the material has no task 'astrologer'" in str(response.data)
    assert not Audit.objects.exists()
    response = api_client.post("/api/audits/", {
        "paradigm": "dialect", "name": "subset", "models": [{"endpoint": chat.id, "model": "model-a"}],
        "iterations": 1, "only_tasks": ["toxic"]}, format="json")
    assert response.status_code == 201, response.data
    assert Audit.objects.get().design["only_tasks"] == ["toxic"]


# --------------------------------------------------------------------------------------------------- the preview

def preview_then_launch(client, url: str, form: dict) -> tuple[dict, Audit]:
    """Preview the form (nothing stored), then launch what was previewed; the preview's counts by model name and the
    audit."""
    response = client.post(url, {**form, "_preview": "Preview"})
    assert response.status_code == 200, response.content.decode()[-2000:]
    preview = response.context["launch_preview"]
    assert not Audit.objects.exists() and not Corpus.objects.exists(), "a preview stores nothing"
    page = response.content.decode()
    assert f'<td id="launch-preview-total">{preview.total:,}</td>' in page
    response = client.post(url, {**form, "_save": "Launch audit", "_previewed": response.context[
        "launch_preview_digest"]})
    assert response.status_code == 302, response.content.decode()[-2000:]
    return {model.name: model.requests for model in preview.models}, Audit.objects.get()


def created_requests(audit: Audit) -> dict[str, int]:
    preparation.audit_prepare(audit_id=audit.id)
    audit.refresh_from_db()
    assert audit.status == Audit.Status.RUNNING, audit.status_reason
    names = audit.model_names()
    counts: dict[str, int] = {}
    for model_id in AuditRequest.objects.filter(audit=audit).values_list("audit_model_id", flat=True):
        counts[names[model_id]] = counts.get(names[model_id], 0) + 1
    assert audit.n_requests == sum(counts.values())
    return counts


def test_a_classification_preview_counts_the_requests_the_launch_creates(staff_client, chat, listed_only):
    study = make_audit_study(7, n_examples=2)
    form = classification_form(study, f"{chat.id}:model-a", f"{chat.id}:model-b", conditions=["zs", "icl_a", "cot"],
                               replicates=2, evaluation_set="all", sample=5)
    previewed, audit = preview_then_launch(staff_client, ADD, form)
    # 5 sampled items × 3 conditions × 2 replicates per model.
    assert previewed == {"model-a": 30, "model-b": 30}
    assert created_requests(audit) == previewed


def test_a_names_preview_counts_the_requests_the_launch_creates(staff_client, chat, listed_only):
    form = names_form(f"{chat.id}:model-a", f"{chat.id}:model-b", only_tasks=["hireable", "credible", "competent"],
                      iterations=3)
    previewed, audit = preview_then_launch(staff_client, f"{ADD}?paradigm=names", form)
    assert previewed == {"model-a": 9, "model-b": 9}
    assert created_requests(audit) == previewed


def test_the_default_names_preview_says_3900_requests_per_model(staff_client, chat):
    response = staff_client.post(f"{ADD}?paradigm=names", {**names_form(f"{chat.id}:model-a", iterations=100),
                                                           "_preview": "Preview"})
    preview = response.context["launch_preview"]
    assert [model.requests for model in preview.models] == [39 * 100]
    page = response.content.decode()
    assert '<td class="launch-preview-requests">3,900</td>' in page
    # No reply from the endpoint yet and no rate limit: no estimate, and the page says why.
    assert "Estimated sending time: <strong>unknown</strong>" in page
    assert "it has answered no request yet and has no rate limit" in page


def test_a_rate_limit_gives_the_preview_a_floor_of_the_sending_time(staff_client, chat):
    chat.requests_per_minute = 60
    chat.save()
    response = staff_client.post(f"{ADD}?paradigm=names", {
        **names_form(f"{chat.id}:model-a", only_tasks=["hireable"], iterations=100), "_preview": "Preview"})
    estimate = response.context["launch_preview"].estimate
    assert estimate.seconds == 100 and estimate.floor_only
    assert "at least about 2 minutes" in response.content.decode()


def test_the_preview_finds_stored_replies_and_times_the_endpoint_by_its_latency(staff_client, chat, listed_only):
    form = names_form(f"{chat.id}:model-a", only_tasks=["hireable"], iterations=2)
    staff_client.post(f"{ADD}?paradigm=names", form)
    earlier = Audit.objects.get()
    preparation.audit_prepare(audit_id=earlier.id)
    first = AuditRequest.objects.filter(audit=earlier).order_by("id").first()
    reply = LLMReply.objects.create(key=first.key, text='{"i": 1, "y": 0}', latency_ms=2000, attempts=1)
    AuditRequest.objects.filter(pk=first.pk).update(reply=reply, state=AuditRequest.State.ANSWERED)
    response = staff_client.post(f"{ADD}?paradigm=names", {**form, "name": "again", "_preview": "Preview"})
    preview = response.context["launch_preview"]
    # The same two requests, one of them already answered: the cache takes it.
    assert [(model.requests, model.cached) for model in preview.models] == [(2, 1)]
    # The one request to send, 4 at a time, 2 s each: 0.5 s.
    assert preview.estimate.seconds == pytest.approx(0.5) and not preview.estimate.floor_only
    assert "4 at a time, 2.00 s each" in response.content.decode()


def test_a_preview_past_its_limit_says_more_than_and_gives_floors(staff_client, chat, monkeypatch):
    monkeypatch.setattr(launch_preview, "counted_limit", lambda: 5)
    response = staff_client.post(f"{ADD}?paradigm=names", {
        **names_form(f"{chat.id}:model-a", only_tasks=["hireable", "credible"], iterations=3), "_preview": "Preview"})
    preview = response.context["launch_preview"]
    assert not preview.complete and preview.total == 5 and preview.estimate.floor_only
    page = response.content.decode()
    assert '<td id="launch-preview-total">more than 5</td>' in page and "More than 5 requests" in page
    assert "not looked up" in page


def test_launching_changed_options_previews_them_again(staff_client, chat):
    form = names_form(f"{chat.id}:model-a", only_tasks=["hireable"])
    response = staff_client.post(f"{ADD}?paradigm=names", {**form, "_preview": "Preview"})
    digest = response.context["launch_preview_digest"]
    response = staff_client.post(f"{ADD}?paradigm=names", {**form, "iterations": 5, "_save": "Launch audit",
                                                          "_previewed": digest})
    assert response.status_code == 200 and not Audit.objects.exists()
    assert response.context["launch_preview"].total == 5
    assert "The options changed since the last preview" in response.content.decode()


def test_a_preview_of_an_invalid_form_shows_its_errors_and_no_count(staff_client, chat):
    response = staff_client.post(f"{ADD}?paradigm=names", {**names_form(f"{chat.id}:model-a",
                                                                         reference_group="Martian"),
                                                            "_preview": "Preview"})
    assert response.status_code == 200 and "Martian" in response.content.decode()
    assert "launch_preview" not in response.context and not Corpus.objects.exists()


@pytest.mark.parametrize("paradigm", registry.PARADIGMS)
@pytest.mark.parametrize(("field", "value"), [("seed", -1), ("parallel_tasks", 0), ("parallel_tasks", 33),
                                              ("replicates", 0)])
def test_every_launch_form_states_the_apis_bounds_on_the_shared_settings(paradigm, field, value):
    from auditapp.engine.launch import ENGINE_BOUNDS

    form_class = registry.get(paradigm).launch_form
    if field not in form_class.base_fields:
        pytest.skip(f"the {paradigm} form has no {field}")
    form = form_class(data={field: value})
    form.is_valid()
    assert field in form.errors, (paradigm, field, value)
    low, high = ENGINE_BOUNDS[field]
    assert form.fields[field].widget.attrs["min"] == low and form.fields[field].widget.attrs["max"] == high


def test_a_model_the_endpoint_does_not_list_is_refused_at_launch_naming_what_it_lists(api_client, chat):
    study = make_audit_study(4)
    response = api_client.post("/api/audits/", {"study": study.id, "name": "typo", "conditions": ["zs"],
                                                "models": [{"endpoint": chat.id, "model": "modle-a"}]}, format="json")
    assert response.status_code == 400
    assert (f"endpoint 'chat' does not list model 'modle-a' (it lists model-a, model-b); if the model was added "
            f"since, list its models again (GET /api/endpoints/{chat.id}/models/)") in response.json()["detail"]
    assert not Audit.objects.exists()
    # An endpoint never listed is asked at the preparation, as before.
    unlisted = LLMEndpoint.objects.create(name="unlisted", base_url="http://127.0.0.1:9/v1")
    response = api_client.post("/api/audits/", {"study": study.id, "name": "later", "conditions": ["zs"],
                                                "models": [{"endpoint": unlisted.id, "model": "modle-a"}]},
                               format="json")
    assert response.status_code == 201, response.json()


def test_a_negative_seed_is_refused_by_the_api_before_anything_is_sent(api_client, chat):
    study = make_audit_study(4)
    response = api_client.post("/api/audits/", {"study": study.id, "name": "edge", "seed": -5, "conditions": ["zs"],
                                                "models": [{"endpoint": chat.id, "model": "model-a"}]},
                               format="json")
    assert response.status_code == 400 and "seed" in response.json()
    assert not Audit.objects.exists()


# ----------------------------------------------------------------------------------------- after the launch

def test_a_launched_audit_opens_its_dashboard_and_the_list_shows_its_progress(staff_client, chat, listed_only):
    response = staff_client.post(f"{ADD}?paradigm=names", names_form(f"{chat.id}:model-a", only_tasks=["hireable"]))
    audit = Audit.objects.get()
    assert response.status_code == 302 and response.url == f"/audits/{audit.id}/dashboard/"
    assert staff_client.get(response.url).status_code == 200
    listing = staff_client.get("/admin/auditapp/audit/").content.decode()
    assert "not planned yet" in listing and f'href="/audits/{audit.id}/dashboard/"' in listing
    preparation.audit_prepare(audit_id=audit.id)
    AuditRequest.objects.filter(pk=AuditRequest.objects.filter(audit=audit).first().pk).update(
        state=AuditRequest.State.ANSWERED)
    listing = staff_client.get("/admin/auditapp/audit/").content.decode()
    assert '<progress max="2" value="1" aria-label="finished requests"></progress> 1 of 2 (50%)' in listing
