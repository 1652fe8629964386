"""REST API of the annotation domain (researchers only): studies, and their items and labels.

Participants appear only by pseudonym in a column ``participant``; items by external id in a column
``item``; so every export joins on those two columns.
"""
from __future__ import annotations

from functools import cached_property

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import generics, serializers

from annotation.models import LabelValue, Study
from annotation.selectors import study_items_export, study_labels_export, study_list
from auditapp.api.exports import ExportListAPIView


class StudySerializer(serializers.ModelSerializer):
    n_items = serializers.IntegerField(read_only=True)
    n_participants = serializers.IntegerField(read_only=True)
    n_labels = serializers.IntegerField(read_only=True)

    class Meta:
        model = Study
        fields = ("id", "slug", "name", "description", "status", "label_scheme", "annotators_per_item",
                  "content_warning", "consent_text", "n_items", "n_participants", "n_labels",
                  "created_at", "updated_at")


class ItemRowSerializer(serializers.Serializer):
    item = serializers.CharField(help_text="The item's external id.")
    target = serializers.CharField()
    preceding = serializers.CharField(allow_blank=True)
    following = serializers.CharField(allow_blank=True)
    position = serializers.IntegerField()
    metadata = serializers.JSONField()
    created_at = serializers.DateTimeField()


class LabelRowSerializer(serializers.Serializer):
    participant = serializers.CharField(help_text="The participant's pseudonym.")
    item = serializers.CharField(help_text="The item's external id.")
    value = serializers.ChoiceField(choices=LabelValue.choices)
    rationale = serializers.CharField(allow_blank=True)
    created_at = serializers.DateTimeField()


class StudyListView(generics.ListAPIView):
    """Every study with its counts of items, participants and labels."""

    serializer_class = StudySerializer
    queryset = study_list()


class StudyDetailView(generics.RetrieveAPIView):
    serializer_class = StudySerializer
    queryset = study_list()


class StudyExportView(ExportListAPIView):
    @cached_property
    def study(self) -> Study:
        return get_object_or_404(Study, pk=self.kwargs["pk"])


@extend_schema(summary="A study's items", description="One row per item, in study order.")
class StudyItemsView(StudyExportView):
    serializer_class = ItemRowSerializer

    def export_rows(self):
        return study_items_export(study=self.study)

    def export_filename(self) -> str:
        return f"{self.study.slug}-items.csv"


@extend_schema(summary="A study's labels", description="One row per label given by a participant to an item.")
class StudyLabelsView(StudyExportView):
    serializer_class = LabelRowSerializer

    def export_rows(self):
        return study_labels_export(study=self.study)

    def export_filename(self) -> str:
        return f"{self.study.slug}-labels.csv"
