"""Reads of the psychometrics domain: a study's annotator imports."""
from __future__ import annotations

from django.db.models import QuerySet

from annotation.models import Study
from psychometrics.models import AnnotatorImport


def study_annotator_imports(*, study: Study) -> QuerySet[AnnotatorImport]:
    """A study's annotator imports, newest first, without their file bytes."""
    return AnnotatorImport.objects.filter(study=study).defer("content").order_by("-created_at", "-id")
