"""The self-report error browser (GET /api/audits/{id}/judged-items/): every presented item's answer beside the same
model's answer to the item on its other form, against the answers export read independently here; the planted
form effect (persona-recognise answers the original form as persona-agree and the masked as persona-key) is what
"differs" finds, and the persona that answers both forms alike (persona-key) has no differing row."""
from __future__ import annotations

import csv
import io

import pytest

from auditapp.models import Audit
from tests.auditapp.test_self_report_dashboard_view import build_personas_audit

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.integration]


@pytest.fixture
def audit(persona_server, audit_tasks_off) -> Audit:
    return build_personas_audit(persona_server.base_url)


def every_row(api_client, audit: Audit, **params) -> list[dict]:
    """Every page's rows (1,060 answers: five personas × three forms)."""
    rows, page = [], 1
    while True:
        response = api_client.get(f"/api/audits/{audit.id}/judged-items/", {**params, "page_size": 500, "page": page})
        assert response.status_code == 200, response.content
        body = response.json()
        rows += body["results"]
        if not body["next"]:
            assert body["count"] == len(rows)
            return rows
        page += 1


def exported_answers(api_client, audit: Audit) -> list[dict]:
    body = b"".join(api_client.get(f"/api/audits/{audit.id}/answers/", {"format": "csv"}).streaming_content)
    return list(csv.DictReader(io.StringIO(body.decode("utf-8-sig"))))


def expected_rows(answers: list[dict]) -> list[dict]:
    """Each answer with the other form's, matched by model, replicate, source and number, from the export."""
    forms = {row["form"] for row in answers}
    by_item = {(row["model_id"], row["replicate"], row["form"], row["source"], row["number"]): row
               for row in answers if row["kind"] == "instrument"}
    rows = []
    for row in answers:
        other_form = ""
        if row["kind"] == "instrument":
            candidate = "masked" if row["form"].startswith("original:") else f"original:{row['source']}"
            other_form = candidate if candidate in forms else ""
        other = by_item.get((row["model_id"], row["replicate"], other_form, row["source"], row["number"]))
        both = other is not None and row["option_index"] != "" and other["option_index"] != ""
        rows.append({"model": row["model"], "form": row["form"], "position": int(row["position"]),
                     "source": row["source"], "number": int(row["number"]), "option": row["option"],
                     "outcome": row["outcome"], "other_form": other_form,
                     "other_option": other["option"] if other else "",
                     "differs": row["option_index"] != other["option_index"] if both else None})
    return rows


def key(row: dict) -> tuple:
    return row["model"], row["form"], row["position"]


def test_every_answer_beside_its_other_form_and_the_planted_form_effect(api_client, audit):
    answers = exported_answers(api_client, audit)
    expected = {key(row): row for row in expected_rows(answers)}
    rows = every_row(api_client, audit)
    assert len(rows) == len(answers) == len(expected)
    for row in rows:
        assert {name: row[name] for name in expected[key(row)]} == expected[key(row)]

    differing = every_row(api_client, audit, differs="true")
    # persona-recognise chooses the most-agreeing option on an original form and persona-key's on the masked one:
    # its items whose key is not the most-agreeing option differ; every other persona answers both forms alike
    # (persona-refuse has no answer at all).
    assert differing and {row["model"] for row in differing} == {"persona-recognise"}
    assert {key(row) for row in differing} == {k for k, row in expected.items() if row["differs"] is True}
    assert every_row(api_client, audit, differs="true", model=audit.models.get(model="persona-key").id) == []
    agreeing = every_row(api_client, audit, differs="false")
    assert {key(row) for row in agreeing} == {k for k, row in expected.items() if row["differs"] is False}
    # Fillers and dummies are on the masked form only: no other answer, never "differs".
    fillers = every_row(api_client, audit, kind="dummy")
    assert fillers and all(row["other_form"] == "" and row["differs"] is None for row in fillers)


def test_filters_search_sorts_and_the_csv(api_client, audit):
    answers = exported_answers(api_client, audit)
    refuser = audit.models.get(model="persona-refuse")
    cases = {
        (("model", refuser.id),): [r for r in answers if r["model"] == "persona-refuse"],
        (("form", "masked"), ("kind", "instrument")): [r for r in answers if r["form"] == "masked"
                                                       and r["kind"] == "instrument"],
        (("source", "sata_partial"),): [r for r in answers if r["source"] == "sata_partial"],
        (("outcome", "refusal"),): [r for r in answers if r["outcome"] == "refusal"],
    }
    for params, wanted in cases.items():
        assert wanted, params
        shown = every_row(api_client, audit, **dict(params))
        assert sorted(key(row) for row in shown) == sorted((r["model"], r["form"], int(r["position"]))
                                                           for r in wanted), params
    word = answers[0]["text"].split()[2]
    found = every_row(api_client, audit, q=word.upper())
    assert found and all(word.casefold() in row["text"].casefold() for row in found)
    by_item = every_row(api_client, audit, ordering="item")
    assert [(row["source"], row["number"]) for row in by_item] == sorted((row["source"], row["number"])
                                                                         for row in by_item)
    response = api_client.get(f"/api/audits/{audit.id}/judged-items/", {"format": "csv", "differs": "true"})
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode("utf-8-sig"))))
    assert len(rows) == len(every_row(api_client, audit, differs="true")) and {row["differs"] for row in rows} == {"True"}


def test_a_value_the_audit_does_not_have_is_refused_by_name(api_client, audit):
    other = build_personas_audit("http://127.0.0.1:9", personas=("persona-key",), run=False, name="other")
    for params, field in (({"model": other.models.get().id}, "model"), ({"form": "original:nope"}, "form"),
                          ({"source": "nope"}, "source"), ({"kind": "prose"}, "kind"),
                          ({"ordering": "text"}, "ordering"), ({"differs": "maybe"}, "differs"),
                          ({"q": "x" * 201}, "q")):
        response = api_client.get(f"/api/audits/{audit.id}/judged-items/", params)
        assert response.status_code == 400 and field in response.json(), (params, response.content)
