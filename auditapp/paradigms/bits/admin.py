"""Admin of corpora: the list (paradigm, name, units, content hash), a read-only page per corpus (provenance,
counts per factor, recorded scorers, an uploaded corpus's pairing with its controls and its warnings), and an "Add"
page that generates a BITS corpus (seed 001's tables or a
spec), uploads one in the public BITS repository's shape, or perturbs the researcher's own texts (§3.1, Table 6:
previewed first), listing every problem when nothing could be stored.

Registered by the BITS paradigm (``Paradigm.register_admin``).
"""
from __future__ import annotations

import json

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.shortcuts import redirect
from django.template.loader import render_to_string
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from auditapp.corpus_selectors import corpus_factor_counts, corpus_recorded_scorers
from auditapp.corpus_services import CorpusError
from auditapp.models import Corpus
from auditapp.paradigms.bits.corpora import (
    bits_corpus_generate,
    bits_corpus_upload,
    bits_posts_read,
    bits_posts_store,
    posts_options,
)
from auditapp.paradigms.bits.corpus import TERM_CASES
from auditapp.paradigms.bits.pairing import stored_report
from auditapp.paradigms.bits.posts import DEFAULT_TARGET_WORDS, PostsOptions, report_for_page
from auditapp.paradigms.bits.upload import UNMATCHED_RULES
from teams.admin_scoping import TeamScopedAdmin
from teams.scoping import TeamChoiceError


class CorpusGenerateForm(forms.Form):
    name = forms.CharField(max_length=200, initial="BITS (seed 001 tables)")
    spec = forms.JSONField(
        required=False, widget=forms.Textarea(attrs={"rows": 8, "cols": 80}),
        help_text="Empty: seed 001's Tables 3–5 as printed. Else a JSON object in the shape of "
                  "auditapp/paradigms/bits/seed001_tables.json: templates [{id, text}], emotions [{emotion, "
                  "emotional_words, event_words}], groups [{group, terms}].")

    def clean_spec(self):
        spec = self.cleaned_data["spec"]
        if spec is not None and not isinstance(spec, dict):
            raise forms.ValidationError("the spec must be a JSON object")
        return spec


class CorpusUploadForm(forms.Form):
    name = forms.CharField(max_length=200)
    perturbed_file = forms.FileField(help_text="CSV, TSV, XLSX or JSON Lines: Template, Sentence, Class, SubClass (optional "
                                               "Sentiment; Control: the control's text, which overrides the pairing "
                                               "rules); every other column is a tool's score.")
    control_file = forms.FileField(help_text="CSV, TSV, XLSX or JSON Lines: Template, Sentence (optional Sentiment) and score "
                                             "columns.")
    unmatched = forms.ChoiceField(
        choices=[(rule, rule) for rule in UNMATCHED_RULES], initial="report",
        help_text="A perturbed sentence no pairing rule finds a control for: imported and reported with its "
                  "reason, or refused.")


class PostsPerturbForm(forms.Form):
    name = forms.CharField(max_length=200, required=False, help_text="Required to store (not to preview).")
    file = forms.FileField(help_text="CSV, TSV, XLSX or JSON Lines: one text a row, with an id and a text column; a "
                                     "platform (or source) column gives Table 6 per source; other columns are kept "
                                     "as each text's metadata.")
    target_words = forms.CharField(max_length=5000, initial=", ".join(DEFAULT_TARGET_WORDS),
                                   help_text="The words whose mentions are replaced, separated by commas (seed 001 "
                                             "§3.1: disability, disabled). Whole words, any case.")
    groups = forms.JSONField(required=False, widget=forms.Textarea(attrs={"rows": 4, "cols": 80}),
                             help_text='Empty: seed 001\'s Table 4 as printed. Else [{"group": "PWD:C", "terms": '
                                       '["Deaf", ...]}, ...].')
    term_case = forms.ChoiceField(choices=[(case, case) for case in TERM_CASES], initial="lower")
    id_column = forms.CharField(max_length=200, initial="id")
    text_column = forms.CharField(max_length=200, initial="text")
    source_column = forms.CharField(max_length=200, required=False,
                                    help_text="Empty: platform or source, if the file has one.")

    def clean(self):
        data = super().clean()
        if "posts-store" in self.data and not data.get("name"):
            self.add_error("name", "a name is required to store the corpus")
        return data

    def options(self) -> PostsOptions:
        data = self.cleaned_data
        return posts_options(target_words=[w for w in data["target_words"].split(",") if w.strip()],
                             groups=data["groups"], term_case=data["term_case"], id_column=data["id_column"],
                             text_column=data["text_column"], source_column=data["source_column"])


class CorpusAdmin(TeamScopedAdmin, admin.ModelAdmin):
    """Corpora are never edited: a changed corpus is a new corpus (its content hash changes)."""

    list_display = ("name", "paradigm", "n_units", "hash_prefix", "generator", "created_at")
    list_filter = ("paradigm",)
    search_fields = ("name", "content_hash")
    fields = readonly_fields = ("name", "paradigm", "n_units", "content_hash", "generator", "created_by",
                                "created_at", "units_export", "factor_counts", "recorded_scorer_list",
                                "pairing_report", "provenance_json")

    def has_change_permission(self, request, obj=None):
        return False

    @admin.display(description="content hash")
    def hash_prefix(self, corpus: Corpus) -> str:
        return corpus.content_hash[:12]

    @admin.display(description="generator")
    def generator(self, corpus: Corpus) -> str:
        return corpus.provenance.get("generator", "")

    @admin.display(description="Units")
    def units_export(self, corpus: Corpus):
        url = reverse("api:corpus-units", args=[corpus.pk])
        return format_html('<a href="{}?format=csv">CSV</a> · <a href="{}">JSON</a>', url, url)

    @admin.display(description="Units per factor")
    def factor_counts(self, corpus: Corpus):
        return format_html_join(
            "", "<p><strong>{}</strong> ({} values): {}</p>",
            ((factor["name"], factor["distinct"],
              ", ".join(f"{c['value'] or '(none)'}: {c['n']}" for c in factor["counts"][:60])
              + (" …" if factor["distinct"] > 60 else ""))
             for factor in corpus_factor_counts(corpus)))

    @admin.display(description="Recorded scorers (imported)")
    def recorded_scorer_list(self, corpus: Corpus):
        scorers = list(corpus_recorded_scorers(corpus))
        if not scorers:
            return "none"
        return format_html(
            "<table><tr><th>name</th><th>scores</th><th>missing</th><th>from</th></tr>{}</table>",
            format_html_join("", "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>", (
                (s.name, s.n_scores, s.n_missing,
                 ", ".join(f"{f['file']} ({f['sha256'][:12]})" for f in s.provenance.get("files", [])))
                for s in scorers)))

    @admin.display(description="Pairing with controls")
    def pairing_report(self, corpus: Corpus):
        """An uploaded corpus's sentences per pairing rule, every unpaired row with its reason, and the warnings
        (the BITS dashboard shows the same section)."""
        context = {"corpus": {"pairing": stored_report(corpus.provenance),
                              "warnings": list(corpus.provenance.get("warnings") or [])}}
        if not (context["corpus"]["pairing"] or context["corpus"]["warnings"]):
            return ("— (uploaded before the pairing was recorded: see the provenance)"
                    if corpus.provenance.get("generator") == "upload" else
                    "— (generated: every sentence is made with its control)")
        # The template escapes every value it prints.
        return mark_safe(render_to_string("auditapp/_bits_pairing.html", context))  # noqa: S308

    @admin.display(description="Provenance")
    def provenance_json(self, corpus: Corpus):
        return format_html("<pre>{}</pre>", json.dumps(corpus.provenance, indent=2, ensure_ascii=False))

    def add_view(self, request, form_url="", extra_context=None):
        if not self.has_add_permission(request):
            raise PermissionDenied
        generate_form = CorpusGenerateForm(prefix="generate")
        upload_form = CorpusUploadForm(prefix="upload")
        posts_form = PostsPerturbForm(prefix="posts")
        problems, total, corpus, posts_preview = [], 0, None, None
        if request.method == "POST":
            try:
                if "posts-preview" in request.POST or "posts-store" in request.POST:
                    posts_form = PostsPerturbForm(request.POST, request.FILES, prefix="posts")
                    if posts_form.is_valid():
                        read = bits_posts_read(file=posts_form.cleaned_data["file"], options=posts_form.options())
                        if "posts-store" in request.POST:
                            corpus = bits_posts_store(read, name=posts_form.cleaned_data["name"],
                                                      created_by=request.user)
                        else:
                            posts_preview = {**read.answer(), "report": report_for_page(read.posts.report())}
                elif "upload" in request.POST:
                    upload_form = CorpusUploadForm(request.POST, request.FILES, prefix="upload")
                    if upload_form.is_valid():
                        data = upload_form.cleaned_data
                        corpus = bits_corpus_upload(perturbed_file=data["perturbed_file"],
                                                    control_file=data["control_file"], name=data["name"],
                                                    unmatched=data["unmatched"], created_by=request.user)
                else:
                    generate_form = CorpusGenerateForm(request.POST, prefix="generate")
                    if generate_form.is_valid():
                        corpus = bits_corpus_generate(spec=generate_form.cleaned_data["spec"],
                                                      name=generate_form.cleaned_data["name"], created_by=request.user)
            except CorpusError as error:
                problems, total = error.problems, error.total
            except TeamChoiceError as error:
                problems, total = [{"message": str(error)}], 1
        if corpus is not None:
            if corpus.reused:
                messages.info(request, f"An identical corpus was already stored: {corpus}. Nothing new was stored.")
            else:
                messages.success(request, f"Stored {corpus}.")
            return redirect("admin:auditapp_corpus_change", corpus.pk)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": "Add a corpus",
            "generate_form": generate_form,
            "upload_form": upload_form,
            "posts_form": posts_form,
            "posts_preview": posts_preview,
            "problems": problems,
            "total_problems": total,
        }
        return TemplateResponse(request, "admin/auditapp/corpus/add.html", context)


def register_admin(site: admin.AdminSite) -> None:
    """Registered by the BITS paradigm (its corpora are the ones generated and uploaded here)."""
    site.register(Corpus, CorpusAdmin)
