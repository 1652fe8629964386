"""A coding round's results page (staff only): a 12-excerpt round whose figures on the page equal hand counts,
the partial marking while coders are still coding, and the link from the audit dashboard."""
from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from coding.models import CodingRound
from tests.auditapp.test_audit_dashboard_view import COMPLETED_PLAN, build_audit
from tests.coding.test_exports import build_round
from tests.factories import make_researcher

pytestmark = pytest.mark.django_db

# Excerpts 1–12; odd ones are "cot", even ones "zs" (build_round). ann and bob share the thematic lens; cy codes the
# linguistic one. Excerpts not listed get no code; every excerpt is confirmed unless the test says otherwise.
ANN = {1: ["WORDING", "STEREOTYPES"], 2: ["WORDING"], 3: ["WORDING", "STEREOTYPES", "TONE"], 5: ["STEREOTYPES"],
       6: ["WORDING", "STEREOTYPES"]}
BOB = {1: ["WORDING", "STEREOTYPES"], 3: ["WORDING", "STEREOTYPES", "TONE"], 4: ["TONE"], 5: ["STEREOTYPES"],
       6: ["WORDING", "STEREOTYPES"]}
CY = {1: ["STEREOTYPES"], 5: ["STEREOTYPES"], 7: ["identity-first language"]}


def twelve_excerpt_round(**confirmed) -> CodingRound:
    everything = set(range(1, 13))
    return build_round(n_excerpts=12, coders={"ann": 0, "bob": 0, "cy": 1},
                       codings={"ann": ANN, "bob": BOB, "cy": CY},
                       confirmed={"ann": everything, "bob": everything, "cy": everything, **confirmed},
                       mappings={"Stereotypes": [(0, "STEREOTYPES"), (1, "STEREOTYPES")]})


@pytest.fixture
def staff():
    user, _ = make_researcher("round-page-researcher")
    client = Client()
    client.force_login(user)
    return client


def segment(html: str, start: str, end: str | None = None) -> str:
    begin = html.index(start)
    return html[begin:html.index(end, begin) if end else None]


def squash(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_the_page_shows_the_hand_counted_figures(staff):
    coding_round = twelve_excerpt_round()
    response = staff.get(reverse("coding-round-results", args=[coding_round.id]))
    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="partial"' not in html
    ann = squash(segment(html, 'class="coder-figures" data-coder="ann"', 'class="coder-figures" data-coder="bob"'))
    # ann: WORDING on 1, 2, 3, 6 → 4 of 12 = 33%; STEREOTYPES on 1, 3, 5, 6 → 33%; TONE on 3 → 8%; INTENT 0%.
    for text in ("WORDING 33% (4 of 12)", "STEREOTYPES 33% (4 of 12)", "TONE 8% (1 of 12)", "INTENT 0% (0 of 12)"):
        assert text in ann, text
    # Two or more codes on 1, 3, 6 → 3 of 12 = 25%; W+S on 1, 3, 6 (n = 3) first.
    assert "Two or more codes: 25% (3 of 12)" in ann
    assert "Most common co-occurrences: WORDING + STEREOTYPES (n = 3)" in ann
    # By condition (cot = odd, zs = even, 6 each): TONE on 3 only → cot 17% (1), zs 0% (0).
    by_condition = segment(html, 'class="by-stratum" data-kind="condition"', "</table>")
    tone = segment(by_condition, 'data-code="TONE"', "</tr>")
    assert re.findall(r'data-level="(\w+)" data-count="(\d+)"', tone) == [("cot", "1"), ("zs", "0")]
    # Coders and progress.
    assert "12 of 12 confirmed" in squash(segment(html, 'id="coders"', "</table>"))
    # Agreement is shown for the thematic lens only (two coders), with α and κ per code.
    lens_1, lens_2 = segment(html, 'id="lens-1"', 'id="lens-2"'), segment(html, 'id="lens-2"', "</section>")
    assert 'class="agreement"' in lens_1 and 'class="agreement"' not in lens_2
    # Same code sets except on 2 (W vs none) and 4 (none vs TONE) → 10 of 12 = 83%.
    assert "ann and bob: 83% of 12" in squash(lens_1)
    # INTENT: absent everywhere for both → undefined with its note.
    intent = squash(segment(segment(lens_1, 'class="agreement"'), 'data-code="INTENT"', "</tr>"))
    assert "— undefined: no variance" in intent
    # Convergence: STEREOTYPES by ann and bob on 1, 3, 5, 6, by cy on 1, 5: all present 2, all absent 8 (2, 4, 7–12),
    # diverging on 3 and 6 → 10 of 12 = 83%.
    row = squash(segment(html, 'data-mapping="Stereotypes"', "</tr>"))
    assert "Lens 2, cy (STEREOTYPES): 17% (2 of 12)" in row
    assert " 12 2 8 83% " in row and "#3: given by ann, bob" in row and "#6: given by ann, bob" in row
    # Exports and the chart's data.
    assert reverse("api:coding-round-codings", args=[coding_round.id]) + "?format=csv" in html
    assert 'id="round-data"' in html and "coding/round_results.js" in html


def test_figures_are_marked_partial_while_a_coder_is_still_coding(staff):
    coding_round = twelve_excerpt_round(cy={1, 2, 3, 4, 5})
    html = staff.get(reverse("coding-round-results", args=[coding_round.id])).content.decode()
    assert 'id="partial"' in html and "is-partial" in html
    assert "5 of 12 confirmed" in squash(segment(html, 'data-coder="cy"', "</tr>"))
    # cy's shares are over the 5 confirmed: STEREOTYPES on 1, 5 → 40%; excerpt 7's code is not yet counted.
    cy = squash(segment(html, 'class="coder-figures" data-coder="cy"', "</section>"))
    assert "STEREOTYPES 40% (2 of 5)" in cy and "identity-first language 0% (0 of 5)" in cy


def test_researchers_only(staff):
    coding_round = twelve_excerpt_round()
    url = reverse("coding-round-results", args=[coding_round.id])
    assert Client().get(url).status_code == 302
    get_user_model().objects.create_user("plain", password="pw")
    client = Client()
    client.login(username="plain", password="pw")
    assert client.get(url).status_code == 302
    assert staff.get(reverse("coding-round-results", args=[coding_round.id + 1000])).status_code == 404
    assert staff.post(url).status_code == 405


def test_the_audit_dashboard_lists_its_error_analysis_rounds(staff):
    audit = build_audit(COMPLETED_PLAN, name="Audit with rounds")
    html = staff.get(reverse("audit-dashboard", args=[audit.id])).content.decode()
    assert "First" not in segment(html, 'id="coding-rounds"', "</div>")
    assert "New error-analysis round" in html
    coding_round = CodingRound.objects.create(audit=audit, name="First <pass>")
    html = staff.get(reverse("audit-dashboard", args=[audit.id])).content.decode()
    links = segment(html, 'id="coding-rounds"', "</div>")
    assert "Error-analysis rounds" in links
    assert f'href="{reverse("coding-round-results", args=[coding_round.id])}">First &lt;pass&gt;</a>' in links


def test_a_round_without_coders_or_codings_renders_and_reads_in_bounded_queries(staff, django_assert_max_num_queries):
    empty = build_round(n_excerpts=3)
    # 12 for the page, 1 for the newest worker heartbeat that every researcher's page reads.
    with django_assert_max_num_queries(13):
        response = staff.get(reverse("coding-round-results", args=[empty.id]))
    html = response.content.decode()
    assert response.status_code == 200 and 'id="partial"' in html and "No coder has been invited" in html
    bare = CodingRound.objects.create(audit=empty.audit, name="Not drawn yet")
    assert staff.get(reverse("coding-round-results", args=[bare.id])).status_code == 200
    big = twelve_excerpt_round()
    with django_assert_max_num_queries(13):
        assert staff.get(reverse("coding-round-results", args=[big.id])).status_code == 200
