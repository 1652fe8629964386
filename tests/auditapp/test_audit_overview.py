"""Audits seen together: the headline table of an audit (API), the home page's audit index (models, progress,
headline), two audits compared (API and page: each value as its own dashboard has it, the differences), a model's
card, and what is refused: audits of different paradigms, too many, not analysed, or of another team."""
from __future__ import annotations

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from auditapp.models import Audit, AuditMetric
from auditapp.paradigms.classification.selectors import condition_cells
from tests.auditapp.test_audit_dashboard_view import COMPLETED_PLAN, RUNNING_PLAN, build_audit, expected_metrics
from tests.factories import make_researcher

pytestmark = pytest.mark.django_db

# A second classification audit whose model-b is right more often in zs: the difference has a sign to check.
BETTER_PLAN = {**COMPLETED_PLAN, ("model-b", "zs"): {"wrong": set()}}


def _kappa(audit: Audit, model: str, condition: str) -> dict:
    return AuditMetric.objects.get(audit=audit, audit_model__model=model, condition=condition,
                                   reference="weighted").values


def test_the_headline_is_table_1_with_the_values_of_scikit_learn(api_client):
    audit = build_audit(COMPLETED_PLAN)
    expected = expected_metrics(audit)
    body = api_client.get(f"/api/audits/{audit.id}/headline/").json()
    assert body["measure"] == "Cohen's κ against the weighted ground truth (Table 1)"
    names = {m.label: m.id for m in audit.models.all()}
    codes = {name: code for code, name in condition_cells(audit)}
    assert len(body["rows"]) == 4
    for row in body["rows"]:
        assert row["value"] == pytest.approx(expected[(names[row["model"]], codes[row["cell"]])]["kappa"])
        assert row["low"] <= row["value"] <= row["high"]
    assert body["summary"].startswith("Cohen's κ against the weighted ground truth (Table 1): ")


def test_an_audit_without_results_has_no_headline(api_client):
    audit = build_audit(RUNNING_PLAN, status=Audit.Status.RUNNING)
    response = api_client.get(f"/api/audits/{audit.id}/headline/")
    assert response.status_code == 404
    assert response.json()["detail"] == "this audit has no results yet"


def test_compare_gives_each_audits_own_values_and_their_difference(api_client, staff_client):
    first = build_audit(COMPLETED_PLAN, name="Baseline run")
    second = build_audit(BETTER_PLAN, name="Second run")
    body = api_client.get("/api/audits/compare/", {"audits": f"{first.id},{second.id}"}).json()
    assert [audit["id"] for audit in body["audits"]] == [first.id, second.id]
    rows = {(row["model"], row["cell"]): row for row in body["rows"]}
    assert len(rows) == 4
    assert all(row["values"][0]["value"] is not None and row["values"][1]["value"] is not None
               for row in rows.values())
    cell_b = rows[("Model B", dict(condition_cells(first))["zs"])]
    kappa_first = _kappa(first, "model-b", "zs")["kappa"]
    kappa_second = _kappa(second, "model-b", "zs")["kappa"]
    assert kappa_second > kappa_first
    assert cell_b["values"][0]["value"] == pytest.approx(kappa_first)
    assert cell_b["values"][1]["value"] == pytest.approx(kappa_second)
    assert cell_b["differences"][0]["value"] == pytest.approx(kappa_second - kappa_first)
    assert cell_b["differences"][0]["low"] < cell_b["differences"][0]["value"] < cell_b["differences"][0]["high"]
    # The page shows the same numbers.
    html = staff_client.get(reverse("audit-compare"), {"audits": [first.id, second.id]}).content.decode()
    assert f"{kappa_second - kappa_first:.3f}" in html
    assert f'href="{reverse("audit-dashboard", args=[first.id])}"' in html


def test_what_cannot_be_compared_is_refused_with_the_reason(api_client, staff_client):
    audit = build_audit(COMPLETED_PLAN)
    running = build_audit(RUNNING_PLAN, status=Audit.Status.RUNNING, name="Still running")
    other_paradigm = Audit.objects.create(name="A BITS audit", paradigm="bits", status=Audit.Status.COMPLETED,
                                          analysis={"tables": {"score_sense": [
                                              {"scorer": "VADER", "group": "PWD", "score_sense": -0.2, "n": 10,
                                               "p": 0.01, "mark": "*"}]}})
    cases = {
        f"{audit.id}": "two or more",
        f"{audit.id},{running.id}": "has no results yet",
        f"{audit.id},{other_paradigm.id}": "measure different things",
        f"{audit.id},x": "whole numbers",
        ",".join(str(n) for n in range(1, 10)): "at most 8",
    }
    for ids, reason in cases.items():
        response = api_client.get("/api/audits/compare/", {"audits": ids})
        assert response.status_code == 400, ids
        assert reason in response.json()["detail"], (ids, response.json())
    missing = api_client.get("/api/audits/compare/", {"audits": f"{audit.id},999999"})
    assert missing.status_code == 404 and missing.json()["detail"] == "no audit of your teams with id 999999"
    page = staff_client.get(reverse("audit-compare"), {"audits": [audit.id, other_paradigm.id]})
    assert page.status_code == 400
    assert "measure different things" in page.content.decode()


def test_another_teams_audits_are_neither_compared_nor_on_a_model_card():
    from teams.models import Team

    first = build_audit(COMPLETED_PLAN)
    second = build_audit(BETTER_PLAN)
    Audit.objects.filter(pk__in=[first.id, second.id]).update(team=Team.objects.create(name="Another lab"))
    _, token = make_researcher("outsider-overview")  # of the tests' own team only
    outsider = APIClient()
    outsider.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    response = outsider.get("/api/audits/compare/", {"audits": f"{first.id},{second.id}"})
    assert response.status_code == 404 and "no audit of your teams" in response.json()["detail"]
    assert outsider.get("/api/model-card/", {"model": "model-a"}).json()["n_audits"] == 0
    assert outsider.get(f"/api/audits/{first.id}/headline/").status_code == 404


def test_a_models_card_has_its_rows_of_every_audit_it_took_part_in(api_client, staff_client):
    first = build_audit(COMPLETED_PLAN, name="Card run 1")
    second = build_audit(BETTER_PLAN, name="Card run 2")
    card = api_client.get("/api/model-card/", {"model": "model-b"}).json()
    assert card["n_audits"] == 2
    [section] = card["paradigms"]
    assert section["paradigm"] == "classification"
    assert [entry["audit"]["id"] for entry in section["audits"]] == [second.id, first.id]  # newest first
    for entry, audit in zip(section["audits"], (second, first), strict=True):
        assert {row["model"] for row in entry["headline"]["rows"]} == {"Model B"}
        values = sorted(row["value"] for row in entry["headline"]["rows"])
        assert values == pytest.approx(sorted(_kappa(audit, "model-b", c)["kappa"] for c in ("zs", "cot")))
    assert api_client.get("/api/model-card/").status_code == 400
    html = staff_client.get(reverse("model-card"), {"model": "model-b"}).content.decode()
    assert "Card run 1" in html and "Card run 2" in html


def test_a_model_name_no_database_stores_is_a_400_naming_why(api_client, staff_client):
    """PostgreSQL refuses a NUL in a query's text (it was a 500); no model's name holds one."""
    for fmt in ("json", "csv"):
        response = api_client.get("/api/model-card/", {"model": "model\x00b", "format": fmt})
        assert response.status_code == 400, response.content
        assert "model: the name contains a NUL character" in response.content.decode()
    page = staff_client.get(reverse("model-card"), {"model": "model\x00b"})
    assert page.status_code == 400 and "Model: the name contains a NUL character" in page.content.decode()


def test_the_home_page_lists_audits_with_models_progress_and_headline(staff_client):
    done = build_audit(COMPLETED_PLAN, name="Finished audit")
    running = build_audit(RUNNING_PLAN, status=Audit.Status.RUNNING, name="Running audit")
    html = staff_client.get(reverse("home")).content.decode()
    assert 'id="compare-form"' in html
    assert f'value="{done.id}"' in html and f'value="{running.id}"' in html
    assert f'{reverse("model-card")}?model=model-a' in html
    finished = running.requests.filter(state__in=["answered", "failed"]).count()
    assert f"{round(100 * finished / running.n_requests)}% of {running.n_requests}" in html
    assert "Cohen&#x27;s κ against the weighted ground truth (Table 1): " in html
    assert "no results yet" in html


def test_ids_that_are_not_plain_numbers_are_a_400_not_a_crash(api_client, staff_client):
    audit = build_audit(COMPLETED_PLAN)
    for ids in (f"{audit.id},²", f"{audit.id}," + "9" * 30, f"{audit.id},-3"):
        response = api_client.get("/api/audits/compare/", {"audits": ids})
        assert response.status_code == 400 and "whole numbers" in response.json()["detail"], ids
        assert staff_client.get(reverse("audit-compare"), {"audits": ids.split(",")}).status_code == 400


def test_the_home_page_and_a_card_ask_as_many_queries_for_six_audits_as_for_two(staff_client, api_client):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def queries(fetch) -> int:
        with CaptureQueriesContext(connection) as captured:
            assert fetch().status_code == 200
        return len(captured)

    for n in range(2):
        build_audit(COMPLETED_PLAN, name=f"Audit {n}")
    home, card = queries(lambda: staff_client.get(reverse("home"))), queries(
        lambda: api_client.get("/api/model-card/", {"model": "model-a"}))
    for n in range(2, 6):
        build_audit(COMPLETED_PLAN, name=f"Audit {n}")
    assert queries(lambda: staff_client.get(reverse("home"))) == home
    assert queries(lambda: api_client.get("/api/model-card/", {"model": "model-a"})) == card


def _csv(response) -> list[dict]:
    import csv
    import io

    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    return list(csv.DictReader(io.StringIO(response.content.decode())))


def test_as_csv_the_headline_the_comparison_and_the_card_are_flat_tables(api_client):
    first = build_audit(COMPLETED_PLAN, name="Baseline run")
    second = build_audit(BETTER_PLAN, name="Second run")
    headline = api_client.get(f"/api/audits/{first.id}/headline/").json()

    rows = _csv(api_client.get(f"/api/audits/{first.id}/headline/", {"format": "csv"}))
    assert list(rows[0]) == ["measure", "model", "cell", "value", "low", "high", "n", "note"]
    assert [(row["model"], row["cell"], float(row["value"])) for row in rows] == [
        (row["model"], row["cell"], pytest.approx(row["value"])) for row in headline["rows"]]

    compared = api_client.get("/api/audits/compare/", {"audits": f"{first.id},{second.id}"}).json()
    rows = _csv(api_client.get("/api/audits/compare/", {"audits": f"{first.id},{second.id}", "format": "csv"}))
    assert len(rows) == 2 * len(compared["rows"])  # one row per model × cell × audit
    cell_b = dict(condition_cells(first))["zs"]
    first_b, second_b = [row for row in rows if row["model"] == "Model B" and row["cell"] == cell_b]
    assert (first_b["audit_id"], second_b["audit_id"]) == (str(first.id), str(second.id))
    assert first_b["difference"] == ""  # the baseline has no difference from itself
    kappa_first, kappa_second = _kappa(first, "model-b", "zs")["kappa"], _kappa(second, "model-b", "zs")["kappa"]
    assert float(second_b["value"]) == pytest.approx(kappa_second)
    assert float(second_b["difference"]) == pytest.approx(kappa_second - kappa_first)
    assert float(second_b["difference_low"]) < float(second_b["difference"]) < float(second_b["difference_high"])
    assert not any(cell.startswith(("{", "[")) for row in rows for cell in row.values())

    rows = _csv(api_client.get("/api/model-card/", {"model": "model-b", "format": "csv"}))
    assert {row["audit_id"] for row in rows} == {str(first.id), str(second.id)}
    assert {row["model"] for row in rows} == {"Model B"} and len(rows) == 4
