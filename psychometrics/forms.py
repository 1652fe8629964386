"""Forms of the psychometrics domain: the annotator data upload (admin page and API share it); on a study's admin
page, the rows of its instruments (roles inferred and checked by ``psychometrics.roles``, as the API's are) and the
editor of its IAT categories and words."""
from __future__ import annotations

import dataclasses
import hashlib
import json

from django import forms
from django.forms.models import BaseInlineFormSet
from django.template.loader import render_to_string

from annotation.forms import ENCODING_CHOICES
from psychometrics import iat as iat_design
from psychometrics.models import AnnotatorImport, StudyInstrument
from psychometrics.services import StudyInstrumentChoice, study_instruments_check

FROM_THE_INSTRUMENT = ""

CONSISTENT_FIRST_CHOICES = [("", "Read the pairing column"), ("yes", "Blocks 3–4 had the consistent pairing"),
                            ("no", "Blocks 6–7 had the consistent pairing")]


class AnnotatorImportForm(forms.Form):
    kind = forms.ChoiceField(choices=AnnotatorImport.Kind.choices)
    file = forms.FileField(help_text="CSV, TSV or XLSX with a header row.")
    columns = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 3}),
        help_text="Only where a column's name is not one we recognise: field=column, separated by commas or lines, "
                  "e.g. 'annotator=Rater, aq=Autism Quotient'. Fields: annotator, team, aq, aq_<subscale>, sata, "
                  "iat_d, iat_d600, iat_flagged_fast, iat_error_rate, iat_fast_fraction (scores); annotator, "
                  "instrument, item_number, response_index, response (answers); annotator, block, trial, error, "
                  "latency_correct_ms, latency_first_ms, pairing, stimulus, stimulus_category, correct_side, "
                  "first_key (IAT trials).")
    consistent_first = forms.ChoiceField(
        choices=CONSISTENT_FIRST_CHOICES, required=False,
        help_text="IAT trials without a pairing column: which combined blocks had the prejudice-consistent pairing.")
    encoding = forms.ChoiceField(choices=ENCODING_CHOICES, required=False)

    def clean_columns(self) -> dict[str, str]:
        mapping: dict[str, str] = {}
        for part in self.cleaned_data["columns"].replace("\n", ",").split(","):
            if not part.strip():
                continue
            name, sep, column = part.partition("=")
            if not sep or not name.strip() or not column.strip():
                raise forms.ValidationError(f"'{part.strip()}' is not field=column")
            mapping[name.strip()] = column.strip()
        return mapping

    def import_options(self) -> dict:
        """The mapping and parse options, as AnnotatorImport.options stores them."""
        data = self.cleaned_data
        options = {"columns": data["columns"], "encoding": data["encoding"],
                   "consistent_first": {"yes": True, "no": False}.get(data["consistent_first"])}
        return {k: v for k, v in options.items() if v not in (None, "", {})}


class StudyInstrumentForm(forms.ModelForm):
    """One instrument row of a study's page. A new row's role is "from the instrument" (an AQ gets the AQ role, a
    SATA the SATA role, anything else Other) unless one is chosen. Each control is named with its row, since a
    table row's inputs have no label of their own."""

    role = forms.ChoiceField(
        label="Role", choices=[(FROM_THE_INSTRUMENT, "From the instrument"), *StudyInstrument.Role.choices], required=False,
        help_text="Which score the trust weights read it as. From the instrument: AQ for an AQ, SATA for a SATA, "
                  "else Other.")

    class Meta:
        model = StudyInstrument
        fields = ("position", "instrument", "role", "randomise_items")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk is None:
            self.initial.setdefault("role", FROM_THE_INSTRUMENT)
        row = row_name(self.prefix)
        for field in self.fields.values():
            # The admin wraps a relation's select (add and change links): the select inside is what is rendered.
            widget = getattr(field.widget, "widget", field.widget)
            widget.attrs["aria-label"] = f"{field.label} of {row}"

    def chosen_role(self) -> str | None:
        """The role chosen, or None for "from the instrument"."""
        return self.cleaned_data.get("role") or None


def row_name(prefix: str | None) -> str:
    """ "instrument row 2" for the form with prefix "study_instruments-1"; the template row that the admin's script
    copies for "Add another" has no number yet."""
    index = (prefix or "").rsplit("-", 1)[-1]
    return f"instrument row {int(index) + 1}" if index.isdigit() else "the new instrument row"


class StudyInstrumentFormSet(BaseInlineFormSet):
    """A study's instrument rows, checked together by the rule the API applies (``study_instruments_check``): each
    problem is an error on its row's role, naming the row and the instrument. A row's "from the instrument" role
    is resolved here, so the stored role is the instrument's."""

    def add_fields(self, form, index):
        super().add_fields(form, index)
        if "DELETE" in form.fields:
            form.fields["DELETE"].widget.attrs["aria-label"] = f"Delete {row_name(form.prefix)}"

    def clean(self):
        rows = [form for form in self.forms
                if form.cleaned_data.get("instrument") and not self._should_delete_form(form)]
        choices = [StudyInstrumentChoice(instrument=form.cleaned_data["instrument"], role=form.chosen_role())
                   for form in rows]
        problems = study_instruments_check(choices=choices)
        for index, messages in problems.items():
            for message in messages:
                rows[index].add_error("role", f"{row_name(rows[index].prefix).capitalize()}: {message}")
        super().clean()
        if problems:
            raise forms.ValidationError("The instruments' roles must be changed: see " + ", ".join(
                row_name(rows[index].prefix) for index in sorted(problems)) + ".")
        for form, choice in zip(rows, choices, strict=True):
            form.instance.role = choice.resolved_role


class IATStimuliWidget(forms.Widget):
    """The IAT's four categories as a form: whether the study uses the defaults or its own, and for its own each
    category's name and words (one per line). Plain inputs, so the form works as it is without JavaScript;
    ``iat/stimuli_editor.js`` adds live word counts and marks a word used in two categories before the form is sent.
    Without this form's inputs in the data (a POST that does not know them), the stored value is kept."""

    template_name = "admin/widgets/iat_stimuli.html"

    class Media:
        css = {"all": ("iat/stimuli_editor.css",)}
        js = ("iat/stimuli_editor.js",)

    def value_from_datadict(self, data, files, name):
        if f"{name}-source" not in data:
            return None
        return {"source": data.get(f"{name}-source"), "shown": data.get(f"{name}-shown", ""),
                "labels": {category: data.get(f"{name}-{category}-label", "")
                           for category in iat_design.STIMULUS_CATEGORIES},
                "words": {category: data.get(f"{name}-{category}-words", "").splitlines()
                          for category in iat_design.STIMULUS_CATEGORIES}}

    def value_omitted_from_data(self, data, files, name):
        return f"{name}-source" not in data

    def id_for_label(self, id_):
        # The field's label names the whole editor, whose own legends name each input.
        return ""

    def get_context(self, name, value, attrs):
        context = super().get_context(name, value, attrs)
        source, labels, words = _editor_state(value)
        element_id = context["widget"]["attrs"].get("id") or f"id_{name}"
        context.update({
            "editor_id": element_id, "source": source, "shown": _digest(labels, words), "min_words": iat_design.MIN_WORDS_PER_CATEGORY,
            "max_label_length": iat_design.MAX_LABEL_LENGTH,
            "categories": [{"key": category, "purpose": iat_design.CATEGORY_PURPOSES[category],
                            "label": labels.get(category, ""), "words": "\n".join(words.get(category, ())),
                            "count": len({word.strip().casefold() for word in words.get(category, ()) if word.strip()})}
                           for category in iat_design.STIMULUS_CATEGORIES]})
        return context

    def render(self, name, value, attrs=None, renderer=None):
        # The project's templates (the default form renderer reads only Django's and the apps' own).
        return render_to_string(self.template_name, self.get_context(name, value, attrs))


def _digest(labels: dict[str, str], words: dict[str, list[str]]) -> str:
    """A fingerprint of the categories and words as stored (trimmed), to tell an edit from what the page showed."""
    fields = iat_design.iat_stimuli_fields(labels=labels, words=words)
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()


def _editor_state(value) -> tuple[str, dict[str, str], dict[str, list[str]]]:
    """(source, names, words) to show: from the posted form, from the stored stimuli, or the defaults to start from."""
    if isinstance(value, dict) and "source" in value:
        return value["source"], value["labels"], value["words"]
    custom = bool(value) and isinstance(value, dict)
    stored = value if custom else dataclasses.asdict(iat_design.DEFAULT_STIMULI)
    labels = {category: str(stored.get(f"{category}_label", "")) for category in iat_design.STIMULUS_CATEGORIES}
    words = {category: [str(word) for word in stored.get(f"{category}_words", ()) or ()]
             for category in iat_design.STIMULUS_CATEGORIES}
    return ("custom" if custom else "default"), labels, words


class IATStimuliField(forms.Field):
    """A study's IAT stimuli from ``IATStimuliWidget``: ``{}`` for the defaults, else the eight fields of
    ``IATStimuli`` (the JSON ``Study.iat_stimuli`` has always stored), checked by ``iat_stimuli_problems``: every
    problem is one error naming its category."""

    widget = IATStimuliWidget

    def to_python(self, value):
        if value is None:
            return {}
        if not (isinstance(value, dict) and "source" in value):
            return value
        if value["source"] == "default":
            if value["shown"] and value["shown"] != _digest(value["labels"], value["words"]):
                # Without the page's script nothing picks "own" when a word is typed: never drop the edit silently.
                raise forms.ValidationError("The categories or words were changed but the defaults are chosen: "
                                            "choose \"This study's own\" to use them, or undo the changes.")
            return {}
        if value["source"] != "custom":
            raise forms.ValidationError("Choose the default categories or this study's own.")
        problems = iat_design.iat_stimuli_problems(labels=value["labels"], words=value["words"])
        if problems:
            raise forms.ValidationError(problems)
        return iat_design.iat_stimuli_fields(labels=value["labels"], words=value["words"])

    def has_changed(self, initial, data):
        try:
            return self.to_python(data) != (initial or {})
        except forms.ValidationError:
            return True
