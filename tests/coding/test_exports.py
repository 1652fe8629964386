"""The round's exports (GET /api/coding-rounds/{id}/codings/ and /analysis/): agreement recomputed from the CSV
with ``krippendorff`` and scikit-learn equals the API's; frequencies equal counts from the CSV; a bounded number
of queries; researchers only; an unknown round is a 404.

``build_round`` (shared with test_round_page.py) creates a round with the ORM directly: the rounds' services belong
to another part of the app.
"""
from __future__ import annotations

import csv
import io
import itertools

import krippendorff
import numpy as np
import pandas as pd
import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient
from sklearn.metrics import cohen_kappa_score

from auditapp.models import Audit, AuditModel, AuditRequest, LLMEndpoint
from coding.models import Code, Codebook, CodeMapping, Coder, CodingRound, Excerpt, ExcerptCoding, RoundLens
from coding.selectors import round_codings
from tests.factories import make_researcher

pytestmark = pytest.mark.django_db

THEMATIC = ["WORDING", "STEREOTYPES", "TONE", "INTENT"]
LINGUISTIC = ["identity-first language", "STEREOTYPES"]
_counter = itertools.count(1)


def build_round(*, n_excerpts: int = 12, lenses: dict | None = None, coders: dict | None = None,
                codings: dict | None = None, confirmed: dict | None = None, mappings: dict | None = None,
                conditions: tuple = ("zs", "cot")) -> CodingRound:
    """A round over ``n_excerpts`` replies of two models × ``conditions`` (excerpt e, from 1: model m{e % 2},
    condition ``conditions[e % len]``). ``lenses``: codebook name → code names; ``coders``: name → lens index;
    ``codings``: coder → {excerpt number: code names}; ``confirmed``: coder → excerpt numbers confirmed
    (default: every excerpt the coder has codings for); ``mappings``: name → [(lens index, code name)]."""
    n = next(_counter)
    lenses = lenses or {"Thematic": THEMATIC, "Linguistic": LINGUISTIC}
    coders = coders or {}
    codings = codings or {}
    endpoint = LLMEndpoint.objects.create(name=f"coding endpoint {n}", base_url="http://127.0.0.1:9")
    audit = Audit.objects.create(name=f"Coded audit {n}", status=Audit.Status.COMPLETED)
    audit_models = [AuditModel.objects.create(audit=audit, endpoint=endpoint, model=f"m{i}", position=i)
                    for i in range(2)]
    coding_round = CodingRound.objects.create(audit=audit, name=f"Round {n}", sample_size=n_excerpts, seed=5)
    excerpts = {}
    for number in range(1, n_excerpts + 1):
        model, condition = audit_models[number % 2], conditions[number % len(conditions)]
        request = AuditRequest.objects.create(audit=audit, audit_model=model, condition=condition, order=number,
                                              unit=f"u{number}",
                                              key=f"{n:04d}{number:060d}", outcome=AuditRequest.Outcome.LABEL, label=1)
        excerpts[number] = Excerpt.objects.create(
            round=coding_round, request=request, position=number - 1, model_name=model.model, condition=condition,
            target=f"Sentence {number}.", label=1, explanation=f"Because {number}.", reference_label=0)
    round_lenses, codes = [], {}
    for position, (name, code_names) in enumerate(lenses.items()):
        codebook = Codebook.objects.create(name=name)
        round_lenses.append(RoundLens.objects.create(round=coding_round, codebook=codebook, position=position))
        for code_position, code_name in enumerate(code_names):
            codes[position, code_name] = Code.objects.create(codebook=codebook, name=code_name, position=code_position)
    now = timezone.now()
    for coder_name, lens_index in coders.items():
        coder = Coder.objects.create(round=coding_round, lens=round_lenses[lens_index], name=coder_name)
        done = (confirmed or {}).get(coder_name, set(codings.get(coder_name, {})))
        for number in sorted(set(codings.get(coder_name, {})) | set(done)):
            coding = ExcerptCoding.objects.create(coder=coder, excerpt=excerpts[number], memo=f"memo {number}",
                                                  confirmed_at=now if number in done else None)
            coding.codes.set([codes[lens_index, name] for name in codings.get(coder_name, {}).get(number, [])])
    for name, members in (mappings or {}).items():
        CodeMapping.objects.create(round=coding_round, name=name).codes.set([codes[m] for m in members])
    return coding_round


def random_round(seed: int, *, n_excerpts: int = 30) -> CodingRound:
    """Two coders of the thematic lens and one of the linguistic lens, coding at random; each leaves a few
    excerpts unconfirmed (one with codes given)."""
    rng = np.random.default_rng(seed)
    codings, confirmed = {}, {}
    for coder, names in (("ann", THEMATIC), ("bob", THEMATIC), ("cy", LINGUISTIC)):
        codings[coder] = {e: [c for c in names if rng.random() < 0.35] for e in range(1, n_excerpts + 1)}
        confirmed[coder] = {e for e in range(1, n_excerpts + 1) if rng.random() < 0.9}
    return build_round(n_excerpts=n_excerpts, coders={"ann": 0, "bob": 0, "cy": 1}, codings=codings,
                       confirmed=confirmed, mappings={"Stereotypes": [(0, "STEREOTYPES"), (1, "STEREOTYPES")]})


@pytest.fixture
def staff_client():
    user, _ = make_researcher("coding-researcher")
    client = APIClient()
    client.force_authenticate(user)
    return client


def csv_frame(response) -> pd.DataFrame:
    text = b"".join(response.streaming_content).decode()
    return pd.read_csv(io.StringIO(text))


@pytest.mark.parametrize("seed", [0, 1])
def test_agreement_recomputed_from_the_csv_equals_the_api(staff_client, seed):
    coding_round = random_round(seed)
    analysis = staff_client.get(reverse("api:coding-round-analysis", args=[coding_round.id])).json()
    response = staff_client.get(reverse("api:coding-round-codings", args=[coding_round.id]), {"format": "csv"})
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    frame = csv_frame(response)
    # What an R or pandas user does: keep the confirmed rows, one coder per column, per code.
    done = frame[frame["confirmed"]]
    thematic = done[done["lens"] == 1]
    lens = analysis["lenses"][0]
    assert lens["number"] == 1 and [c["coder"] for c in lens["coders"]] == ["ann", "bob"]
    for entry in lens["agreement"]["codes"]:
        wide = thematic.pivot(index="excerpt", columns="coder", values=f"lens1:{entry['code']}")
        reliability = wide.reindex(columns=["ann", "bob"]).to_numpy(dtype=float).T
        assert entry["alpha"] == pytest.approx(krippendorff.alpha(reliability_data=reliability,
                                                                  level_of_measurement="nominal"), abs=1e-12)
        shared = wide.dropna()
        [pair] = entry["kappa"]
        assert pair["n_shared"] == len(shared)
        assert pair["kappa"] == pytest.approx(cohen_kappa_score(shared["ann"], shared["bob"]), abs=1e-12)
    # Frequencies: the confirmed rows' column sums over their count.
    for coder in lens["coders"]:
        rows = thematic[thematic["coder"] == coder["coder"]]
        assert coder["n_coded"] == len(rows)
        assert [f["count"] for f in coder["frequencies"]] == [int(rows[f"lens1:{c}"].sum()) for c in THEMATIC]
    # Another lens's columns are empty (NA) for a coder, not 0.
    assert thematic["lens2:STEREOTYPES"].isna().all()
    assert analysis["partial"] is True


def test_the_codings_rows_hold_what_each_coder_gave(staff_client):
    coding_round = build_round(n_excerpts=4, coders={"ann": 0, "cy": 1},
                               codings={"ann": {1: ["TONE", "WORDING"], 2: ["TONE"]}, "cy": {1: ["STEREOTYPES"]}},
                               confirmed={"ann": {1}, "cy": {1}})
    body = staff_client.get(reverse("api:coding-round-codings", args=[coding_round.id])).json()
    rows = body["results"]
    request = Excerpt.objects.get(round=coding_round, position=0).request_id
    assert [(r["coder"], r["lens"], r["excerpt"], r["confirmed"], r["codes"]) for r in rows] == [
        ("ann", 1, 1, True, ["WORDING", "TONE"]),     # codebook order, not the order given
        ("ann", 1, 2, False, ["TONE"]),
        ("cy", 2, 1, True, ["STEREOTYPES"])]
    assert rows[0]["request"] == request and rows[0]["model"] == "m1" and rows[0]["condition"] == "cot"
    assert rows[0]["memo"] == "memo 1" and rows[0]["lens_name"] == "Thematic (v1)"
    response = staff_client.get(reverse("api:coding-round-codings", args=[coding_round.id]), {"format": "csv"})
    text = b"".join(response.streaming_content).decode()
    header, *lines = list(csv.reader(io.StringIO(text)))
    assert header == ["coder", "lens", "lens_name", "excerpt", "request", "model", "condition", "confirmed",
                      "confirmed_at", "memo", "lens1:WORDING", "lens1:STEREOTYPES", "lens1:TONE", "lens1:INTENT",
                      "lens2:identity-first language", "lens2:STEREOTYPES"]
    # ann has not confirmed excerpt 2: TONE ticked so far reads 1, the codes not ticked are empty, not 0.
    assert [line[10:] for line in lines] == [["1", "0", "1", "0", "", ""], ["", "", "1", "", "", ""],
                                             ["", "", "", "", "0", "1"]]


def test_the_analysis_csv_is_the_long_frequency_table(staff_client):
    coding_round = build_round(n_excerpts=4, coders={"ann": 0},
                               codings={"ann": {1: ["TONE"], 2: ["TONE", "WORDING"], 3: [], 4: []}})
    response = staff_client.get(reverse("api:coding-round-analysis", args=[coding_round.id]), {"format": "csv"})
    frame = csv_frame(response)
    overall = frame[(frame["breakdown"] == "all") & (frame["coder"] == "ann")].set_index("code")
    # TONE on 1, 2 of 4 → 0.5; WORDING on 2 → 0.25.
    assert overall.loc["TONE", ["count", "n", "share"]].tolist() == [2, 4, 0.5]
    assert overall.loc["WORDING", "share"] == 0.25
    # Conditions: excerpt e has conditions[e % 2]: cot = 1, 3; zs = 2, 4 → TONE 1 of 2 in each.
    tone = frame[(frame["breakdown"] == "condition") & (frame["code"] == "TONE")].set_index("level")
    assert tone.loc["cot", "count"] == 1 and tone.loc["zs", "count"] == 1 and tone.loc["zs", "n"] == 2
    assert not frame["partial"].any()


def test_reading_a_round_takes_a_fixed_number_of_queries(django_assert_max_num_queries, staff_client):
    small, large = random_round(0, n_excerpts=6), random_round(1, n_excerpts=40)
    for coding_round in (small, large):
        with django_assert_max_num_queries(8):
            round_codings(coding_round)
        # The API adds the session's user, the round itself and the access log's entry of the export.
        with django_assert_max_num_queries(11):
            assert staff_client.get(reverse("api:coding-round-analysis", args=[coding_round.id])).status_code == 200
        with django_assert_max_num_queries(11):
            response = staff_client.get(reverse("api:coding-round-codings", args=[coding_round.id]),
                                        {"format": "csv"})
            b"".join(response.streaming_content)
        with django_assert_max_num_queries(11):
            assert staff_client.get(reverse("api:coding-round-codings", args=[coding_round.id])).status_code == 200


@pytest.mark.parametrize("name", ["coding-round-codings", "coding-round-analysis"])
def test_researchers_only_and_unknown_rounds_are_404(staff_client, name):
    coding_round = build_round(n_excerpts=2, coders={"ann": 0}, codings={"ann": {1: ["TONE"]}})
    url = reverse(f"api:{name}", args=[coding_round.id])
    assert APIClient().get(url).status_code == 401
    participant = APIClient()
    from django.contrib.auth import get_user_model
    participant.force_authenticate(get_user_model().objects.create_user("not-staff", password="x"))
    assert participant.get(url).status_code == 403
    assert participant.get(url, {"format": "csv"}).status_code == 403
    assert staff_client.get(reverse(f"api:{name}", args=[coding_round.id + 1000])).status_code == 404
    assert staff_client.get(url).status_code == 200


def test_a_session_without_staff_cannot_read_the_codings():
    coding_round = build_round(n_excerpts=2, coders={"ann": 0}, codings={"ann": {1: ["TONE"]}})
    from django.contrib.auth import get_user_model
    get_user_model().objects.create_user("coder-only", password="pw")
    client = Client()
    client.login(username="coder-only", password="pw")
    assert client.get(reverse("api:coding-round-codings", args=[coding_round.id])).status_code == 403


def test_a_round_not_drawn_yet_exports_empty_tables(staff_client):
    coding_round = CodingRound.objects.create(audit=build_round(n_excerpts=1).audit, name="Not drawn yet")
    analysis = staff_client.get(reverse("api:coding-round-analysis", args=[coding_round.id])).json()
    assert analysis["n_excerpts"] == 0 and analysis["lenses"] == [] and analysis["partial"] is True
    response = staff_client.get(reverse("api:coding-round-codings", args=[coding_round.id]), {"format": "csv"})
    assert b"".join(response.streaming_content).decode().splitlines() == [",".join(
        ["coder", "lens", "lens_name", "excerpt", "request", "model", "condition", "confirmed", "confirmed_at", "memo"])]
    assert staff_client.get(reverse("api:coding-round-codings", args=[coding_round.id])).json()["results"] == []
