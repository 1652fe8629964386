"""Forms of the psychometrics domain: the annotator data upload (admin page and API share it)."""
from __future__ import annotations

from django import forms

from annotation.forms import ENCODING_CHOICES
from psychometrics.models import AnnotatorImport

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
