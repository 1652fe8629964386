"""The error browser's rows (GET /api/audits/{id}/judged-replies/): every finished request with its sentence, the
references, the label and whether it is right; each filter, the search and the sorts give the rows the responses
export and the audit's reference snapshot say they must (computed here independently, in Python)."""
from __future__ import annotations

import csv
import io

import pytest

from annotation.models import ItemSetMember
from auditapp.models import Audit, AuditItem
from tests.auditapp.test_audit_dashboard_view import COMPLETED_PLAN, WEIGHTED, build_audit

pytestmark = pytest.mark.django_db


def every_row(api_client, audit: Audit, **params) -> list[dict]:
    response = api_client.get(f"/api/audits/{audit.id}/judged-replies/", {**params, "page_size": 1000})
    assert response.status_code == 200, response.content
    return response.json()["results"]


def expected_rows(api_client, audit: Audit) -> list[dict]:
    """From the responses export and the reference snapshot: the finished requests, with right or wrong."""
    body = b"".join(api_client.get(f"/api/audits/{audit.id}/responses/", {"format": "csv"}).streaming_content)
    snapshot = {row.item.external_id: (row.weighted_label, row.majority_label)
                for row in AuditItem.objects.filter(audit=audit).select_related("item")}
    rows = []
    for row in csv.DictReader(io.StringIO(body.decode("utf-8-sig"))):
        if row["state"] == "pending":
            continue
        weighted, majority = snapshot[row["item"]]
        label = int(row["label"]) if row["label"] else None
        rows.append({"request_id": int(row["request_id"]), "model": row["model"], "condition": row["condition"],
                     "outcome": row["outcome"], "label": label, "weighted_label": weighted,
                     "majority_label": majority, "explanation": row["explanation"],
                     "correct": None if label is None or weighted is None else label == weighted})
    return rows


def ids(rows) -> set[int]:
    return {row["request_id"] for row in rows}


def test_every_filter_returns_the_rows_the_export_says(api_client):
    audit = build_audit(COMPLETED_PLAN)
    expected = expected_rows(api_client, audit)
    rows = every_row(api_client, audit)
    assert len(rows) == len(expected) == 64
    by_id = {row["request_id"]: row for row in rows}
    for row in expected:
        shown = by_id[row["request_id"]]
        assert {key: shown[key] for key in row} == row
    model_b = audit.models.get(model="model-b")
    cases = {
        (("disagrees", "weighted"),): [r for r in expected if r["correct"] is False],
        (("disagrees", "majority"),): [r for r in expected if r["label"] is not None and r["majority_label"] is not None
                                       and r["label"] != r["majority_label"]],
        (("outcome", "refusal"),): [r for r in expected if r["outcome"] == "refusal"],
        (("model", model_b.id), ("condition", "cot")): [r for r in expected if r["model"] == "model-b"
                                                        and r["condition"] == "cot"],
        (("model", model_b.id), ("disagrees", "weighted")): [r for r in expected if r["model"] == "model-b"
                                                             and r["correct"] is False],
    }
    for params, wanted in cases.items():
        assert ids(every_row(api_client, audit, **dict(params))) == ids(wanted), params
        assert wanted, params  # every case selects something, so an empty answer cannot pass
    # The plan's wrong answers: model-a zs items 0 and 9, cot 0; model-b zs 1, 2, 10, cot 1, 8, 9, 10, 11 (those
    # with a weighted ground truth).
    wrong = every_row(api_client, audit, disagrees="weighted")
    assert all(row["correct"] is False and row["label"] != row["weighted_label"] for row in wrong)
    assert len(wrong) == sum(1 for (_, _), cell in COMPLETED_PLAN.items() for index in cell.get("wrong", ())
                             if WEIGHTED[index] is not None)


def test_search_sorts_and_paging(api_client):
    audit = build_audit(COMPLETED_PLAN)
    found = every_row(api_client, audit, q="SENTENCE 12")
    assert {row["text"] for row in found} == {"Sentence 12."} and len(found) == 4  # 2 models × 2 conditions
    assert {row["text"] for row in every_row(api_client, audit, q="explanation of item 3")} == {"Sentence 3."}
    by_item = every_row(api_client, audit)
    positions = [int(row["item"][2:]) for row in by_item]
    assert positions == sorted(positions)
    assert [int(row["item"][2:]) for row in every_row(api_client, audit, ordering="-item")] == sorted(positions,
                                                                                                   reverse=True)
    outcomes = [row["outcome"] for row in every_row(api_client, audit, ordering="outcome")]
    assert outcomes == sorted(outcomes)
    pages = [api_client.get(f"/api/audits/{audit.id}/judged-replies/", {"page_size": 25, "page": n}).json()["results"]
             for n in (1, 2, 3)]
    assert sum(len(page) for page in pages) == 64 and len(ids(r for page in pages for r in page)) == 64


def test_bad_filters_are_refused_by_name(api_client):
    audit = build_audit(COMPLETED_PLAN)
    for params, field in (({"disagrees": "nobody"}, "disagrees"), ({"ordering": "text"}, "ordering"),
                          ({"outcome": "maybe"}, "outcome"), ({"model": "x"}, "model"), ({"q": "x" * 201}, "q")):
        response = api_client.get(f"/api/audits/{audit.id}/judged-replies/", params)
        assert response.status_code == 400 and field in response.json(), (params, response.content)


def test_the_csv_holds_every_filtered_row(api_client):
    audit = build_audit(COMPLETED_PLAN)
    response = api_client.get(f"/api/audits/{audit.id}/judged-replies/", {"format": "csv", "disagrees": "weighted"})
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode("utf-8-sig"))))
    assert {int(row["request_id"]) for row in rows} == ids(every_row(api_client, audit, disagrees="weighted"))
    assert {row["correct"] for row in rows} == {"False"}


# A high-AQ test set of items 0–7 whose agreed label differs from the weighted one on items 1 and 6; another
# study's set of the same name must not leak in.
HIGH_AQ = {0: 1, 1: 0, 2: 1, 3: 1, 4: 1, 5: 1, 6: 0, 7: 1}


def test_a_psychometric_group_narrows_to_its_test_set_and_its_label(api_client):
    audit = build_audit(COMPLETED_PLAN)
    items = {item.position: item for item in audit.study.items.all()}
    ItemSetMember.objects.bulk_create(ItemSetMember(study=audit.study, set_name="high_aq", item=items[position],
                                                    label=label) for position, label in HIGH_AQ.items())
    other = build_audit(COMPLETED_PLAN)
    ItemSetMember.objects.bulk_create(ItemSetMember(study=other.study, set_name="high_aq", item=item, label=0)
                                      for item in other.study.items.all())
    expected = expected_rows(api_client, audit)
    position = {row["request_id"]: int(row["item"][2:]) for row in every_row(api_client, audit)}

    rows = every_row(api_client, audit, group="high_aq")
    assert ids(rows) == {r["request_id"] for r in expected if position[r["request_id"]] in HIGH_AQ}
    assert all(row["group_label"] == HIGH_AQ[int(row["item"][2:])] for row in rows)
    assert {row["group_label"] for row in every_row(api_client, audit)} == {None}

    against_group = every_row(api_client, audit, group="high_aq", disagrees="group")
    wanted = {r["request_id"] for r in expected if position[r["request_id"]] in HIGH_AQ and r["label"] is not None
              and r["label"] != HIGH_AQ[position[r["request_id"]]]}
    assert ids(against_group) == wanted and wanted
    # Items 1 and 6 are where the group's label and the weighted one part: a right reply there is wrong for the group.
    assert wanted != {r["request_id"] for r in expected if position[r["request_id"]] in HIGH_AQ
                      and r["correct"] is False}
    assert every_row(api_client, audit, group="low_aq") == []


def test_a_group_filter_is_refused_by_name_when_it_cannot_be_read(api_client):
    audit = build_audit(COMPLETED_PLAN)
    for params, field in (({"disagrees": "group"}, "disagrees"), ({"group": "icl_a"}, "group"),
                          ({"group": "HIGH_AQ"}, "group")):
        response = api_client.get(f"/api/audits/{audit.id}/judged-replies/", params)
        assert response.status_code == 400 and field in response.json(), (params, response.content)
