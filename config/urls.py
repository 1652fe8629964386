"""URL configuration: home page, admin, REST API and its OpenAPI schema and docs."""
from django.contrib import admin
from django.templatetags.static import static
from django.urls import include, path
from django.utils.functional import lazy
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView

from annotation import api as annotation_api
from annotation import dashboard_views
from auditapp import audit_views, views
from auditapp.api import audits as audit_api
from auditapp.api import corpora as corpus_api
from auditapp.api import overview as overview_api
from auditapp.engine import registry
from coding import api_urls as coding_api_urls
from config import api_root
from psychometrics import api as psychometrics_api
from teams import team_api

admin.site.site_header = "auditapp: researcher admin"
admin.site.site_title = "auditapp"
admin.site.index_title = "Studies, participants and audits"

api_patterns = [
    path("", api_root.ApiRootView.as_view(), name="root"),
    path("studies/", annotation_api.StudyListView.as_view(), name="study-list"),
    path("studies/<int:pk>/", annotation_api.StudyDetailView.as_view(), name="study-detail"),
    path("studies/<int:pk>/items/", annotation_api.StudyItemsView.as_view(), name="study-items"),
    path("studies/<int:pk>/participants/", annotation_api.StudyParticipantsView.as_view(),
         name="study-participants"),
    path("studies/<int:pk>/instrument-responses/", annotation_api.StudyInstrumentResponsesView.as_view(),
         name="study-instrument-responses"),
    path("studies/<int:pk>/iat-trials/", annotation_api.StudyIATTrialsView.as_view(), name="study-iat-trials"),
    path("studies/<int:pk>/ground-truth/", annotation_api.StudyGroundTruthView.as_view(), name="study-ground-truth"),
    path("studies/<int:pk>/ground-truth-alternatives/", annotation_api.StudyGroundTruthAlternativesView.as_view(),
         name="study-ground-truth-alternatives"),
    path("studies/<int:pk>/analysis/", annotation_api.StudyAnalysisView.as_view(), name="study-analysis"),
    path("studies/<int:pk>/item-sets/", annotation_api.StudyItemSetsView.as_view(), name="study-item-sets"),
    path("studies/<int:pk>/labels/", annotation_api.StudyLabelsView.as_view(), name="study-labels"),
    path("studies/<int:pk>/label-changes/", annotation_api.StudyLabelChangesView.as_view(),
         name="study-label-changes"),
    path("studies/<int:pk>/skips-and-flags/", annotation_api.StudySkipsAndFlagsView.as_view(),
         name="study-skips-and-flags"),
    path("studies/<int:pk>/imports/", annotation_api.StudyImportsView.as_view(), name="study-imports"),
    path("imports/<int:pk>/", annotation_api.ItemImportDetailView.as_view(), name="import-detail"),
    path("studies/<int:pk>/instruments/", psychometrics_api.StudyInstrumentsView.as_view(), name="study-instruments"),
    path("studies/<int:pk>/annotator-imports/", psychometrics_api.StudyAnnotatorImportsView.as_view(),
         name="study-annotator-imports"),
    path("annotator-imports/<int:pk>/", psychometrics_api.AnnotatorImportDetailView.as_view(),
         name="annotator-import-detail"),
    path("endpoints/", audit_api.EndpointListView.as_view(), name="endpoint-list"),
    path("endpoints/<int:pk>/", audit_api.EndpointDetailView.as_view(), name="endpoint-detail"),
    path("endpoints/<int:pk>/models/", audit_api.EndpointModelsView.as_view(), name="endpoint-models"),
    path("corpora/", corpus_api.CorpusListView.as_view(), name="corpus-list"),
    path("corpora/<int:pk>/", corpus_api.CorpusDetailView.as_view(), name="corpus-detail"),
    path("corpora/<int:pk>/units/", corpus_api.CorpusUnitsView.as_view(), name="corpus-units"),
    path("audits/", audit_api.AuditListView.as_view(), name="audit-list"),
    path("audits/compare/", overview_api.AuditCompareView.as_view(), name="audit-compare"),
    path("model-card/", overview_api.ModelCardView.as_view(), name="model-card"),
    path("audits/<int:pk>/", audit_api.AuditDetailView.as_view(), name="audit-detail"),
    path("audits/<int:pk>/progress/", audit_api.AuditProgressView.as_view(), name="audit-progress"),
    path("audits/<int:pk>/responses/", audit_api.AuditResponsesView.as_view(), name="audit-responses"),
    path("audits/<int:pk>/headline/", overview_api.AuditHeadlineView.as_view(), name="audit-headline"),
    path("audits/<int:pk>/parse-quality/", audit_api.AuditParseQualityView.as_view(), name="audit-parse-quality"),
    path("audits/<int:pk>/manifest/", audit_api.AuditManifestView.as_view(), name="audit-manifest"),
    path("audits/<int:pk>/tables/", audit_api.AuditTablesView.as_view(), name="audit-tables"),
    path("audits/<int:pk>/requests/<int:request_id>/", audit_api.AuditRequestDetailView.as_view(),
         name="audit-request"),
    path("audits/<int:pk>/tables/<str:name>/", audit_api.AuditTableView.as_view(), name="audit-table"),
    # A route that paradigms share (their common module's, the same object from each) is routed once.
    *dict.fromkeys(route for paradigm in registry.every() for route in paradigm.api_urls()),
    path("audits/<int:pk>/<str:action>/", audit_api.AuditActionView.as_view(), name="audit-action"),
    *coding_api_urls.patterns,
    path("teams/", team_api.TeamListView.as_view(), name="team-list"),
    path("teams/<int:pk>/", team_api.TeamDetailView.as_view(), name="team-detail"),
    path("teams/<int:pk>/members/", team_api.TeamMembersView.as_view(), name="team-members"),
    path("teams/<int:pk>/members/<int:user_id>/", team_api.TeamMemberView.as_view(), name="team-member"),
    path("teams/<int:pk>/access-log/", team_api.TeamAccessLogView.as_view(), name="team-access-log"),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api:schema"), name="docs"),
    path("redoc/", SpectacularRedocView.as_view(url_name="api:schema"), name="redoc"),
]

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", views.healthz, name="healthz"),
    # Browsers ask for /favicon.ico on pages that name no icon (an API response, a CSV): the site's icon, not a 404.
    path("favicon.ico", RedirectView.as_view(url=lazy(static, str)("site/favicon.svg")), name="favicon"),
    path("admin/", admin.site.urls),
    path("api/", include((api_patterns, "api"))),
    path("studies/<int:study_id>/dashboard/", dashboard_views.study_dashboard, name="study-dashboard"),
    path("studies/<int:study_id>/dashboard/recompute/", dashboard_views.study_dashboard_recompute,
         name="study-dashboard-recompute"),
    path("studies/<int:study_id>/dashboard/status/", dashboard_views.study_dashboard_status,
         name="study-dashboard-status"),
    path("", include("annotation.urls_preview")),
    path("audits/<int:audit_id>/dashboard/", audit_views.audit_dashboard, name="audit-dashboard"),
    path("audits/compare/", audit_views.audit_compare, name="audit-compare"),
    path("models/card/", audit_views.model_card_page, name="model-card"),
    path("", include("coding.urls")),
    path("", include("annotation.urls_participant")),
]

# Under /api/ a path no route matches is answered in JSON, as the routes' own errors are.
handler404 = views.not_found
