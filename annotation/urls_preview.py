"""URLs of a study's preview as a participant (annotation.preview_views), under /studies/<id>/preview/."""
from django.urls import path

from annotation import preview_views as views

app_name = "study-preview"

urlpatterns = [
    path("", views.consent, name="consent"),
    path("questionnaire/<int:instrument_id>/", views.questionnaire, name="questionnaire"),
    path("questionnaire/<int:instrument_id>/answer/", views.answer, name="answer"),
    path("iat/", views.iat, name="iat"),
    path("iat/block/", views.iat_block, name="iat-block"),
    path("instructions/", views.instructions, name="instructions"),
    path("label/", views.label, name="label"),
    path("done/", views.done, name="done"),
]
