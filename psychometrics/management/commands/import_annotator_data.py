"""``manage.py import_annotator_data --study SLUG --kind scores|answers|iat FILE``: import annotators' scores, raw
questionnaire answers or raw IAT trials (``psychometrics.annotator_imports``)."""
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.item_files import ItemFileError
from annotation.models import Study
from psychometrics.annotator_files import KINDS
from psychometrics.annotator_imports import annotator_import_submit


class Command(BaseCommand):
    help = (
        "Import annotator data from CSV, TSV or XLSX into a study whose annotators already exist: per-annotator "
        "scores (annotator, team, aq, sata, iat_d, ...), raw questionnaire answers (annotator, instrument, "
        "item_number, response_index or response) or raw IAT trials (annotator, block, trial, error, "
        "latency_correct_ms, ...). All or nothing: any bad row imports nothing and is reported with its row and "
        "column. The study's analysis is recomputed afterwards."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path)
        parser.add_argument("--study", required=True, help="The study's slug.")
        parser.add_argument("--kind", required=True, choices=KINDS)
        parser.add_argument("--column", action="append", default=[], metavar="FIELD=COLUMN",
                            help="Read FIELD from COLUMN when its name is not recognised (repeatable).")
        parser.add_argument("--consistent-first", choices=["yes", "no"],
                            help="IAT trials without a pairing column: did blocks 3–4 have the consistent pairing?")
        parser.add_argument("--encoding", help="Text encoding; default: UTF-8, else Windows-1252 with a warning.")

    def handle(self, *args, file: Path, study: str, kind: str, **options):
        try:
            study_obj = Study.objects.get(slug=study)
        except Study.DoesNotExist as exc:
            raise CommandError(f"no study with slug '{study}'") from exc
        if not file.is_file():
            raise CommandError(f"no such file: {file}")
        columns = {}
        for pair in options["column"]:
            name, sep, column = pair.partition("=")
            if not sep or not name.strip() or not column.strip():
                raise CommandError(f"--column {pair!r}: give FIELD=COLUMN")
            columns[name.strip()] = column.strip()
        consistent_first = {"yes": True, "no": False}.get(options["consistent_first"])
        try:
            annotator_import = annotator_import_submit(
                study=study_obj, kind=kind, filename=file.name, content=file.read_bytes(),
                options={"columns": columns, "consistent_first": consistent_first, "encoding": options["encoding"]})
        except ItemFileError as exc:
            for problem in exc.problems:
                self.stderr.write(f"  {problem}")
            raise CommandError(f"{file.name}: {exc.total} problem(s), nothing imported.") from exc
        for warning in annotator_import.warnings:
            self.stderr.write(self.style.WARNING(f"warning: {warning}"))
        counts = ", ".join(f"{name} {n}" for name, n in annotator_import.counts.items())
        self.stdout.write(self.style.SUCCESS(
            f"{file.name}: imported {kind} of {annotator_import.n_annotators} annotators into '{study}' ({counts}; "
            f"annotator import #{annotator_import.pk}, sha256 {annotator_import.sha256[:12]}). The study's analysis "
            "is being recomputed."))
