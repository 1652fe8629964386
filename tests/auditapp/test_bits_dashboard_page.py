"""The BITS dashboard page (templates/auditapp/bits_dashboard.html) rendered with a real analysis: the toy
corpus and scorer of tests/auditapp/test_bits_analysis.py, whose docstring and comments work the figures, plus
an imported toxicity scorer with a researcher-entered name that must show as text.

``bits_audit`` stores an audit as the engine leaves it (corpus, a model, a recorded scorer, the analysis) and
the page is rendered with the paradigm's own data (its adapter); tests/browser/test_bits_dashboard.py shares it.
"""
from __future__ import annotations

import json

import pandas as pd
import pytest
from django.template.loader import render_to_string

from auditapp.corpus_services import corpus_store
from auditapp.engine import registry
from auditapp.models import Audit, AuditModel, LLMEndpoint, RecordedScorer
from auditapp.paradigms.bits.analysis import AnalysisSettings, analyse
from auditapp.paradigms.bits.corpus import corpus_frame, generate
from auditapp.paradigms.bits.units import sentence_units
from tests.auditapp.test_bits_analysis import TOY, toy_scores
from tests.auditapp.test_self_report_dashboard_view import page_text

HOSTILE_SCORER = "<b>tox</b>"


def toy_analysis() -> dict:
    """The stored analysis of the toy scorer and an imported toxicity scorer giving the same values."""
    corpus = corpus_frame(generate(TOY))
    scores = toy_scores(corpus)
    scores = pd.concat([scores, scores.assign(scorer=HOSTILE_SCORER, kind="toxicity", imported=True)])
    return analyse(corpus, scores, settings=AnalysisSettings()).to_dict()


def bits_audit(name: str, spec, *, status: str, analysis: dict | None, scorer: str, recorded: str,
               kinds: dict[str, str], replicates: int = 1, corpus_name: str = "Toy corpus") -> Audit:
    """A BITS audit as the engine leaves it: its corpus stored from ``spec``, one model (a local endpoint's, shown
    as ``scorer``) and one recorded scorer of the corpus (``recorded``), ``analysis`` stored as JSON."""
    corpus = corpus_store(paradigm="bits", name=corpus_name, units=sentence_units(generate(spec)),
                          provenance={"generator": "tests"})
    recorded_scorer = RecordedScorer.objects.create(corpus=corpus, name=recorded, provenance={"file": "tests"})
    endpoint = LLMEndpoint.objects.create(name=f"local {name}", protocol="local", base_url="")
    audit = Audit.objects.create(
        name=name, paradigm="bits", corpus=corpus, status=status, replicates=replicates, analysis=analysis or {},
        design={"prompt": {"name": "sentiment", "text": "{sentence}", "low": -1, "high": 1}, "batch_size": 64,
                "score_kinds": kinds, "recorded_scorers": [recorded_scorer.id], "analysis": {}})
    AuditModel.objects.create(audit=audit, endpoint=endpoint, model="vader", label=scorer)
    audit.refresh_from_db()  # the analysis as stored: JSON, NaN as null
    return audit


def render(audit: Audit) -> str:
    """The page as the dashboard view renders it (the paradigm's template and data)."""
    paradigm = registry.get("bits")
    return render_to_string(paradigm.dashboard_template, {"audit": audit, "data": paradigm.dashboard_data(audit)})


def toy_audit(*, status: str, analysis: dict | None) -> Audit:
    return bits_audit("BITS toy", TOY, status=status, analysis=analysis, scorer="toy", recorded=HOSTILE_SCORER,
                      kinds={"toy": "sentiment", HOSTILE_SCORER: "toxicity"})


@pytest.mark.django_db
def test_the_page_shows_the_papers_tables_from_a_stored_analysis():
    audit = toy_audit(status=Audit.Status.COMPLETED, analysis=toy_analysis())
    html = render(audit)
    page = page_text(html)
    assert '<label for="sentence-template">Template</label>' in html
    rows = {attrs.get("data-scorer"): cells for attrs, cells in page.rows["table-7"] if attrs.get("data-scorer")}
    # G1 -0.5/6 = -0.08, paired t = -5.0 with 2 df, p = 0.0377: no mark; G2 1/3 = 0.33, t = 5.0, p = 0.0377
    assert rows["toy"] == ["toy", "-0.08 p = 0.038", "0.33 p = 0.038"]
    assert rows[HOSTILE_SCORER] == [f"{HOSTILE_SCORER} imported", "-0.08 p = 0.038", "0.33 p = 0.038"]
    headline = registry.get("bits").headline(audit)
    assert headline.measure == "ScoreSense (Table 7)"
    toy = {row.cell: row for row in headline.rows if row.model == "toy"}
    assert toy["G1"].value == pytest.approx(-0.5 / 6) and toy["G2"].value == pytest.approx(1 / 3)
    assert toy["G1"].note == "p = 0.038" and toy["G1"].n == 6  # the perturbed sentences of G1
    table8 = {attrs.get("data-scorer"): cells for attrs, cells in page.rows["table-8"] if attrs.get("data-scorer")}
    # LabelDist G1 0.25, G2 0.5; ScoreDev G1 0.15, G2 0, All (0.2449 + 0.2494 + 0.2160) / 3 = 0.2368
    # (test_bits_analysis.py::test_table_8_label_dist_and_score_dev)
    assert table8["toy"][1:] == ["0.25", "0.50", "0.15", "0.00", "0.24"]
    assert table8["toy"][0].startswith("toy label 1 when score > 0")
    table9 = {attrs.get("data-template"): cells for attrs, cells in page.rows["table-9"] if attrs.get("data-template")}
    # Template B: G1 (0.3 + 0.5) / 2 = 0.4, G2 0.9, control 0.5, for both scorers
    assert table9["B"] == ["B", "0.40", "0.90", "0.50", "0.40", "0.90", "0.50"]
    assert html.count('class="num extreme"') == 6  # one per scorer and template
    table10 = {attrs.get("data-term"): cells for attrs, cells in page.rows["table-10"] if attrs.get("data-term")}
    assert table10["x"] == ["G1", "x", "-0.133", "-0.133"]  # (0.1 - 0.2 - 0.3) / 3
    coverage = {attrs.get("data-scorer"): cells for attrs, cells in page.rows["coverage-table"]
                if attrs.get("data-scorer")}
    # Pairs: the 9 perturbed sentences (G1 6, G2 3), all complete, as Table 7's cells count them.
    assert coverage["toy"] == ["toy", "12", "12", "0", "1 of 24", "9", "0", "0", "—"]
    assert "ScoreSense and ScoreDev are means, not sums" in page.text("notes")
    assert "paired t-test" in page.text("notes")
    # The name is escaped everywhere: as entities in the markup, as \u003C… in the json_script block.
    assert HOSTILE_SCORER not in html
    assert "&lt;b&gt;tox&lt;/b&gt;" in html
    data = json.loads(html.split('<script id="audit-data" type="application/json">')[1].split("</script>")[0])
    assert data["analysis"]["heatmap"]["scorers"] == ["toy", HOSTILE_SCORER]
    assert 'id="bits-heatmap"' in html and 'id="distribution-1"' in html
    assert f'href="/api/audits/{audit.id}/tables/score_sense/?format=csv"' in html
    assert "static/auditapp/bits_dashboard.js" in html and "vendor/plotly/plotly.min.js" in html
    assert page.text("corpus-name") == "Toy corpus"


@pytest.mark.django_db
def test_before_the_analysis_the_page_says_so_and_loads_no_charts():
    audit = toy_audit(status=Audit.Status.RUNNING, analysis=None)
    html = render(audit)
    assert 'id="no-metrics"' in html and "No analysis yet" in html
    assert "bits_dashboard.js" not in html and "plotly" not in html and 'id="table-7"' not in html
