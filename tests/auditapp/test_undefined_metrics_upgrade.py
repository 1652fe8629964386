"""The upgrade step for classification audits analysed before undefined metrics had notes (they stored 0.0 with no
``<metric>_note`` key): it analyses them again, so they show "undefined" with the reason, and leaves audits analysed
with notes as they are."""
from __future__ import annotations

import pytest

from auditapp import upgrade_steps
from auditapp.models import Audit, AuditMetric
from tests.auditapp.test_undefined_metrics_views import METRICS, NO_REFERENCE, planted_audit


def as_before_notes(audit: Audit) -> None:
    """Rewrite the audit's stored results in the shape analyses had before notes: no ``_note`` key, 0.0 for an
    undefined metric or Δκ (scikit-learn's zero_division=0)."""
    for metric in AuditMetric.objects.filter(audit=audit):
        metric.values = {key: (0.0 if key in METRICS and value is None else value)
                         for key, value in metric.values.items() if not key.endswith("_note")}
        metric.save(update_fields=["values"])
    gap = audit.analysis["kappa_gap"]
    gap["cells"] = [{key: (0.0 if key == "delta_kappa" and value is None else value)
                     for key, value in cell.items() if not key.endswith("_note")} for cell in gap["cells"]]
    Audit.objects.filter(pk=audit.pk).update(analysis={**audit.analysis, "kappa_gap": gap})


@pytest.mark.django_db
def test_audits_analysed_before_notes_are_analysed_again_and_others_are_left():
    old = planted_audit([None] * 4, [0, 1, 0, 1], {"zs": [0, 0, 0, 0]})
    new = planted_audit([None] * 4, [0, 1, 0, 1], {"zs": [0, 0, 0, 0]})
    as_before_notes(old)
    weighted = AuditMetric.objects.get(audit=old, reference="weighted")
    assert weighted.values["n"] == 0 and weighted.values["f1"] == 0.0  # what such an audit showed
    new_values = {m.reference: m.values for m in AuditMetric.objects.filter(audit=new)}
    new_analysed_at = Audit.objects.get(pk=new.pk).analysed_at

    assert upgrade_steps.classification_audits_without_notes() == [old.id]
    assert upgrade_steps.analyse_again(upgrade_steps.classification_audits_without_notes()) == "1 audits analysed again"

    weighted = AuditMetric.objects.get(audit=old, reference="weighted").values
    for name in METRICS:
        assert weighted[name] is None and weighted[f"{name}_note"] == NO_REFERENCE
    majority = AuditMetric.objects.get(audit=old, reference="majority").values
    # The model never predicts 1: precision (tp + fp = 0), F1 stays 0 (2·tp + fp + fn = 2 > 0), accuracy 0.5.
    assert majority["precision"] is None and majority["precision_note"].startswith("no predicted positives")
    assert majority["f1"] == 0.0 and majority["accuracy"] == 0.5
    old.refresh_from_db()
    assert old.analysis["kappa_gap"]["cells"][0]["delta_kappa"] is None
    assert old.analysis["kappa_gap"]["cells"][0]["delta_kappa_note"]
    assert old.status == Audit.Status.COMPLETED

    assert {m.reference: m.values for m in AuditMetric.objects.filter(audit=new)} == new_values
    assert Audit.objects.get(pk=new.pk).analysed_at == new_analysed_at
    assert upgrade_steps.classification_audits_without_notes() == []
