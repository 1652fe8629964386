"""A study's weighted-vs-majority dashboard, with the worked numbers of tests/annotation/test_study_analysis.py:
x has majority 1 and weighted 0 (ŷ = 105/224), y and z are majority ties (y weighted 1, z weighted 0)."""
from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client

from annotation import study_analysis
from annotation.dashboard import ItemListQuery, ItemListQueryError, study_dashboard_context
from annotation.models import Item, Label, StudyAnalysisSettings
from annotation.study_analysis import study_analysis_compute
from tests.factories import make_participant_user, make_study, make_worked_example_study

pytestmark = pytest.mark.django_db

@pytest.fixture
def study():
    study = make_worked_example_study()
    study_analysis_compute(study_id=study.id)
    return study


@pytest.fixture
def staff(researcher) -> Client:
    client = Client()
    client.force_login(researcher[0])
    return client


@pytest.fixture
def queued(monkeypatch) -> list[int]:
    sent: list[int] = []
    monkeypatch.setattr("tasks.analysis.study_analysis_compute_task.delay", sent.append)
    return sent


def url(study) -> str:
    return f"/studies/{study.id}/dashboard/"


def test_contingency_table_counts_majority_against_weighted(study, staff):
    response = staff.get(url(study))
    assert response.status_code == 200
    table = response.context["contingency"]
    assert table["cells"] == {"1": {"1": 0, "0": 1, "none": 0},   # x: majority 1, weighted 0
                              "0": {"1": 0, "0": 0, "none": 0},
                              "none": {"1": 1, "0": 1, "none": 0}}  # y → 1, z → 0, both majority ties
    assert (table["total"], table["agree"], table["disagree"]) == (3, 0, 1)
    assert table["column_totals"] == {"1": 1, "0": 2, "none": 0}
    html = response.content.decode()
    assert '<tr data-majority="1">' in html and '<td class="num" data-weighted="0">1</td>' in html
    assert '<td class="num total" id="contingency-total">3</td>' in html


def test_x_is_a_disagreement_with_its_labels_and_y_a_tie(study, staff):
    response = staff.get(url(study))
    disagreements, ties = response.context["disagreements"], response.context["ties"]
    assert [row.external_id for row in disagreements.rows] == ["x"] and disagreements.total == 1
    (x,) = disagreements.rows
    assert (x.majority_label, x.weighted_label, x.weighted_score) == (1, 0, pytest.approx(105 / 224))
    assert x.labels == ["P1: 1", "P2: 0", "P3: 1"]
    assert [row.external_id for row in ties.rows] == ["y", "z"] and ties.total == 2
    y = ties.rows[0]
    assert (y.majority_label, y.majority_tie, y.weighted_label) == (None, True, 1)
    assert y.labels == ["P2: 1", "P4: 0"] and y.reason == "majority tie"
    assert ties.rows[1].labels == ["P1: -1", "P3: 0", "P4: 1"]

    html = response.content.decode()
    disagreement_table = html[html.index('id="disagreements"'):html.index('id="ties"')]
    assert 'data-item="x"' in disagreement_table and "Sentence x." in disagreement_table
    assert "P1: 1" in disagreement_table and "P2: 0" in disagreement_table and "P3: 1" in disagreement_table
    assert 'data-item="y"' not in disagreement_table
    tie_table = html[html.index('id="ties"'):html.index('id="agreement"')]
    assert 'data-item="y"' in tie_table and "majority tie" in tie_table and "P4: 0" in tie_table


def test_agreement_rows_annotators_and_run_metadata(study, staff):
    response = staff.get(url(study))
    context = response.context
    scopes = [(row["scope"], row["group"]) for row in context["agreement"]]
    assert scopes[:3] == [("overall", "all"), ("team", "a"), ("team", "b")]
    assert ("psychometric group", "high_aq") in scopes
    overall = context["agreement"][0]
    assert overall["n_labels"] == 7 and overall["fleiss_kappa"] is None
    html = response.content.decode()
    assert "raters per item vary" in html[html.index('id="agreement"'):]

    rows = {a["pseudonym"]: a for a in context["annotators"]}
    assert [rows[p]["weight"] for p in ("P1", "P2", "P3", "P4")] == pytest.approx([0.25, 1.75, 22 / 17, 12 / 17])
    for row in rows.values():  # the stacked segments add up to R
        assert row["aq_part"] + row["sata_part"] + row["iat_part"] == pytest.approx(row["trust_raw"])
    assert rows["P1"]["iat_part"] == pytest.approx(1 / 9) and rows["P1"]["aq_part"] == 0
    chart = context["chart_data"]
    assert [a["pseudonym"] for a in chart["annotators"]] == ["P1", "P2", "P3", "P4"]
    assert chart["kappa"]["annotators"] == ["P1", "P2", "P3", "P4"]
    assert 'id="dashboard-data"' in html

    run = study.analysis_run
    assert f"({run.duration_ms} ms)" in html and "Last computed:" in html
    assert ("aggregation.threshold", 0.5) in context["settings_rows"]
    sets = {s["name"]: s["n"] for s in context["item_sets"]}
    assert list(sets)[:1] == ["all"] and sets["all"] == 0  # x, y and z each have a 0 and a 1
    assert '<script src="/static/vendor/plotly/plotly.min.js">' in html and "cdn" not in html.lower()


def test_item_set_sizes_count_positive_and_negative(staff):
    study = make_worked_example_study()
    StudyAnalysisSettings.objects.create(study=study, aq_high=30, aq_low=20, min_group_labels=1, icl_size=1)
    study_analysis_compute(study_id=study.id)
    sets = {s["name"]: s for s in staff.get(url(study)).context["item_sets"]}
    assert (sets["high_aq"]["n"], sets["high_aq"]["n_positive"], sets["high_aq"]["n_negative"]) == (2, 1, 1)
    assert (sets["icl_b"]["n"], sets["icl_b"]["n_positive"]) == (1, 1)


def test_the_context_takes_a_fixed_number_of_queries(study, django_assert_max_num_queries):
    with django_assert_max_num_queries(16):  # 8, one each for the robustness section's flipped items, the IAT
        # modalities and the annotators' skips, flags and changes, and the monitor's 5 (tests/annotation/test_monitor.py)
        context = study_dashboard_context(study=study)
    more = Item.objects.bulk_create([Item(study=study, external_id=f"m{n}", target=f"More {n}.", position=10 + n)
                                     for n in range(20)])
    for item in more:
        for pseudonym, value in (("P1", 1), ("P2", 0), ("P3", 1)):
            Label.objects.create(participant=study.participants.get(pseudonym=pseudonym), item=item, value=value)
    study_analysis_compute(study_id=study.id)
    with django_assert_max_num_queries(16):  # 8, one each for the robustness section's flipped items, the IAT
        # modalities and the annotators' skips, flags and changes, and the monitor's 5 (tests/annotation/test_monitor.py)
        context = study_dashboard_context(study=study)
        assert context["disagreements"].total == 21 and len(context["disagreements"].rows) == 21
        assert all(len(row.labels) == 3 for row in context["disagreements"].rows)


def test_long_lists_are_paged_with_exact_totals(study):
    context = study_dashboard_context(study=study, page_size=1)
    ties = context["ties"]
    assert [row.external_id for row in ties.rows] == ["y"] and (ties.total, ties.matching, ties.n_pages) == (2, 2, 2)
    second = study_dashboard_context(study=study, page_size=1, queries={"ties": ItemListQuery(page=2)})["ties"]
    assert [row.external_id for row in second.rows] == ["z"] and (second.first, second.last) == (2, 2)
    with pytest.raises(ItemListQueryError, match=r"ties_page 3 is beyond the last page of this list \(2\)"):
        study_dashboard_context(study=study, page_size=1, queries={"ties": ItemListQuery(page=3)})


@pytest.mark.parametrize("who", ["anonymous", "not staff"])
def test_anonymous_and_non_staff_users_go_to_the_login_page(study, who, queued):
    client = Client()
    if who == "not staff":
        client.force_login(make_participant_user())
    for response in (client.get(url(study)), client.post(url(study) + "recompute/")):
        assert response.status_code == 302
        assert response["Location"].startswith("/admin/login/?next=")
    assert queued == []


@pytest.mark.django_db(transaction=True)  # the task is sent when the request's transaction commits
def test_recompute_queues_the_task_and_a_get_never_does(study, staff, queued):
    assert staff.get(url(study)).status_code == 200
    assert queued == []
    assert staff.get(url(study) + "recompute/").status_code == 405
    assert queued == []
    response = staff.post(url(study) + "recompute/")
    assert response.status_code == 302 and response["Location"] == url(study)
    assert queued == [study.id]
    page = staff.get(response["Location"]).content.decode()
    assert "Recomputation queued: this page refreshes itself when it is done." in page
    assert "reload" not in page.lower()


def test_recompute_needs_the_csrf_token(study, researcher, queued):
    client = Client(enforce_csrf_checks=True)
    client.force_login(researcher[0])
    assert client.post(url(study) + "recompute/").status_code == 403
    assert queued == []


@pytest.mark.django_db(transaction=True)
def test_the_page_works_before_any_analysis(staff, queued):
    study = make_worked_example_study()
    response = staff.get(url(study))
    assert response.status_code == 200 and response.context["run"] is None
    html = response.content.decode()
    assert "No analysis has been computed for this study yet" in html
    assert 'id="recompute"' in html and "Compute the analysis" in html
    assert "Not computed yet." in html
    assert queued == []
    staff.post(url(study) + "recompute/")
    assert queued == [study.id]
    staff.post(url(study) + "recompute/")
    assert queued == [study.id], "a second request while the first waits for a worker sends nothing more"


def test_unknown_study_is_404(staff):
    assert staff.get("/studies/999999/dashboard/").status_code == 404


def test_home_links_each_study_to_its_dashboard(study, staff):
    assert f'href="{url(study)}"' in staff.get("/").content.decode()


def test_plotly_is_vendored_with_its_licence():
    vendor = Path(settings.BASE_DIR) / "static" / "vendor"
    assert (vendor / "plotly" / "plotly.min.js").read_text(encoding="utf-8")[:200].count("plotly.js v") == 1
    assert "MIT License" in (vendor / "plotly" / "LICENSE").read_text(encoding="utf-8")
    assert "plotly.js-dist-min" in (vendor / "README.md").read_text(encoding="utf-8")


def test_an_analysis_of_a_study_without_labels_still_renders(staff):
    study = make_study()
    study_analysis_compute(study_id=study.id)
    response = staff.get(url(study))
    assert response.status_code == 200 and response.context["contingency"]["total"] == 0
    assert "No annotator has scores." in response.content.decode()


@pytest.mark.django_db(transaction=True)
def test_the_page_says_when_a_recomputation_waits_or_failed(staff, queued, monkeypatch):
    study = make_worked_example_study()
    assert 'id="analysis-state"' not in staff.get(url(study)).content.decode()
    staff.post(url(study) + "recompute/")
    assert "A recomputation is waiting for a worker; this page refreshes itself" in staff.get(url(study)).content.decode()

    def broken(*, study_id):
        raise RuntimeError("disk full")

    monkeypatch.setattr(study_analysis, "study_analysis_compute", broken)
    with pytest.raises(RuntimeError):
        study_analysis.study_analysis_run(study_id=study.id)
    assert "The last recomputation failed: RuntimeError: disk full" in staff.get(url(study)).content.decode()
