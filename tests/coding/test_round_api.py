"""The rounds' REST API (coding.api_rounds): create, list, detail, coders, mappings, close/reopen, verify and the
sample export in JSON and CSV; every refusal a 400 (or 409) naming the problem, with nothing stored."""
from __future__ import annotations

import csv
import io

import pytest
from rest_framework.test import APIClient

from auditapp.models import Audit
from coding.models import Coder, CodingRound, Excerpt, ExcerptCoding
from tests.factories import make_participant_user, make_researcher

pytestmark = pytest.mark.usefixtures("audit_tasks_off")


def create(api_client, audit, lenses, **body):
    return api_client.post("/api/coding-rounds/", {"audit": audit.id, "codebooks": [c.id for c in lenses],
                                                   "sample_size": 12, "seed": 4, **body}, format="json")


def test_create_read_and_export_a_round(api_client, audit, lenses):
    thematic, linguistic = lenses
    model_a = audit.models.get(model="model-a")
    response = create(api_client, audit, lenses, allocation="equal", models_included=[model_a.id],
                      show_condition=True, mappings=[{"name": "Stereotypes", "codes": [
                          thematic.codes.get(name="STEREOTYPES").id, linguistic.codes.get(name="STEREOTYPES").id]}])
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["audit"] == audit.id and body["sample_size"] == 12 and body["seed"] == 4
    assert body["allocation"] == "equal" and body["show_condition"] and not body["show_model"]
    # Model A under 3 conditions, 28 explained replies each: 12 split equally → 4 per stratum.
    assert [(s["model"], s["model_name"], s["eligible"], s["allocated"]) for s in body["draw"]["strata"]] == [
        (model_a.id, "Model A", 28, 4)] * 3
    assert body["draw"]["n_eligible"] == 84 and "ids" not in body["draw"]
    assert [lens["codebook"] for lens in body["lenses"]] == [thematic.id, linguistic.id]
    assert body["mappings"][0]["name"] == "Stereotypes"
    assert sorted(code["lens_position"] for code in body["mappings"][0]["codes"]) == [0, 1]

    round_id = body["id"]
    listed = api_client.get(f"/api/coding-rounds/?audit={audit.id}").json()["results"]
    assert [(r["id"], r["n_excerpts"], r["n_lenses"]) for r in listed] == [(round_id, 12, 2)]
    assert api_client.get(f"/api/coding-rounds/?audit={audit.id + 1}").json()["results"] == []
    assert api_client.get("/api/coding-rounds/?audit=x").status_code == 400
    assert api_client.get(f"/api/coding-rounds/{round_id}/").json() == body

    rows = api_client.get(f"/api/coding-rounds/{round_id}/excerpts/").json()["results"]
    assert [row["position"] for row in rows] == list(range(12))
    excerpts = Excerpt.objects.filter(round_id=round_id).order_by("position")
    assert [row["excerpt"] for row in rows] == [e.id for e in excerpts]
    assert {(row["model"], row["condition"]) for row in rows} == {(model_a.id, c) for c in ("zs", "cot",
                                                                                          "persona_ifl")}
    exported = api_client.get(f"/api/coding-rounds/{round_id}/excerpts/?format=csv")
    assert exported.status_code == 200 and exported["Content-Type"].startswith("text/csv")
    table = list(csv.DictReader(io.StringIO(b"".join(exported.streaming_content).decode())))
    assert [int(r["request_id"]) for r in table] == [row["request_id"] for row in rows]
    assert table[0]["explanation"] == rows[0]["explanation"]
    assert api_client.get(f"/api/coding-rounds/{round_id}/verify/").json()["matches"] is True


def test_every_problem_of_a_create_is_a_400_and_nothing_is_stored(api_client, audit, lenses):
    response = create(api_client, audit, lenses, models_included=[987654], conditions_included=["nope"],
                      sample_size=10_000, codebooks=[lenses[0].id, lenses[0].id])
    assert response.status_code == 400
    problems = response.json()["problems"]
    assert any("no model with id 987654" in p for p in problems)
    assert any("no condition 'nope'" in p for p in problems)
    assert any("repeated" in p for p in problems)
    assert "; " in response.json()["detail"]
    too_many = create(api_client, audit, lenses, sample_size=10_000)
    assert too_many.status_code == 400 and "larger than the 168 eligible replies" in too_many.json()["detail"]
    wrong_rule = create(api_client, audit, lenses, allocation="random")
    assert wrong_rule.status_code == 400 and "allocation" in wrong_rule.json()
    assert create(api_client, audit, lenses, codebooks=[]).status_code == 400
    assert create(api_client, audit, lenses, codebooks=[c.id for c in lenses] * 4).status_code == 400
    missing = api_client.post("/api/coding-rounds/", {"audit": 999999, "codebooks": [lenses[0].id]}, format="json")
    assert missing.status_code == 400 and "no audit with id 999999" in missing.json()["audit"][0]
    Audit.objects.filter(pk=audit.pk).update(status=Audit.Status.PAUSED)
    assert "completed audit only" in create(api_client, audit, lenses).json()["detail"]
    Audit.objects.filter(pk=audit.pk).update(status=Audit.Status.COMPLETED, paradigm="self_report")
    assert "no replies with a label and an explanation" in create(api_client, audit, lenses).json()["detail"]
    assert not CodingRound.objects.exists() and not Excerpt.objects.exists()


def test_coders_are_added_shown_with_progress_and_removed(api_client, audit, lenses, researcher):
    round_id = create(api_client, audit, lenses).json()["id"]
    first, second = CodingRound.objects.get(pk=round_id).lenses.order_by("position")
    added = api_client.post(f"/api/coding-rounds/{round_id}/coders/", {"lens": second.id, "name": "Analyst 2"},
                            format="json")
    assert added.status_code == 201, added.content
    coder = Coder.objects.get(pk=added.json()["id"])
    assert added.json()["invite_link"] == f"http://testserver/c/{coder.invite_token}/"
    mine = api_client.post(f"/api/coding-rounds/{round_id}/coders/", {"lens": first.id, "user": researcher[0].id},
                           format="json")
    assert mine.status_code == 201 and mine.json()["user"] == researcher[0].id
    duplicate = api_client.post(f"/api/coding-rounds/{round_id}/coders/", {"lens": 424242, "name": "Analyst 2"},
                                format="json")
    assert duplicate.status_code == 400
    assert {"the round has no lens with id 424242", "the round already has a coder named 'Analyst 2'"} <= set(
        duplicate.json()["problems"])
    outsider = make_participant_user()
    refused = api_client.post(f"/api/coding-rounds/{round_id}/coders/", {"lens": first.id, "user": outsider.id},
                              format="json")
    assert refused.status_code == 400 and "not a researcher" in refused.json()["detail"]

    excerpts = list(Excerpt.objects.filter(round_id=round_id).order_by("position")[:3])
    for excerpt in excerpts:
        ExcerptCoding.objects.create(coder=coder, excerpt=excerpt, confirmed_at="2025-01-01T00:00:00Z")
    ExcerptCoding.objects.create(coder=coder, excerpt=Excerpt.objects.get(round_id=round_id, position=5))
    shown = {c["name"]: c for c in api_client.get(f"/api/coding-rounds/{round_id}/").json()["coders"]}
    assert (shown["Analyst 2"]["n_confirmed"], shown["Analyst 2"]["n_excerpts"]) == (3, 12)
    assert shown["Coder 2"]["n_confirmed"] == 0

    conflict = api_client.delete(f"/api/coding-rounds/{round_id}/coders/{coder.id}/")
    assert conflict.status_code == 409 and "coded 4 excerpt(s)" in conflict.json()["detail"]
    # Not themselves from the open round (they could then read the others' codes); another researcher can.
    themselves = api_client.delete(f"/api/coding-rounds/{round_id}/coders/{mine.json()['id']}/")
    assert themselves.status_code == 403 and "another researcher can remove you" in themselves.json()["detail"]
    _, other_token = make_researcher("other")
    colleague = APIClient()
    colleague.credentials(HTTP_AUTHORIZATION=f"Token {other_token}")
    removed = colleague.delete(f"/api/coding-rounds/{round_id}/coders/{mine.json()['id']}/")
    assert removed.status_code == 204
    assert colleague.delete(f"/api/coding-rounds/{round_id}/coders/{mine.json()['id']}/").status_code == 404
    assert list(Coder.objects.filter(round_id=round_id)) == [coder]


def test_mappings_are_replaced_and_a_bad_mapping_is_a_400(api_client, audit, lenses):
    thematic, linguistic = lenses
    round_id = create(api_client, audit, lenses).json()["id"]
    wording, tone = thematic.codes.get(name="WORDING").id, thematic.codes.get(name="TONE").id
    bad = api_client.put(f"/api/coding-rounds/{round_id}/mappings/",
                         {"mappings": [{"name": "One lens", "codes": [wording, tone]}]}, format="json")
    assert bad.status_code == 400 and "at least two lenses" in bad.json()["detail"]
    assert api_client.put(f"/api/coding-rounds/{round_id}/mappings/", {"mappings": [{"name": "x", "codes": [1]}]},
                          format="json").status_code == 400
    good = api_client.put(f"/api/coding-rounds/{round_id}/mappings/", {"mappings": [
        {"name": "Language", "codes": [wording, linguistic.codes.get(name="IFL").id]}]}, format="json")
    assert good.status_code == 200 and [m["name"] for m in good.json()["mappings"]] == ["Language"]


def test_close_and_reopen(api_client, audit, lenses):
    round_id = create(api_client, audit, lenses).json()["id"]
    closed = api_client.post(f"/api/coding-rounds/{round_id}/close/")
    assert closed.status_code == 200 and closed.json()["closed_at"]
    lens = CodingRound.objects.get(pk=round_id).lenses.first()
    late = api_client.post(f"/api/coding-rounds/{round_id}/coders/", {"lens": lens.id, "name": "Late"},
                           format="json")
    assert late.status_code == 400 and "closed" in late.json()["detail"]
    assert api_client.post(f"/api/coding-rounds/{round_id}/reopen/").json()["closed_at"] is None
    assert api_client.post(f"/api/coding-rounds/{round_id}/archive/").status_code == 404
    assert api_client.post("/api/coding-rounds/999999/close/").status_code == 404


def test_the_rounds_api_is_for_researchers_only(db, audit, lenses):
    user = make_participant_user("coder-not-staff")
    client = APIClient()
    client.force_authenticate(user)
    assert client.get("/api/coding-rounds/").status_code == 403
    assert APIClient().get("/api/coding-rounds/").status_code == 401
