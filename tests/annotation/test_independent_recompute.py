"""The exported ground truth, recomputed from the exported raw answers, trials and labels by an
independent script (own arithmetic, none of the product's scoring code), matches exactly.

Only data files are shared with the product: the AQ-50 key in ../shared/instruments/aq50.json and
the partial SATA definition's keys.
"""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np
import pytest
from django.core.management import call_command

from annotation.models import Study
from annotation.study_analysis import study_analysis_compute
from tests import team_defaults

pytestmark = pytest.mark.django_db
REPO = Path(__file__).resolve().parents[2]


def export(api_client, study_id: int, name: str) -> list[dict]:
    response = api_client.get(f"/api/studies/{study_id}/{name}/?format=csv")
    return list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))


def aq_totals(responses: list[dict]) -> dict[str, int]:
    key = json.loads((REPO.parent / "shared" / "instruments" / "aq50.json").read_text())
    agree, disagree = set(key["agree_scored"]), set(key["disagree_scored"])
    totals: dict[str, int] = {}
    for r in responses:
        if r["instrument"] != "aq50":
            continue
        number, index = int(r["item_number"]), int(r["response_index"])
        point = (number in agree and index <= 1) or (number in disagree and index >= 2)
        totals[r["participant"]] = totals.get(r["participant"], 0) + int(point)
    return totals


def sata_totals(responses: list[dict]) -> dict[str, float]:
    definition = json.loads((REPO / "psychometrics" / "instruments" / "sata_partial.json").read_text())
    keys = {item["number"]: definition["keys"][item["key"]] for item in definition["items"]}
    totals: dict[str, float] = {}
    for r in responses:
        if r["instrument"] == "sata_partial":
            value = keys[int(r["item_number"])][int(r["response_index"])]
            totals[r["participant"]] = totals.get(r["participant"], 0) + value
    return totals


def d_scores(trials: list[dict]) -> dict[str, float]:
    """Greenwald, Nosek & Banaji (2003), built-in error penalty, written out again for this check."""
    by_participant: dict[str, list[dict]] = {}
    for t in trials:
        by_participant.setdefault(t["participant"], []).append(t)
    scores = {}
    for participant, rows in by_participant.items():
        pair_ds = []
        for pair in ((3, 6), (4, 7)):
            kept = [r for r in rows if int(r["block"]) in pair and float(r["latency_correct_ms"]) <= 10_000]
            latencies = np.array([float(r["latency_correct_ms"]) for r in kept])
            consistent = np.array([float(r["latency_correct_ms"]) for r in kept if r["pairing"] == "consistent"])
            inconsistent = np.array([float(r["latency_correct_ms"]) for r in kept if r["pairing"] == "inconsistent"])
            pair_ds.append((inconsistent.mean() - consistent.mean()) / latencies.std(ddof=1))
        scores[participant] = float(np.mean(pair_ds))
    return scores


def test_ground_truth_recomputed_independently_from_the_exports_matches(api_client):
    call_command("simulate_study", participants=9, items=45, seed=11, slug="independent",
                 owner_team=team_defaults.TEST_TEAM)
    study = Study.objects.get(slug="independent")
    study_analysis_compute(study_id=study.id)

    responses = export(api_client, study.id, "instrument-responses")
    people = {p["participant"]: p for p in export(api_client, study.id, "participants")}
    aq, sata, iat = aq_totals(responses), sata_totals(responses), d_scores(export(api_client, study.id, "iat-trials"))
    assert {p: float(people[p]["aq"]) for p in aq} == {p: float(v) for p, v in aq.items()}
    assert {p: float(people[p]["sata"]) for p in sata} == {p: float(v) for p, v in sata.items()}
    assert {p: float(people[p]["iat_d"]) for p in iat} == pytest.approx(iat, abs=1e-12)

    # Trust weights, seed 000 Appendix B eqs. 1-5.
    names = sorted(aq)
    x = np.array([[aq[n], sata[n], iat[n]] for n in names], dtype=float)
    norm = (x - x.min(axis=0)) / (x.max(axis=0) - x.min(axis=0))
    norm[:, 2] = 1 - norm[:, 2]
    r = norm.mean(axis=1)
    teams = np.array([people[n]["team"] for n in names])
    w = np.array([r[i] / r[teams == teams[i]].mean() for i in range(len(names))])
    weights = dict(zip(names, w, strict=True))
    assert [float(people[n]["weight"]) for n in names] == pytest.approx(list(w), abs=1e-12)

    # Eq. 6 and majority vote over 0/1 labels of non-attention-check items.
    checks = {i["item"] for i in export(api_client, study.id, "items") if i["attention_check_answer"] != ""}
    per_item: dict[str, list[tuple[str, int]]] = {}
    for label in export(api_client, study.id, "labels"):
        if label["item"] not in checks and label["value"] in ("0", "1"):
            per_item.setdefault(label["item"], []).append((label["participant"], int(label["value"])))
    exported = {g["item"]: g for g in export(api_client, study.id, "ground-truth")}
    assert set(per_item) <= set(exported)
    disagreements = 0
    for item, votes in per_item.items():
        y_hat = sum(weights[p] * v for p, v in votes) / sum(weights[p] for p, _ in votes)
        ones = sum(v for _, v in votes)
        majority = "" if 2 * ones == len(votes) else str(int(2 * ones > len(votes)))
        row = exported[item]
        assert float(row["weighted_score"]) == pytest.approx(y_hat, abs=1e-12), item
        assert row["weighted_label"] == str(int(y_hat >= 0.5)), item
        assert row["majority_label"] == majority, item
        disagreements += majority != "" and majority != row["weighted_label"]
    assert disagreements > 0  # the simulation makes weighting matter
