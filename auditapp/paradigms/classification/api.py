"""REST API of classification audits: the metrics export (``/api/audits/{id}/metrics/``, JSON and ``?format=csv``)."""
from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers

from auditapp.api.audits import AuditScoped
from auditapp.api.exports import ExportListAPIView
from auditapp.paradigms.classification.selectors import METRIC_VALUES, audit_metrics_export


def _metric_field(name: str) -> serializers.Field:
    if name.endswith("_note"):
        return serializers.CharField(allow_null=True, help_text="Why the value beside it is undefined (null when "
                                                                "it is defined).")
    if name.startswith("n"):
        return serializers.IntegerField(allow_null=True)
    return serializers.FloatField(allow_null=True, help_text="null when undefined (the _note column says why).")


def _metric_fields() -> dict:
    return {name: _metric_field(name) for name in METRIC_VALUES}


MetricRowSerializer = type("MetricRowSerializer", (serializers.Serializer,), {
    "model": serializers.CharField(), "model_label": serializers.CharField(), "condition": serializers.CharField(),
    "reference": serializers.CharField(help_text="weighted (eq. 6) or majority."),
    "unparsed": serializers.CharField(help_text="exclude or wrong: how unparsed items entered every number."),
    **_metric_fields(), "delta_kappa": serializers.FloatField(allow_null=True, help_text="κ(majority) − κ(weighted)"),
    "delta_kappa_note": serializers.CharField(allow_null=True, help_text="Why Δκ is undefined (null when defined)."),
})


@extend_schema(summary="An audit's metrics", description="One row per model × condition × reference, every "
               "metric with its bootstrap 95% CI (items resampled, seeded), counts of each outcome, and Δκ. A metric "
               "undefined over its items (n = 0, no predicted or no reference positives, κ with one class only) is "
               "null (empty in CSV), never 0, with its reason in the <metric>_note column.")
class AuditMetricsView(AuditScoped, ExportListAPIView):
    serializer_class = MetricRowSerializer

    def export_rows(self):
        return audit_metrics_export(audit=self.audit)

    def export_filename(self) -> str:
        return f"audit-{self.audit.id}-metrics.csv"
