"""``manage.py import_items --study SLUG FILE``: import items (and per-annotator labels) from a file."""
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.item_files import ImportProblem, ItemFileError
from annotation.models import ItemImport, Study
from annotation.services import items_import_file


class Command(BaseCommand):
    help = (
        "Import a study's items from CSV, TSV, JSONL or XLSX. Columns are detected (id, sentence/target, "
        "preceding, following; label columns such as A1_Score) unless named. All or nothing: any bad row "
        "imports nothing and is reported with its row and column."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path)
        parser.add_argument("--study", required=True, help="The study's slug.")
        parser.add_argument("--id-column")
        parser.add_argument("--target-column")
        parser.add_argument("--preceding-column")
        parser.add_argument("--following-column")
        parser.add_argument("--label-columns", help="Comma-separated per-annotator label columns.")
        parser.add_argument("--label-column-pattern", help=r"Regex with an (?P<annotator>...) group.")
        parser.add_argument("--row-numbers-as-ids", action="store_true",
                            help="Use the spreadsheet row number as the item id (for files without ids).")
        parser.add_argument("--encoding", help="Text encoding; default: UTF-8, else Windows-1252 with a warning.")

    def handle(self, *args, file: Path, study: str, **options):
        try:
            study_obj = Study.objects.get(slug=study)
        except Study.DoesNotExist as exc:
            raise CommandError(f"no study with slug '{study}'") from exc
        if not file.is_file():
            raise CommandError(f"no such file: {file}")
        mapping = {
            "id": options["id_column"],
            "target": options["target_column"],
            "preceding": options["preceding_column"],
            "following": options["following_column"],
            "label_column_pattern": options["label_column_pattern"],
            "use_row_numbers_as_ids": options["row_numbers_as_ids"],
            "encoding": options["encoding"],
        }
        if options["label_columns"]:
            mapping["label_columns"] = [c.strip() for c in options["label_columns"].split(",") if c.strip()]
        try:
            item_import = items_import_file(study=study_obj, filename=file.name, content=file.read_bytes(),
                                            options={k: v for k, v in mapping.items() if v})
        except ItemFileError as exc:
            raise CommandError(str(exc)) from exc
        for warning in item_import.warnings:
            self.stderr.write(self.style.WARNING(f"warning: {warning}"))
        if item_import.status != ItemImport.Status.SUCCEEDED:
            for problem in item_import.errors:
                self.stderr.write(f"  {ImportProblem(**problem)}")
            raise CommandError(f"{file.name}: {len(item_import.errors)} problem(s), nothing imported "
                               f"(import #{item_import.pk}).")
        self.stdout.write(self.style.SUCCESS(
            f"{file.name}: imported {item_import.n_items} items, {item_import.n_labels} labels from "
            f"{item_import.n_participants} annotators into '{study}' (import #{item_import.pk}, "
            f"sha256 {item_import.sha256[:12]}, encoding {item_import.encoding})."))

