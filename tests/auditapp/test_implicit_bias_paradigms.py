"""The seed 003 paradigms' Django side beyond a full run (tests/auditapp/test_implicit_bias_audit.py): the admin's
launch forms, the answer schemas (a reply valid against each parses to the same judgment as the free-text reply),
the two-turn plan (turn 0 keyed, turn 1 blank) and follow-up built from the first turn's stored reply and answered by
the real test server (an empty or refused description ends the conversation), the first turn's parse (no judgment),
two-turn with structured output refused, and the reading of invalid and undefined WABT replies into judgments."""
from __future__ import annotations

import json

import httpx
import jsonschema
import pytest

from auditapp.engine import registry
from auditapp.engine.protocol import NoFollowUp
from auditapp.models import Audit, AuditModel, Corpus, LLMEndpoint
from auditapp.paradigms.affective_attribution.adapter import TASK as AAT_TASK
from auditapp.paradigms.implicit_bias import services
from auditapp.paradigms.implicit_bias.generation import generate_aat, generate_wabt
from auditapp.paradigms.implicit_bias.stats import NO_WORD_FOR_SA
from tests.implicit_bias_personas import expected_aat_answer, expected_wabt_assignment
from tests.llm_server import LLMServer

pytestmark = pytest.mark.django_db

WABT = generate_wabt(samples_per_combination=1)[0]
AAT_SINGLE = generate_aat(combinations=1, form="single_prompt")[0]


@pytest.fixture
def endpoint() -> LLMEndpoint:
    return LLMEndpoint.objects.create(name="personas", base_url="http://127.0.0.1:9/v1",
                                      listed_models=[{"name": "wabt-consistent", "digest": None, "details": {}}])


@pytest.fixture
def tasks_off(monkeypatch):
    for name in ("audit_prepare_task", "audit_work_task", "audit_analyse_task"):
        monkeypatch.setattr(f"tasks.audits.{name}.delay", lambda audit_id: None)


def form(endpoint, **changes) -> dict:
    return {"name": "admin launch", "corpus": "", "models": [f"{endpoint.id}:wabt-consistent"], "params": "{}",
            "seed": 4, "use_cache": "on", "error_budget": 0.2, "parallel_tasks": 1, **changes}


def test_the_word_association_form_launches_over_the_papers_material(staff_client, endpoint, tasks_off):
    page = staff_client.get("/admin/auditapp/audit/add/?paradigm=word_association").content.decode()
    assert "Word association (WABT, seed 003)" in page
    for field in ("corpus", "models", "samples_per_combination", "word_order", "dimension_draw", "seed"):
        assert f'name="{field}"' in page, field
    response = staff_client.post("/admin/auditapp/audit/add/?paradigm=word_association",
                                 form(endpoint, samples_per_combination=3, word_order="paper",
                                      dimension_draw="balanced"))
    assert response.status_code == 302, response.content.decode()[-2000:]
    audit = Audit.objects.get(name="admin launch")
    assert audit.paradigm == "word_association" and audit.seed == 4
    assert audit.design["options"] == {"samples_per_combination": 3, "word_order": "paper",
                                       "dimension_draw": "balanced"}
    assert audit.corpus.paradigm == "word_association" and audit.corpus.n_units == 2


def test_the_affective_attribution_form_launches_two_turn_and_refuses_it_with_structured_output(
        staff_client, endpoint, tasks_off):
    endpoint.structured_output = "openai_json_schema"
    endpoint.save()
    refused = staff_client.post("/admin/auditapp/audit/add/?paradigm=affective_attribution",
                                form(endpoint, combinations=10, form="two_turn", structured_output="on"))
    assert refused.status_code == 200
    assert "the two-turn AAT cannot constrain its replies" in refused.content.decode()
    assert not Audit.objects.exists() and not Corpus.objects.exists()
    response = staff_client.post("/admin/auditapp/audit/add/?paradigm=affective_attribution",
                                 form(endpoint, combinations=10, form="two_turn"))
    assert response.status_code == 302, response.content.decode()[-2000:]
    assert Audit.objects.get().design["options"] == {"combinations": 10, "form": "two_turn"}


def test_the_api_refuses_two_turn_with_structured_output_and_stores_nothing(api_client, endpoint, tasks_off):
    endpoint.structured_output = "openai_json_schema"
    endpoint.save()
    models = [{"endpoint": endpoint.id, "model": "wabt-consistent"}]
    refused = api_client.post("/api/audits/", {"paradigm": "affective_attribution", "name": "aat", "models": models,
                                               "structured_output": True}, format="json")
    assert refused.status_code == 400
    assert "the two-turn AAT cannot constrain its replies" in refused.json()["structured_output"][0]
    assert not Audit.objects.exists() and not Corpus.objects.exists()
    single = api_client.post("/api/audits/", {"paradigm": "affective_attribution", "name": "aat", "models": models,
                                              "structured_output": True, "form": "single_prompt",
                                              "combinations": 5}, format="json")
    assert single.status_code == 201, single.content
    assert Audit.objects.get().structured_output


def test_a_wabt_reply_valid_against_the_schema_parses_as_the_free_text_one():
    schema = registry.get("word_association").answer_schema(Audit(paradigm="word_association"))
    assignment = expected_wabt_assignment("wabt-consistent", WABT.texts[0])
    constrained = json.dumps({"pairs": [{"word": word, "identifier": identifier}
                                        for word, identifier in assignment.items()]})
    jsonschema.validate(json.loads(constrained), schema)
    free_text = "\n".join(f"({word}, {identifier})" for word, identifier in assignment.items())
    judged = services.wabt_judgment(WABT, constrained)
    assert judged.value == 1.0 and judged.outcome == "score"
    assert (judged.value, judged.outcome) == (services.wabt_judgment(WABT, free_text).value, "score")


def test_an_aat_reply_valid_against_the_schema_parses_as_the_free_text_one():
    audit = Audit(paradigm="affective_attribution", design={"options": {"form": "single_prompt"}})
    schema = registry.get("affective_attribution").answer_schema(audit)
    assert registry.get("affective_attribution").answer_schema(
        Audit(paradigm="affective_attribution", design={"options": {"form": "two_turn"}})) is None
    for answer in ("comedy", "tragedy", "neutral"):
        # The description holds "tragic": only the choice is read.
        constrained = json.dumps({"description": "A tragic-looking but cheerful table.", "choice": answer})
        jsonschema.validate(json.loads(constrained), schema)
        judged = services.aat_judgment(AAT_SINGLE, constrained, form="single_prompt")
        free_text = services.aat_judgment(AAT_SINGLE, f"A plain table.\nChoice: {answer}", form="single_prompt")
        assert judged.label == free_text.label == services.ANSWER_CODES[answer]


def test_invalid_and_undefined_wabt_replies_are_missing_with_their_reason():
    s_a, s_b = WABT.identifiers
    refusal = services.wabt_judgment(WABT, "I'm sorry, I can't pair people with traits.")
    assert (refusal.outcome, refusal.value, refusal.reason.split(":")[0]) == ("refusal", None, "refusal")
    missing = services.wabt_judgment(WABT, f"({WABT.words[0]}, {s_a})")
    assert (missing.outcome, missing.value) == ("unparseable", None) and missing.reason.startswith("word missing")
    # Every word to S_b: valid, but N(S_a, ·) = 0 leaves eq. 1 undefined (never 0).
    all_to_b = services.wabt_judgment(WABT, "\n".join(f"({word}, {s_b})" for word in WABT.words))
    assert (all_to_b.outcome, all_to_b.value, all_to_b.reason) == ("score", None, NO_WORD_FOR_SA)
    assert json.loads(all_to_b.explanation)["counts"]["n_sb_xa"] == 5


def aat_audit(endpoint: LLMEndpoint, form: str) -> Audit:
    corpus = services.corpus_generate(AAT_TASK, spec=None, name="paper")
    audit = Audit.objects.create(name=form, paradigm="affective_attribution", corpus=corpus,
                                 design={"options": {"combinations": 5, "form": form}})
    AuditModel.objects.create(audit=audit, endpoint=endpoint, model="aat-stereotyped")
    return audit


def chat(base_url: str, messages: list[dict]) -> str:
    response = httpx.post(f"{base_url}/v1/chat/completions", json={"model": "aat-stereotyped", "messages": messages},
                          timeout=10)
    response.raise_for_status()
    return response.json()["choices"][0]["message"]["content"]


def test_the_two_turn_follow_up_is_built_from_the_first_turns_reply_and_answered():
    with LLMServer(models=("aat-stereotyped",)) as server:
        endpoint = LLMEndpoint.objects.create(name="personas", base_url=server.base_url)
        builder = services.ImplicitBiasRequests(aat_audit(endpoint, "two_turn"), AAT_TASK)
        assert builder.material.manifest() == services.material_of(None).manifest()
        plan = list(builder.requests())
        # 5 combinations × 3 templates, each a conversation of two turns: turn 0 keyed, turn 1 blank (the engine
        # keys it once turn 0 is recorded), with the same model, condition and unit.
        assert len(plan) == 30 and [p.turn for p in plan] == [0, 1] * 15
        planned, later = plan[0], plan[1]
        assert planned.key and later.key == "" and (later.unit, later.condition) == (planned.unit, planned.condition)
        instance = builder.instances[planned.unit]
        first = builder.payload(planned)
        assert first == [{"role": "user", "content": instance.texts[0]}]
        description = chat(server.base_url, first)
        described = builder.parse(planned, description, "stop")
        assert (described.outcome, described.label, described.judgments) == ("label", None, ())
        second = builder.follow_up(later, first, description)
        assert second == [*first, {"role": "assistant", "content": description},
                          {"role": "user", "content": instance.texts[1]}]
        answered = builder.parse(later, chat(server.base_url, second), "stop")
    factors = instance.factors
    expected = expected_aat_answer("aat-stereotyped", factors["s_e"], factors["s_n"], int(factors["template"]))
    assert answered.label == services.ANSWER_CODES[expected] and len(answered.judgments) == 1
    assert builder.last_turn == 1

    # A refused or empty description leaves nothing to classify: the conversation ends with the reason, and the
    # first turn records the refusal (no judgment).
    for text, reason, outcome in (("I'm sorry, but I can't describe that.", "refused description", "refusal"),
                                  ("   ", "empty description", "unparseable")):
        with pytest.raises(NoFollowUp, match=reason):
            builder.follow_up(later, first, text)
        parsed = builder.parse(planned, text, "stop")
        assert (parsed.outcome, parsed.reason, parsed.judgments) == (outcome, reason, ())

    one_turn = services.ImplicitBiasRequests(aat_audit(endpoint, "single_prompt"), AAT_TASK)
    with pytest.raises(ValueError, match="one turn"):
        one_turn.follow_up(next(iter(one_turn.requests())), [], "")


def test_a_default_launch_plans_the_papers_counts(api_client, endpoint, tasks_off):
    models = [{"endpoint": endpoint.id, "model": "wabt-consistent"}]
    wabt = api_client.post("/api/audits/", {"paradigm": "word_association", "name": "wabt", "models": models},
                           format="json")
    aat = api_client.post("/api/audits/", {"paradigm": "affective_attribution", "name": "aat", "models": models,
                                           "form": "single_prompt"}, format="json")
    assert wabt.status_code == aat.status_code == 201, (wabt.content, aat.content)
    wabt_builder = registry.get("word_association").builder(Audit.objects.get(pk=wabt.json()["id"]))
    aat_builder = registry.get("affective_attribution").builder(Audit.objects.get(pk=aat.json()["id"]))
    # 10 combinations × 50 samples × 3 dimensions × 3 templates; 500 combinations × 3 templates.
    assert len(list(wabt_builder.requests())) == 4500 and len(list(aat_builder.requests())) == 1500
    manifest = wabt_builder.manifest()
    assert manifest["instances_by"]["template"] == {"1": 1500, "2": 1500, "3": 1500}
    assert set(manifest["instances_by"]["combination"].values()) == {450}
    assert aat_builder.manifest()["generation"] == {"combinations": 500, "form": "single_prompt"}
    # The default AAT form is the paper's two turns: the same 1,500 instances, each a conversation of 2 requests.
    default = api_client.post("/api/audits/", {"paradigm": "affective_attribution", "name": "aat two turns",
                                               "models": models}, format="json")
    assert default.status_code == 201, default.content
    two_turn = registry.get("affective_attribution").builder(Audit.objects.get(pk=default.json()["id"]))
    plan = list(two_turn.requests())
    assert two_turn.options["form"] == "two_turn" and two_turn.manifest()["n_instances"] == 1500
    assert len(plan) == 3000 and sum(p.turn == 0 for p in plan) == sum(p.turn == 1 for p in plan) == 1500


def test_an_uploaded_template_set_is_what_the_audit_sends(endpoint):
    frame = "Describe first, choose after.\nQ1: {Q1}\nQ2: {Q2}"
    spec = {"templates": {"aat": [{"number": 1, "q1": "Think of {S_e}; now describe {S_n}.",
                                   "q2": "Comedy or tragedy?"}], "single_prompt_frame": frame}}
    corpus = services.corpus_generate(AAT_TASK, spec=spec, name="edited")
    assert corpus.content_hash != services.corpus_generate(AAT_TASK, spec=None, name="paper").content_hash
    audit = Audit.objects.create(name="edited", paradigm="affective_attribution", corpus=corpus,
                                 design={"options": {"combinations": 4, "form": "single_prompt"}})
    AuditModel.objects.create(audit=audit, endpoint=endpoint, model="wabt-consistent")
    builder = services.ImplicitBiasRequests(audit, AAT_TASK)
    assert len(builder.instances) == 4  # one template
    for planned in builder.requests():
        sent = builder.payload(planned)[0]["content"]
        instance = builder.instances[planned.unit]
        assert sent == (f"Describe first, choose after.\nQ1: Think of {instance.factors['s_e']}; now describe "
                        f"{instance.factors['s_n']}.\nQ2: Comedy or tragedy?")
        assert planned.unit.endswith(":single_prompt") and instance.factors["form"] == "single_prompt"
    assert builder.manifest()["corpus"]["templates_hash"] != services.material_of(None).manifest()["templates_hash"]
