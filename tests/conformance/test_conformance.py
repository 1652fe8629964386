"""Conformance of every registered paradigm (``registry.PARADIGMS``) to what the shared parts of the app expect of
it, as lm-evaluation-harness checks every task: one test per check and paradigm (ids are the paradigms' names),
the checks themselves in :mod:`tests.conformance.checks`, the launches in :mod:`tests.conformance.minimal_launches`.

1. the launch schema takes the minimal body and names the bad fields of a bad one;
2. the request builder: planned requests are the stored ones, every payload keys to its stored key, payloads and
   the manifest are JSON;
3. a refusal parses to a refusal or an unparseable reply with its reason, an empty reply to no answer;
4. the dashboard renders for a queued and for a completed audit, with the shared shell once (one header, the
   shared script) and no script drawing classification's charts unless it is classification's;
5. every named table answers JSON and CSV with the same rows;
6. the admin launch form takes the settings the API takes, and launches the same audit;
7. every setting the paradigm declares is a field of both, stating the declared bounds, choices, default and help,
   and both read each trial value (each bound and past it, each choice and another) alike;
8. the launch form offers the scorer kinds the registry entry accepts (``tests/auditapp/test_launch_forms.py``), and a
   launch preview counts, per model, the requests the preparation creates, storing nothing.

Checks 2–5 run on one small audit per paradigm, launched through the API and run to completion in this process
(prepare, work, analyse) against the test LLM server and the local scorers. A broken paradigm registered inside
a test shows that the checks fail; a toy paradigm that declares one setting more gets both its fields, and fails
check 7 once its form field is changed by hand.
"""
from __future__ import annotations

import dataclasses
from collections import Counter

import pytest

from auditapp.api.launch import settings_serializer
from auditapp.engine import analysis as engine_analysis
from auditapp.engine import endpoints, preparation, registry
from auditapp.engine import runner as audit_runner
from auditapp.engine.launch import ModelChoice
from auditapp.engine.launch_preview import launch_preview
from auditapp.engine.launch_settings import Setting
from auditapp.engine.planning import audit_request_key
from auditapp.engine.protocol import Judgment, Outcome, ParsedReply
from auditapp.launch_forms import launch_field_order, setting_form_field
from auditapp.models import Audit, LLMEndpoint
from auditapp.paradigms.bits.corpora import bits_corpus_generate
from auditapp.paradigms.classification import services as classification_services
from psychometrics.services import instruments_sync_shipped
from tests.conformance import checks
from tests.conformance.minimal_launches import (
    CHAT_MODELS,
    World,
    minimal_launch,
    run_body,
    small_bits_spec,
)
from tests.factories import make_audit_study
from tests.llm_server import LLMServer

NAMES = registry.PARADIGMS


def make_world(base_url: str, *, bits_corpus: bool = False) -> World:
    chat = LLMEndpoint.objects.create(name="chat", protocol="openai", base_url=base_url, max_concurrency=8,
                                      attempt_timeout_s=5, deadline_s=60, max_attempts=2,
                                      listed_models=[{"name": model, "digest": "", "details": {}}
                                                     for model in CHAT_MODELS])
    local = LLMEndpoint.objects.create(name="local", protocol="local", base_url="")
    endpoints.endpoint_list_models(local)
    classification_services.templates_sync_defaults()
    instruments = {instrument.slug: instrument for instrument in instruments_sync_shipped()}
    corpus = bits_corpus_generate(spec=small_bits_spec(), name="small") if bits_corpus else None
    return World(chat_endpoint=chat.id, local_endpoint=local.id, study=make_audit_study(6, n_examples=2).id,
                 instrument=instruments["aq50"].id, bits_corpus=corpus.id if corpus else None)


@pytest.fixture
def world(db) -> World:
    """Launches are only recorded: the chat endpoint is never asked."""
    return make_world("http://127.0.0.1:9")


@pytest.fixture(scope="module")
def server():
    with LLMServer(latency=0.0, models=CHAT_MODELS) as running:
        yield running


def test_every_registered_paradigm_has_a_minimal_launch_and_no_other_has():
    checks.check_minimal_launches(NAMES)


@pytest.mark.django_db
@pytest.mark.parametrize("name", NAMES)
def test_launch_schema_takes_the_minimal_body_and_names_the_bad_fields(name, api_client, world, audit_tasks_off):
    checks.check_launch_schema(registry.get(name), api_client, world)


@pytest.mark.django_db
@pytest.mark.parametrize("name", NAMES)
def test_dashboard_of_a_queued_audit_renders(name, api_client, staff_client, world, audit_tasks_off):
    paradigm = registry.get(name)
    audit = checks.check_launch_schema(paradigm, api_client, world)
    checks.check_dashboard(paradigm, staff_client, audit)


@pytest.mark.django_db
@pytest.mark.parametrize("name", NAMES)
def test_admin_launch_form_takes_what_the_api_takes(name, researcher, world, audit_tasks_off):
    checks.check_form_agrees_with_serializer(registry.get(name), world, researcher[0])


@pytest.mark.parametrize("name", NAMES)
def test_every_declared_setting_is_read_alike_by_the_api_and_the_admin_form(name):
    assert checks.check_settings_agree(registry.get(name)) == len(registry.get(name).settings) > 0


def _soft(failures: list[str], check, *args):
    try:
        return check(*args)
    except AssertionError as error:
        failures.append(f"{check.__name__}: {error}")
        return None


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("name", NAMES)
def test_an_audit_run_to_completion_conforms(name, server, api_client, staff_client, audit_tasks_off):
    """Checks 2–5 on one small audit of the paradigm: the builder and parser on the prepared audit, then (run and
    analysed) the builder again (later turns are keyed by now), the dashboard and the tables. Every check runs;
    the test fails naming each that failed."""
    paradigm = registry.get(name)
    world = make_world(server.base_url, bits_corpus=name == "bits")
    response = api_client.post("/api/audits/", run_body(name, world), format="json")
    assert response.status_code == 201, response.content
    audit_id = response.json()["id"]
    preparation.audit_prepare(audit_id=audit_id)
    audit = Audit.objects.get(pk=audit_id)
    assert audit.status == Audit.Status.RUNNING, audit.status_reason
    failures: list[str] = []
    _soft(failures, checks.check_request_builder, paradigm, audit)
    _soft(failures, checks.check_refusals_are_not_answers, paradigm, audit)

    assert audit_runner.audit_work(audit_id) == "finished"
    engine_analysis.audit_analyse(audit_id=audit_id)
    audit = Audit.objects.get(pk=audit_id)
    assert audit.status == Audit.Status.COMPLETED, audit.status_reason
    _soft(failures, checks.check_request_builder, paradigm, audit)
    _soft(failures, checks.check_dashboard, paradigm, staff_client, audit)
    _soft(failures, checks.check_tables, paradigm, api_client, audit)
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("name", NAMES)
def test_a_launch_preview_counts_the_requests_the_preparation_creates(name, server, researcher, audit_tasks_off):
    """The admin's preview (auditapp.engine.launch_preview) of a launch plans, per model, as many requests as the
    preparation of the same launch creates (later turns of a conversation included), and stores nothing."""
    paradigm = registry.get(name)
    world = make_world(server.base_url, bits_corpus=name == "bits")
    serializer = paradigm.launch_serializer(data=run_body(name, world))
    assert serializer.is_valid(), serializer.errors
    values = dict(serializer.validated_data)
    values.pop("structured_output")
    n_audits = Audit.objects.count()
    preview = launch_preview(lambda: paradigm.launch(values, created_by=researcher[0]))
    assert Audit.objects.count() == n_audits and preview.complete and preview.total > 0
    audit = paradigm.launch(values, created_by=researcher[0])
    preparation.audit_prepare(audit_id=audit.id)
    audit.refresh_from_db()
    assert audit.status == Audit.Status.RUNNING, audit.status_reason
    names = audit.model_names()
    created = Counter(names[model_id] for model_id in audit.requests.values_list("audit_model_id", flat=True))
    assert {model.name: model.requests for model in preview.models} == dict(created)


# ----------------------------------------------------------------------------- a paradigm that does not conform

class ToyRequests(classification_services.ClassificationRequests):
    """A classification builder with two bugs: ``key()`` forgets the replicate (``requests()`` keys rightly, so
    replicate 1's stored key is not what its payload keys to), and ``parse()`` reads any reply without a digit as
    the label 0 (a refusal becomes an answer)."""

    def requests(self):
        for planned in super().requests():
            yield dataclasses.replace(planned, key=audit_request_key(
                self.audit, planned.audit_model, self.payload(planned), planned.replicate))

    def key(self, audit_model, payload, replicate: int) -> str:
        return audit_request_key(self.audit, audit_model, payload, 0)

    def parse(self, request, text: str, finish_reason: str) -> ParsedReply:
        label = next((int(c) for c in text if c in "01"), 0)
        return ParsedReply(Outcome.LABEL, label, "", "first digit, else 0",
                           (Judgment(unit=str(request.item_id), outcome=Outcome.LABEL, label=label),))


@pytest.fixture
def toy(monkeypatch) -> registry.Paradigm:
    """A paradigm "toy" registered for this test only: classification's adapter with :class:`ToyRequests`."""
    paradigm = dataclasses.replace(registry.get("classification"), name="toy", label="Toy", builder=ToyRequests)
    get = registry.get
    monkeypatch.setattr(registry, "PARADIGMS", (*registry.PARADIGMS, "toy"))
    monkeypatch.setattr(registry, "get", lambda name: paradigm if name == "toy" else get(name))
    return paradigm


@pytest.mark.django_db
def test_the_checks_fail_for_a_paradigm_that_does_not_conform(toy, server, audit_tasks_off):
    assert toy in registry.every()
    with pytest.raises(AssertionError, match="'toy' is registered without a minimal launch"):
        minimal_launch("toy")
    with pytest.raises(AssertionError, match="'toy' is registered without a minimal launch"):
        checks.check_minimal_launches(registry.PARADIGMS)

    world = make_world(server.base_url)
    endpoint = LLMEndpoint.objects.get(pk=world.chat_endpoint)
    audit = classification_services.audit_create(
        study=make_audit_study(4, n_examples=0), name="toy", conditions=["zs"], replicates=2,
        models=[ModelChoice(endpoint=endpoint, model="model-a")])
    Audit.objects.filter(pk=audit.id).update(paradigm="toy")
    preparation.audit_prepare(audit_id=audit.id)
    audit = Audit.objects.get(pk=audit.id)
    assert audit.status == Audit.Status.RUNNING, audit.status_reason

    with pytest.raises(AssertionError, match=r"toy: 4 of 8 requests' payloads key to another key"):
        checks.check_request_builder(toy, audit)
    with pytest.raises(AssertionError, match=r"toy: request \d+ .*the reply \"I can't help with that.\" parses as an "
                                             r"answer \(label, label 0\)"):
        checks.check_refusals_are_not_answers(toy, audit)
    # The same audit and checks with classification's own builder pass: what failed is the toy's builder.
    classification = registry.get("classification")
    assert checks.check_request_builder(classification, audit) == 8
    assert checks.check_refusals_are_not_answers(classification, audit) == 1


# ---------------------------------------------------------------------------- a paradigm that declares a setting

TOY_LEVEL = Setting("toy_level", "integer", default=3, minimum=1, maximum=5, help="How loud the toy is.")


def toy_with_a_setting(form_field) -> registry.Paradigm:
    """Classification's adapter with one setting more, declared once: its API field derived, its form field given."""
    classification = registry.get("classification")
    return dataclasses.replace(
        classification, name="toy", settings=(*classification.settings, TOY_LEVEL),
        launch_serializer=settings_serializer((TOY_LEVEL,), base=classification.launch_serializer),
        launch_form=type("ToyLaunchForm", (classification.launch_form,), {"toy_level": form_field}))


def test_a_setting_declared_once_is_a_field_of_both_and_read_alike():
    toy = toy_with_a_setting(setting_form_field(TOY_LEVEL))
    assert checks.check_settings_agree(toy) == len(registry.get("classification").settings) + 1
    order = launch_field_order(toy.launch_form)
    assert order.index("item_ids_file") < order.index("toy_level") < order.index("replicates"), order


def test_a_form_field_changed_by_hand_fails_the_check_naming_the_difference():
    by_hand = setting_form_field(TOY_LEVEL)
    by_hand.max_value = 6
    by_hand.validators = [v for v in by_hand.validators if getattr(v, "limit_value", None) != 5]
    with pytest.raises(checks.FormDiffers) as raised:
        checks.check_settings_agree(toy_with_a_setting(by_hand))
    assert raised.value.differences == ["toy_level: maximum declared 5, API 5, admin form 6",
                                        "toy_level: 6 is refused by the API, taken as 6 by the admin form"]
    with pytest.raises(checks.FormDiffers, match="toy_level: no field in the admin form"):
        checks.check_settings_agree(dataclasses.replace(toy_with_a_setting(by_hand),
                                                        launch_form=registry.get("classification").launch_form))
