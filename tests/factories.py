"""Small builders for test data (studies, researchers, item files)."""
from __future__ import annotations

import csv
import io
import itertools
import random
import zipfile

from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from annotation.models import Item, Label, Participant, Study
from auditapp.services import researcher_create

_counter = itertools.count(1)


def make_study(**fields) -> Study:
    n = next(_counter)
    defaults = {"name": f"Study {n}", "slug": f"study-{n}"}
    return Study.objects.create(**{**defaults, **fields})


def make_researcher(username: str = "alice"):
    user, _, token = researcher_create(username=username)
    return user, token


def token_client(token: str) -> APIClient:
    """An API client that sends ``token`` (a researcher's, from :func:`make_researcher`) with every request."""
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    return client


def make_participant_user(username: str = "mallory"):
    return get_user_model().objects.create_user(username=username, password="x-not-staff-1")


def autalic_like_csv(n_items: int, annotators: tuple[str, ...] = ("A1", "A2", "A3"), *, seed: int = 0) -> bytes:
    """A file in the AUTALIC shape: id, context, sentence, then one <annotator>_Score column each.

    Labels cycle through 1, 0, -1 with an offset per annotator, so every value occurs.
    """
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["id", "preceding", "sentence", "following", *[f"{a}_Score" for a in annotators]])
    for i in range(n_items):
        labels = [(1, 0, -1)[(i + seed + k) % 3] for k in range(len(annotators))]
        writer.writerow([f"s{i:05d}", f"Before {i}.", f"Target sentence number {i}, with a comma.", f"After {i}.",
                         *labels])
    return buffer.getvalue().encode("utf-8")


WORKED_EXAMPLE_SCORES = {"P1": ("a", 10, 60, 0.5), "P2": ("a", 20, 90, -0.5), "P3": ("b", 30, 75, 0.0), "P4": ("b", 40, 60, 1.0)}
WORKED_EXAMPLE_LABELS = [("P1", "x", 1), ("P2", "x", 0), ("P3", "x", 1), ("P2", "y", 1), ("P4", "y", 0),
          ("P1", "z", -1), ("P4", "z", 1), ("P3", "z", 0)]


def make_worked_example_study(**fields):
    """Four annotators with stored scores and labels on items x, y, z (and an attention check), whose
    weights and ground truth are worked by hand in tests/psychometrics/test_trust.py and
    tests/annotation/test_aggregation.py: W = 1/4, 7/4, 22/17, 12/17; x has majority 1 and weighted 0."""
    from psychometrics.models import IATSession, Instrument, InstrumentScore, StudyInstrument

    study = make_study(**fields)
    aq, sata = Instrument.objects.get(slug="aq50"), Instrument.objects.get(slug="sata_partial")
    StudyInstrument.objects.create(study=study, instrument=aq, role="aq", position=0)
    StudyInstrument.objects.create(study=study, instrument=sata, role="sata", position=1)
    items = {name: Item.objects.create(study=study, external_id=name, target=f"Sentence {name}.",
                                       preceding=f"Before {name}.", position=n)
             for n, name in enumerate("xyz")}
    check = Item.objects.create(study=study, external_id="check", target="c", attention_check_answer=0, position=3)
    participants = {}
    for pseudonym, (team, aq_total, sata_total, d) in WORKED_EXAMPLE_SCORES.items():
        participant = Participant.objects.create(study=study, pseudonym=pseudonym, team=team, status="completed")
        participants[pseudonym] = participant
        InstrumentScore.objects.create(participant=participant, instrument=aq, total=aq_total)
        InstrumentScore.objects.create(participant=participant, instrument=sata, total=sata_total)
        IATSession.objects.create(participant=participant, condition_index=0, seed=0, stimuli={}, design=[],
                                  blocks_done=7, completed_at="2026-01-01T00:00Z", d_score=d)
    for pseudonym, item, value in WORKED_EXAMPLE_LABELS:
        Label.objects.create(participant=participants[pseudonym], item=items[item], value=value)
    Label.objects.create(participant=participants["P1"], item=check, value=1)  # attention checks stay out
    return study


AUDIT_POSITIVE_WORDS = ("cure", "disease", "burden", "tragedy")
_AUDIT_NEUTRAL = ("autistic people", "my colleague", "the new policy", "a support group", "the school")
_AUDIT_VERBS = ("talked about", "wrote about", "asked about", "explained", "described")


def make_audit_study(n_items: int = 300, n_examples: int = 10, *, seed: int = 0, **fields) -> Study:
    """A study ready for an LLM audit without running the whole analysis: items (a third mention a word of
    AUDIT_POSITIVE_WORDS, which tests.llm_server answers 1 for), a stored ground truth whose weighted and
    majority labels disagree on some items, and ICL example sets icl_a and icl_b of ``n_examples`` items each
    (kept out of the evaluated items)."""
    from annotation.models import ItemGroundTruth, ItemSetMember

    rng = random.Random(seed)
    study = make_study(**fields)
    total = n_items + 2 * n_examples
    items = []
    for i in range(total):
        positive = i % 3 == 0
        word = rng.choice(AUDIT_POSITIVE_WORDS) if positive else rng.choice(("story", "meeting", "book"))
        items.append(Item(study=study, external_id=f"a{i:05d}", position=i,
                          target=f"Sentence {i}: {rng.choice(_AUDIT_NEUTRAL)} {rng.choice(_AUDIT_VERBS)} the {word}.",
                          preceding=f"Context before {i}." if i % 4 else "", following=f"Context after {i}."))
    items = Item.objects.bulk_create(items)
    truths = []
    for i, item in enumerate(items):
        majority = 1 if i % 3 == 0 else 0
        weighted = 1 - majority if i % 17 == 0 else majority
        if i % 11 == 0:
            majority = 1 - majority
        truths.append(ItemGroundTruth(item=item, n_labels=3, n_excluded=0, majority_label=majority,
                                      majority_tie=False, n_weighted=3, weighted_score=float(weighted),
                                      weighted_label=weighted, weighted_tie=False))
    ItemGroundTruth.objects.bulk_create(truths)
    examples = items[n_items:]
    ItemSetMember.objects.bulk_create(
        [ItemSetMember(study=study, set_name="icl_a", item=item, label=1 if k % 2 == 0 else 0)
         for k, item in enumerate(examples[:n_examples])]
        + [ItemSetMember(study=study, set_name="icl_b", item=item, label=1 if k % 3 == 0 else 0)
           for k, item in enumerate(examples[n_examples:])])
    return study


def pathological_xlsx(*, dimension: str = "A1:XFD1048576", header_columns: int = 16_384) -> bytes:
    """An 87 KB workbook (an XLSX whose declared size is a hostile upload's): ``header_columns`` header cells (``id``,
    ``sentence``, ``h3``, ...), one cell at B1048576, and a ``<dimension>`` element declaring ``dimension`` (written by
    hand: openpyxl would write the true one)."""
    from openpyxl import Workbook
    from openpyxl.utils import get_column_letter

    buffer = io.BytesIO()
    Workbook().save(buffer)
    names = ["id", "sentence", *(f"h{n}" for n in range(3, header_columns + 1))][:header_columns]
    header = "".join(f'<c r="{get_column_letter(n)}1" t="inlineStr"><is><t>{name}</t></is></c>'
                     for n, name in enumerate(names, start=1))
    sheet = ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
             '<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
             f'<dimension ref="{dimension}"/><sheetData><row r="1">{header}</row>'
             '<row r="1048576"><c r="B1048576" t="inlineStr"><is><t>x</t></is></c></row></sheetData></worksheet>')
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(buffer.getvalue())) as source, \
            zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as workbook:
        for name in source.namelist():
            workbook.writestr(name, sheet if name == "xl/worksheets/sheet1.xml" else source.read(name))
    return out.getvalue()
