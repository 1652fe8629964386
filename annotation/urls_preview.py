"""URLs of a study's preview as a participant (annotation.preview_views), under /studies/<id>/preview/."""
from django.urls import path

from annotation import preview_views as views

app_name = "study-preview"
PREFIX = "studies/<int:study_id>/preview/"

urlpatterns = [
    path(PREFIX, views.consent, name="consent"),
    path(PREFIX + "questionnaire/<int:instrument_id>/", views.questionnaire, name="questionnaire"),
    path(PREFIX + "questionnaire/<int:instrument_id>/answer/", views.answer, name="answer"),
    path(PREFIX + "iat/", views.iat, name="iat"),
    path(PREFIX + "iat/block/", views.iat_block, name="iat-block"),
    path(PREFIX + "instructions/", views.instructions, name="instructions"),
    path(PREFIX + "label/", views.label, name="label"),
    path(PREFIX + "done/", views.done, name="done"),
]
