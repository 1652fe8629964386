"""URLs of the annotator pages: everything under /p/<token>/, and the open link /join/<token>/."""
from django.urls import path

from annotation import views
from psychometrics import views as psychometrics_views

app_name = "participant"

urlpatterns = [
    path("join/<str:open_token>/", views.join, name="join"),
    path("p/<str:token>/", views.resume, name="resume"),
    path("p/<str:token>/consent/", views.consent, name="consent"),
    path("p/<str:token>/declined/", views.declined, name="declined"),
    path("p/<str:token>/questionnaire/<int:instrument_id>/", psychometrics_views.questionnaire,
         name="questionnaire"),
    path("p/<str:token>/questionnaire/<int:instrument_id>/answer/", psychometrics_views.answer, name="answer"),
    path("p/<str:token>/iat/", psychometrics_views.iat, name="iat"),
    path("p/<str:token>/iat/block/", psychometrics_views.iat_block, name="iat-block"),
    path("p/<str:token>/instructions/", views.instructions, name="instructions"),
    path("p/<str:token>/label/", views.label, name="label"),
    path("p/<str:token>/done/", views.done, name="done"),
    path("p/<str:token>/withdraw/", views.withdraw, name="withdraw"),
]

