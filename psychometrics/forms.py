"""Forms of the psychometrics domain: the annotator data upload (admin page and API share it), and the rows of a
study's instruments on its admin page (roles inferred and checked by ``psychometrics.roles``, as the API's are)."""
from __future__ import annotations

from django import forms
from django.forms.models import BaseInlineFormSet

from annotation.forms import ENCODING_CHOICES
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
