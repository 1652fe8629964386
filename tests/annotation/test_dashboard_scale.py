"""The study dashboard at seed 000's size (50 annotators × 2,121 items, tests/scale_study.py): every long list
is counted first and read a page at a time with a filter, in a fixed number of queries; bad paging parameters
answer 400 naming them. Its server time is measured by benchmarks/dashboard_scale.py, its height and load time
in Chromium by tests/browser/test_dashboard_scale.py."""
from __future__ import annotations

import re

import pytest
from django.test import Client

from annotation.models import ItemGroundTruth
from tests.scale_study import scale_study

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(researcher) -> Client:
    client = Client()
    client.force_login(researcher[0])
    return client


def _rows(html: str, list_id: str) -> list[str]:
    table = html[html.index(f'<table id="{list_id}"'):]
    return re.findall(r'<tr data-item="([^"]+)">', table[:table.index("</table>")])


def test_a_study_without_weights_lists_its_2121_items_a_page_at_a_time(staff, django_assert_max_num_queries):
    study = scale_study(with_scores=False)
    url = f"/studies/{study.pk}/dashboard/"
    # No annotator has a weight, so no item has a weighted label: all 2,121 are in the ties list.
    assert ItemGroundTruth.objects.filter(item__study=study, weighted_label__isnull=True).count() == 2121
    with django_assert_max_num_queries(21):  # the monitor's 5 among them
        response = staff.get(url)
    html = response.content.decode()
    assert "Items without a label on one side (ties) (2121)" in html
    assert _rows(html, "ties") == [f"sim-{n:04d}" for n in range(50)]
    assert "Items 1–50 of 2121, in study order; page 1 of 43." in html
    assert '<details id="ties-details">' in html  # collapsed: counts first
    assert 'href="?ties_page=2#ties-section"' in html and 'id="ties-previous"' not in html

    # The last page (2,121 = 42 × 50 + 21), open because it was asked for; the other list's page is kept.
    response = staff.get(url, {"ties_page": 43, "disagreements_page": 1})
    html = response.content.decode()
    assert _rows(html, "ties") == [f"sim-{n:04d}" for n in range(2100, 2121)]
    assert '<details id="ties-details" open>' in html and 'id="ties-next"' not in html
    assert 'href="?ties_page=42&amp;disagreements_page=1#ties-section"' in html

    # The filter: sentences containing "sentence 212" are 212 and 2120 (of "Simulated sentence n.").
    with django_assert_max_num_queries(22):
        html = staff.get(url, {"ties_q": "sentence 212"}).content.decode()
    assert _rows(html, "ties") == ["sim-0212", "sim-2120"]
    assert "Items 1–2 of 2 containing “sentence 212”, in study order; page 1 of 1." in html
    assert 'name="ties_q" value="sentence 212"' in html


@pytest.mark.parametrize(("params", "message"), [
    ({"ties_page": "x"}, "ties_page must be a whole number from 1, not 'x'."),
    ({"ties_page": "0"}, "ties_page must be a whole number from 1, not '0'."),
    ({"disagreements_page": "²"}, "disagreements_page must be a whole number from 1, not '²'."),
    ({"ties_page": "44"}, "ties_page 44 is beyond the last page of this list (43)."),
    ({"ties_q": "x" * 201}, "ties_q must be at most 200 characters of text."),
])
def test_bad_paging_parameters_answer_400_naming_them(staff, params, message):
    study = scale_study(with_scores=False, n_items=2121, n_participants=5)
    response = staff.get(f"/studies/{study.pk}/dashboard/", params)
    assert response.status_code == 400 and response.content.decode() == message


def test_the_weighted_study_keeps_its_lists_short_and_its_annotators_collapsed(staff):
    study = scale_study()
    html = staff.get(f"/studies/{study.pk}/dashboard/").content.decode()
    truth = ItemGroundTruth.objects.filter(item__study=study)
    n_ties = truth.filter(majority_label__isnull=True).count() + truth.filter(
        majority_label__isnull=False, weighted_label__isnull=True).count()
    assert f"Items without a label on one side (ties) ({n_ties})" in html
    assert len(_rows(html, "ties")) == min(n_ties, 50) and len(_rows(html, "disagreements")) <= 50
    assert '<details id="annotators-details">' in html  # 50 rows: collapsed under their count
    annotators = html[html.index('<table id="annotators">'):]
    assert annotators[:annotators.index("</table>")].count("<tr") == 1 + 50


def test_the_robustness_section_reads_labels_only_for_the_flips_it_shows(staff, django_assert_max_num_queries):
    from django.db import connection
    from django.utils import timezone

    from annotation.alternatives import ALTERNATIVES
    from annotation.dashboard import ROBUSTNESS_FLIP_LIMIT, robustness_context
    from annotation.models import AnalysisRun, Label

    study = scale_study()
    run = AnalysisRun.objects.get(study=study)
    items = [f"sim-{n:04d}" for n in range(2121)]
    # The worst case: every alternative flips every item, 11 × 2,121 flips; stored in reverse study order.
    run.alternatives = {
        "summary": [{"alternative": a.name, "label": a.label, "description": a.description, "n_compared": 2121,
                     "n_differ": 2121, "share_differ": 1.0, "kappa": -1.0, "n_undefined": 0} for a in ALTERNATIVES],
        "flipped": [{"item": item, "alternative": a.name, "paper_label": 1, "alternative_label": 0}
                    for a in ALTERNATIVES for item in reversed(items)],
        "settings": {"crowdkit_seed": 0}, "notes": []}
    run.alternatives_computed_at = timezone.now()
    run.save()

    executed = []

    def record(execute, sql, params, many, context):
        executed.append((sql, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        context = robustness_context(study, run, limit=ROBUSTNESS_FLIP_LIMIT)
    assert len(executed) == 2, "the items' positions, then the shown items' labels"
    label_sql, label_params = executed[1]
    assert Label._meta.db_table in label_sql and len(label_params) <= ROBUSTNESS_FLIP_LIMIT + 1
    shown = items[:ROBUSTNESS_FLIP_LIMIT]
    for row in context["rows"]:
        assert [flip["item"] for flip in row["flips"]] == shown, "the first 200 in study order"
        assert row["n_flipped"] == 2121 and row["truncated"]
    loaded = sum(len(flip["labels"]) for flip in context["rows"][0]["flips"])
    assert loaded == Label.objects.filter(item__study=study, item__external_id__in=shown).count() == 3 * 200

    with django_assert_max_num_queries(25):  # the monitor's 5 among them
        html = staff.get(f"/studies/{study.pk}/dashboard/").content.decode()
    section = html[html.index('<section id="robustness">'):]
    section = section[:section.index("</section>")]
    assert section.index('id="robustness-alternatives"') < section.index('<details class="flipped"')
    assert section.count('<details class="flipped"') == 11 and "<details class=\"flipped\" data-alternative" in section
    assert " open" not in section, "the flipped lists stay collapsed, their counts first"
    assert "Majority vote: 2121 flipped items (first 200 shown)" in section
