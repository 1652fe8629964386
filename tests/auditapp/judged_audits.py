"""Audits the error browsers' route tests read without running anything: a BITS audit of recorded scorers only
(scores imported with an uploaded corpus, so its rows exist as soon as it is created) and a seed 003 audit not yet
prepared (its route answers, with no rows)."""
from __future__ import annotations

from django.core.files.uploadedfile import SimpleUploadedFile

from auditapp.engine.launch import ModelChoice
from auditapp.models import Audit, LLMEndpoint, RecordedScorer
from auditapp.paradigms.bits.corpora import bits_corpus_upload
from auditapp.paradigms.bits.services import bits_audit_create
from auditapp.paradigms.implicit_bias.services import audit_create
from auditapp.paradigms.word_association.adapter import TASK as WABT_TASK
from tests.auditapp.bits_upload_files import CONTROL_HEADER, CONTROL_ROWS, PERTURBED_HEADER, PERTURBED_ROWS, csv_bytes


def recorded_bits_audit(*, name: str = "recorded BITS", perturbed=(PERTURBED_HEADER, PERTURBED_ROWS),
                        controls=(CONTROL_HEADER, CONTROL_ROWS)) -> Audit:
    """A BITS audit of every recorded scorer of a corpus uploaded from these files (tests/auditapp/
    bits_upload_files.py's by default)."""
    corpus = bits_corpus_upload(perturbed_file=SimpleUploadedFile("perturbed.csv", csv_bytes(*perturbed)),
                                control_file=SimpleUploadedFile("controls.csv", csv_bytes(*controls)),
                                name=f"{name} corpus")
    return bits_audit_create(name=name, models=[], corpus=corpus,
                             recorded_scorers=list(RecordedScorer.objects.filter(corpus=corpus)))


def unprepared_wabt_audit(endpoint: LLMEndpoint, *, name: str = "WABT", model: str = "wabt-consistent") -> Audit:
    """A word association audit of one model, one sample per combination (90 instances), not prepared."""
    return audit_create(WABT_TASK, name=name, models=[ModelChoice(endpoint=endpoint, model=model)], corpus=None,
                        options={"samples_per_combination": 1})
