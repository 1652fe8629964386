"""The BITS paradigm's entry in the registry (:mod:`auditapp.engine.registry`): its launch body and admin form,
its request builder, analysis, dashboard and named tables (seed 001 Tables 7–10, Figure 1, every score)."""
from __future__ import annotations

from django import forms
from django.urls import path
from rest_framework import serializers

from auditapp.api.launch import ModelChoiceSerializer, model_choices, settings_serializer
from auditapp.engine import registry
from auditapp.engine.launch_settings import Setting
from auditapp.launch_forms import launch_form_base
from auditapp.models import Audit, Corpus, RecordedScorer, distinct_model_names
from auditapp.paradigms.bits import LABEL
from auditapp.paradigms.bits import analysis as bits_analysis
from auditapp.paradigms.bits import selectors as bits_selectors
from auditapp.paradigms.bits import services as bits_services
from auditapp.paradigms.bits.admin import register_admin as register_corpus_admin
from auditapp.paradigms.bits.comparability import comparability
from auditapp.paradigms.bits.corpora import bits_corpus_generate
from auditapp.paradigms.bits.llm_scoring import ANSWER_SCHEMA, DEFAULT_PROMPTS, ScorePrompt
from auditapp.paradigms.bits.pairing import stored_report
from auditapp.paradigms.bits.posts import report_for_page
from auditapp.paradigms.bits.requests import MAX_BATCH_SIZE
from auditapp.paradigms.bits.sensitivity import T_TESTS
from common.api.exports import stored_analysis_table
from common.export_rows import Export

NAME = bits_services.PARADIGM
SETTINGS = (
    Setting("score_kinds", "mapping", default={}, choices=tuple((kind, kind) for kind in bits_services.SCORE_KINDS),
            help='Scorer name → vader, sentiment or toxicity, e.g. {"Perspective": "toxicity"}: which default label '
                 "rule its scores take (default: VADER's for vader, the prompt's for chat models, toxicity for an "
                 "HTTP JSON scorer whose scale starts at 0, sentiment otherwise, recorded scorers included)."),
    Setting("batch_size", "integer", default=bits_services.DEFAULT_BATCH_SIZE, minimum=1, maximum=MAX_BATCH_SIZE,
            help="Sentences per request of a local scorer."),
)


class PromptSerializer(serializers.Serializer):
    """A chat model's scoring prompt: one of ours by name, or the researcher's own text and scale."""

    name = serializers.CharField(max_length=100, default="sentiment")
    text = serializers.CharField(required=False, max_length=20000,
                                 help_text="With {sentence} once; omit to use our prompt of that name.")
    low = serializers.FloatField(required=False)
    high = serializers.FloatField(required=False)

    def validate(self, data):
        if "text" not in data:
            if data["name"] not in DEFAULT_PROMPTS:
                raise serializers.ValidationError(
                    f"no prompt named {data['name']!r}; ours: {', '.join(DEFAULT_PROMPTS)}, or give its text")
            return DEFAULT_PROMPTS[data["name"]]
        missing = [field for field in ("low", "high") if field not in data]
        if missing:
            raise serializers.ValidationError(f"a prompt's text needs its scale: {', '.join(missing)}")
        prompt = ScorePrompt(name=data["name"], text=data["text"], low=data["low"], high=data["high"])
        if prompt.problems():
            raise serializers.ValidationError(prompt.problems())
        return prompt


class BitsLaunchSerializer(settings_serializer(SETTINGS)):
    """The body of ``POST /api/audits/`` for a perturbation-sensitivity audit (seed 001)."""

    paradigm = serializers.ChoiceField(choices=registry.choices())
    models = ModelChoiceSerializer(many=True, required=False, default=list,
                                   help_text="Scorers asked by the engine: local (vader, textblob), HTTP JSON "
                                             "scorers, chat models.")
    corpus = serializers.PrimaryKeyRelatedField(queryset=Corpus.objects.all(), required=False, allow_null=True,
                                                default=None,
                                                help_text="A stored corpus (GET /api/corpora/); omit for the "
                                                          "default corpus of seed 001's Tables 3–5.")
    recorded_scorers = serializers.PrimaryKeyRelatedField(queryset=RecordedScorer.objects.all(), many=True,
                                                          default=list,
                                                          help_text="Scores imported with the corpus, by id.")
    prompt = PromptSerializer(default=dict, help_text="How chat models are asked for a score.")
    analysis = serializers.DictField(default=dict, help_text=bits_analysis.AnalysisSettings.__doc__)


def launch(values: dict, *, created_by=None) -> Audit:
    values = dict(values)
    values.pop("paradigm", None)
    prompt = values.pop("prompt")
    return bits_services.bits_audit_create(
        models=model_choices(values.pop("models")), created_by=created_by,
        prompt=prompt if isinstance(prompt, ScorePrompt) else DEFAULT_PROMPTS["sentiment"], **values)


class BitsLaunchForm(launch_form_base(SETTINGS, accepts=bits_services.ACCEPTS)):
    """Launch a perturbation-sensitivity audit (seed 001): scorers × the corpus's sentences."""

    corpus = forms.ModelChoiceField(queryset=Corpus.objects.filter(paradigm=NAME), required=False,
                                    empty_label="the default corpus (seed 001 Tables 3–5)")
    recorded_scorers = forms.ModelMultipleChoiceField(
        queryset=RecordedScorer.objects.filter(corpus__paradigm=NAME), required=False,
        widget=forms.CheckboxSelectMultiple, help_text="Scores imported with the chosen corpus.")
    prompt = forms.ChoiceField(choices=[(name, name) for name in DEFAULT_PROMPTS], initial="sentiment",
                               help_text="How chat models are asked for a score (ours; see the manifest).")
    t_test = forms.ChoiceField(choices=[(test, test) for test in T_TESTS], initial=T_TESTS[0],
                               help_text="paired: each sentence against its own control; welch: the group's "
                                         "scores against the control's, unpaired.")

    class Meta:
        model = Audit
        fields = ("name", "replicates", "seed", "use_cache", "error_budget", "parallel_tasks")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["models"].required = False

    def launch_arguments(self) -> dict:
        data = self.cleaned_data
        return {"models": self.model_choices(), "corpus": data["corpus"],
                "recorded_scorers": list(data["recorded_scorers"]), "prompt": DEFAULT_PROMPTS[data["prompt"]],
                "analysis": {"t_test": data["t_test"]}, **self.setting_values(),
                "replicates": data["replicates"], "error_budget": data["error_budget"]}

    def clean(self):
        data = super().clean()
        if not self.errors:
            arguments = self.launch_arguments()
            for problem in bits_services.bits_problems(
                    corpus=arguments["corpus"], models=arguments["models"], recorded=arguments["recorded_scorers"],
                    prompt=arguments["prompt"], score_kinds=arguments["score_kinds"], batch_size=arguments["batch_size"],
                    analysis=arguments["analysis"], replicates=arguments["replicates"],
                    error_budget=arguments["error_budget"]):
                self.add_error(None, problem)
        return data


def launch_from_form(form: BitsLaunchForm, user) -> Audit:
    data = form.cleaned_data
    return bits_services.bits_audit_create(name=data["name"], seed=data["seed"], use_cache=data["use_cache"],
                                           parallel_tasks=data["parallel_tasks"], created_by=user,
                                           **form.launch_arguments())


def cells(audit: Audit) -> list[tuple[str, str]]:
    """One progress column per scorer: its requests (a local scorer's hold a batch of sentences each)."""
    return [(bits_services.CONDITION, "Scoring requests")]


def provenance_text(provenance: dict) -> str:
    """Where a corpus came from, in words (the whole record is in the manifest and GET /api/corpora/{id}/)."""
    if provenance.get("generator") == "bits":
        return ("generated from seed 001's Tables 3–5" if provenance.get("paper_tables")
                else f"generated from a spec (sha256 {str(provenance.get('spec_hash', ''))[:12]})")
    files = provenance.get("files") or {}
    if provenance.get("generator") == "posts":
        report, texts = provenance.get("report") or {}, files.get("texts") or {}
        return (f"your texts perturbed (seed 001 §3.1): {texts.get('file')} (sha256 "
                f"{str(texts.get('sha256', ''))[:12]}), {report.get('posts', 0)} texts with a mention, "
                f"{report.get('skipped', 0)} without")
    if files:
        return "uploaded: " + ", ".join(f"{entry.get('file')} (sha256 {str(entry.get('sha256', ''))[:12]})"
                                        for entry in files.values() if isinstance(entry, dict))
    return str(provenance.get("snapshot_of") or provenance.get("generator") or "")


def dashboard_data(audit: Audit) -> dict:
    """Everything the BITS dashboard draws: the header's keys (as every paradigm's), the corpus (with an uploaded
    one's pairing report and warnings), the scorers, once analysed the analysis's payload
    (:func:`auditapp.paradigms.bits.analysis.dashboard_payload`), and what the error browser's filters can name
    (``judged``: :func:`auditapp.paradigms.bits.selectors.judged_choices`)."""
    corpus = audit.corpus
    models = list(audit.models.all())
    names = distinct_model_names(models)
    kinds = audit.design.get("score_kinds", {})
    recorded = bits_services.recorded_scorers_of(audit)
    return {
        "audit": {"id": audit.id, "name": audit.name, "paradigm": audit.paradigm, "status": audit.status,
                  "status_label": audit.get_status_display(), "status_reason": audit.status_reason,
                  "n_requests": audit.n_requests, "analysed": bool(audit.analysis)},
        "models": audit.models_listing(),
        "conditions": [{"code": code, "name": name} for code, name in cells(audit)],
        "corpus": {"id": corpus.id, "name": corpus.name, "n_units": corpus.n_units,
                   "content_hash": corpus.content_hash, "provenance": provenance_text(corpus.provenance),
                   "pairing": stored_report(corpus.provenance),
                   "warnings": list(corpus.provenance.get("warnings") or []),
                   "comparability": comparability(corpus.provenance).as_dict(),
                   "posts": (report_for_page(corpus.provenance.get("report") or {})
                             if corpus.provenance.get("generator") == "posts" else None)},
        "scorers": [{"name": names[m.id], "kind": kinds.get(m.display_name, ""), "imported": False}
                    for m in models] + [{"name": s.name, "kind": kinds.get(s.name, ""), "imported": True}
                                        for s in recorded],
        "analysis": bits_analysis.dashboard_payload(audit.analysis) if audit.analysis else None,
        "judged": bits_selectors.judged_choices(audit),
        "tables": list(TABLES),
    }


def _scores_table(audit: Audit) -> Export:
    """Every score: one row per scorer × sentence × replicate with the sentence's factors."""
    frame = bits_services.scores_frame(audit).merge(
        bits_services.corpus_units_frame(audit.corpus), left_on="unit", right_on="key", how="left")
    columns = [c for c in frame.columns if c != "key"]
    return Export(columns, list(frame[columns].astype(object).where(frame[columns].notna(), None)
                                .itertuples(index=False, name=None)))


ANALYSIS_TABLES = {
    "scorers": "Each scorer: its kind, whether it was imported, its label rule and scale.",
    "score_sense": "Table 7: ScoreSense per scorer × group, with the t-test against the control (t, df, exact p, "
                   "the paper's marks) and the counts.",
    "label_dist": "Table 8: LabelDist per scorer × group (Jaccard distance of the positive sets, averaged over terms).",
    "score_dev": "Table 8: ScoreDev per scorer × group and over all groups.",
    "template_means": "Table 9: the mean score per scorer × template × group, the control included.",
    "term_sense": "Table 10: ScoreSense per scorer × group × term.",
    "group_means": "Figure 1 (and Table 6 for perturbed texts): the mean score per scorer × group, each group's "
                   "t-test against the control.",
    "source_means": "Table 6 per source: the mean score per scorer × source × group with each group's t-test "
                    "against the control within the source (perturbed texts with a source column).",
    "distributions": "The distribution of each scorer's scores per group: quartiles and histogram counts.",
    "coverage": "Per scorer: sentences, scored, missing; and Table 7's perturbed sentences: complete pairs, pairs "
                "with a missing score, sentences without a control.",
    "missing": "Per scorer × reason: how many sentences have no score.",
    "control_fills": "Per recorded scorer whose missing control scores came from another scorer "
                     "(control_scores_from): how many, and how far the two differ on the sentences both scored.",
}

TABLES = {
    "scores": registry.Table("scores", "Every score: scorer × sentence × replicate, with the sentence's factors, "
                                       "the score (or why it is missing) and whether it was imported.", _scores_table),
    **{name: registry.Table(name, description, stored_analysis_table(name))
       for name, description in ANALYSIS_TABLES.items()},
}


def api_urls() -> list:
    from auditapp.paradigms.bits.api import AuditJudgedSentencesView, CorpusUploadView, PostsPerturbView

    return [path("corpora/upload/", CorpusUploadView.as_view(), name="corpus-upload"),
            path("corpora/perturb/", PostsPerturbView.as_view(), name="corpus-perturb"),
            path("audits/<int:pk>/judged-sentences/", AuditJudgedSentencesView.as_view(),
                 name="audit-judged-sentences")]


PARADIGM = registry.Paradigm(
    name=NAME,
    label=LABEL,
    builder=bits_services.BitsRequests,
    cells=cells,
    analyse=bits_services.bits_analyse,
    settings=SETTINGS,
    launch_serializer=BitsLaunchSerializer,
    launch=launch,
    launch_form=BitsLaunchForm,
    launch_from_form=launch_from_form,
    dashboard_template="auditapp/bits_dashboard.html",
    dashboard_data=dashboard_data,
    tables=TABLES,
    accepts=bits_services.ACCEPTS,
    api_urls=api_urls,
    register_admin=register_corpus_admin,
    corpus_generate=bits_corpus_generate,
    answer_schema=lambda audit: ANSWER_SCHEMA,
    headline=lambda audit: bits_analysis.headline(audit.analysis),
)
