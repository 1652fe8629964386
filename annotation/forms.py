"""Forms of the annotation domain: the item-file upload with its column mapping, and invitations."""
from django import forms

ENCODING_CHOICES = [
    ("", "Detect: UTF-8 (with or without BOM), else Windows-1252 with a warning"),
    ("utf-8", "UTF-8"),
    ("cp1252", "Windows-1252"),
    ("latin-1", "Latin-1 (ISO-8859-1)"),
    ("utf-16", "UTF-16"),
]


class ItemImportForm(forms.Form):
    file = forms.FileField(help_text="CSV, TSV, JSONL or XLSX. One item per row.")
    id_column = forms.CharField(required=False, help_text="Default: id, item_id, external_id, sentence_id or item.")
    target_column = forms.CharField(required=False, help_text="Default: target, sentence, target_sentence or text.")
    preceding_column = forms.CharField(required=False, help_text="Default: preceding, before, previous.")
    following_column = forms.CharField(required=False, help_text="Default: following, after, next.")
    label_columns = forms.CharField(
        required=False,
        help_text="Comma-separated per-annotator label columns. Default: every column named like "
                  "A1_Score (values 1, 0, and -1 for unrelated / needs more context).",
    )
    use_row_numbers_as_ids = forms.BooleanField(
        required=False, help_text="For files without an id column: the spreadsheet row number becomes the id."
    )
    encoding = forms.ChoiceField(choices=ENCODING_CHOICES, required=False)

    def import_options(self) -> dict:
        """The column mapping and parse options, in the form ItemImport.options stores them."""
        data = self.cleaned_data
        options = {
            "id": data["id_column"].strip(),
            "target": data["target_column"].strip(),
            "preceding": data["preceding_column"].strip(),
            "following": data["following_column"].strip(),
            "use_row_numbers_as_ids": data["use_row_numbers_as_ids"],
            "encoding": data["encoding"],
        }
        if data["label_columns"].strip():
            options["label_columns"] = [c.strip() for c in data["label_columns"].split(",") if c.strip()]
        return {k: v for k, v in options.items() if v}


class InviteForm(forms.Form):
    count = forms.IntegerField(min_value=1, max_value=10_000, initial=10, help_text="One personal link each.")
    team = forms.CharField(max_length=100, initial="default",
                           help_text="The annotation team (trust weights are relative to the team's mean).")
