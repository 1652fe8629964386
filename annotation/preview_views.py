"""A study as a participant sees it, for its researchers: every page of the flow (consent, each questionnaire, the
IAT, the labelling instructions, labelling, done) from the study's admin page, storing nothing.

The preview renders the participant templates with the study's own settings and calls no service that writes:
there is no participant (the step counter is computed for an unsaved one), a questionnaire's answers and an IAT
block are read and answered as the real pages are, then dropped, and labelling shows the study's first sentences
in file order (a participant gets theirs in an order of their own). So nothing can be stored by mistake, and no
service carries a "pretend" branch: a preview mode in the services would have to be honoured by every write, and
a participant created and rolled back would still count towards the open link's cap and the IAT's
counterbalancing while it lived.

Staff only, for the study's team (a viewer may preview); the pages are under /studies/<id>/preview/.
"""
from __future__ import annotations

import dataclasses
import random

from django.contrib.admin.views.decorators import staff_member_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from annotation.models import Item, Participant, Study
from annotation.participation import Step, step_position, study_flow
from annotation.selectors import study_duration
from annotation.views import label_choices
from common.participant_input import InputError
from psychometrics import iat as iat_design
from psychometrics.models import StudyInstrument
from psychometrics.page_input import iat_block_post
from psychometrics.services import iat_stimuli_for
from teams.pages import get_visible_or_404


def _study(request: HttpRequest, study_id: int) -> Study:
    return get_visible_or_404(request.user, Study.objects.all(), pk=study_id)


def _steps(study: Study) -> list[Step]:
    """The study's pages in the order a participant takes them (:func:`annotation.participation.study_flow`, whose
    labelling step is two pages here: its instructions, then the items), then the done page."""
    pages: list[Step] = []
    for flow_step in study_flow(study=study):
        if flow_step.kind == "label":
            pages.append(Step("instructions"))
        pages.append(Step(flow_step.kind, flow_step.instrument_id))
    return [*pages, Step("done")]


def _url(study: Study, step: Step) -> str:
    if step.kind == "questionnaire":
        return reverse("study-preview:questionnaire", args=[study.pk, step.instrument_id])
    return reverse(f"study-preview:{step.kind}", args=[study.pk])


def _after(study: Study, step: Step) -> str:
    steps = _steps(study)
    return _url(study, steps[steps.index(step) + 1])


def _context(request: HttpRequest, study: Study, step: Step, **context) -> dict:
    """What every preview page gets: the study, its step counter, and the banner's words and way back."""
    note = None
    if study.status != Study.Status.OPEN:
        note = (f"The study is {study.get_status_display().lower()}: a participant would be told that it is not "
                "open at the moment.")
    return {"study": study, "flow_step": step_position(participant=Participant(study=study), step=step),
            "preview": {"admin_url": reverse("admin:annotation_study_change", args=[study.pk]), "note": note},
            **context}


@require_http_methods(["GET", "POST"])
@staff_member_required
def consent(request: HttpRequest, study_id: int) -> HttpResponse:
    study = _study(request, study_id)
    step = Step("consent")
    if request.method == "POST" and request.POST.get("consent") == "yes":
        return redirect(_after(study, step))
    if request.method == "POST" and request.POST.get("consent") == "no":
        return render(request, "participant/declined.html", _context(request, study, Step("declined")))
    return render(request, "participant/consent.html", _context(request, study, step,
                                                                duration=study_duration(study=study)))


@require_http_methods(["GET", "POST"])
@staff_member_required
def questionnaire(request: HttpRequest, study_id: int, instrument_id: int) -> HttpResponse:
    """The questionnaire page; a submit with every statement answered goes on, one with some unanswered is shown
    again with them marked, as a participant's is. The answers are not kept."""
    study = _study(request, study_id)
    setting = get_object_or_404(StudyInstrument.objects.select_related("instrument"), study=study,
                                instrument_id=instrument_id)
    instrument, step = setting.instrument, Step("questionnaire", instrument_id)
    order = [item.number for item in instrument.parsed.items]
    if setting.randomise_items:
        # Each participant has an order of their own; the preview shows one, the same each time this researcher's
        # session opens the page (so a submit with statements unanswered shows them in the order answered).
        random.Random(f"{request.session.session_key}:{instrument.content_hash}").shuffle(order)
    n_options = len(instrument.parsed.response_options)
    answers: dict[int, int] = {}
    if request.method == "POST":
        for number in order:
            value = request.POST.get(f"item-{number}", "")
            if value.isascii() and value.isdigit() and int(value) < n_options:
                answers[number] = int(value)
        if len(answers) == len(order):
            return redirect(_after(study, step))
    missing = [number for number in order if number not in answers] if request.method == "POST" else []
    items = {item.number: item for item in instrument.parsed.items}
    rows = [{"number": n, "text": items[n].text, "answer": answers.get(n), "missing": n in missing} for n in order]
    return render(request, "participant/questionnaire.html", _context(
        request, study, step, instrument=instrument, rows=rows, missing=missing, answered=len(answers),
        total=len(rows), options=list(enumerate(instrument.parsed.response_options)),
        answer_url=reverse("study-preview:answer", args=[study.pk, instrument_id])),
        status=400 if missing else 200)


@require_POST
@staff_member_required
def answer(request: HttpRequest, study_id: int, instrument_id: int) -> JsonResponse:
    """The questionnaire's autosave, acknowledged and dropped."""
    get_object_or_404(StudyInstrument, study=_study(request, study_id), instrument_id=instrument_id)
    return JsonResponse({"saved": False, "preview": True})


@staff_member_required
def iat(request: HttpRequest, study_id: int) -> HttpResponse:
    """The IAT with the study's stimuli, in one of the four counterbalancing conditions at random."""
    study = _study(request, study_id)
    if not study.iat_enabled:
        return redirect(_url(study, Step("instructions")))
    stimuli = iat_stimuli_for(study)
    rng = random.Random()
    blocks = iat_design.build_iat(stimuli, condition_index=rng.randrange(iat_design.N_CONDITIONS),
                                  seed=rng.randrange(2**31))
    config = {"blocks": [dataclasses.asdict(block) for block in blocks], "start_block": 1,
              "post_url": reverse("study-preview:iat-block", args=[study.pk]),
              "next_url": _after(study, Step("iat")), "touch_allowed": not study.keyboard_required,
              "categories": stimuli.preview()}
    return render(request, "participant/iat.html", _context(request, study, Step("iat"), config=config))


@require_POST
@staff_member_required
def iat_block(request: HttpRequest, study_id: int) -> JsonResponse:
    """A finished block, read as a participant's is (400 when malformed), answered with the next one and dropped."""
    _study(request, study_id)
    try:
        posted = iat_block_post(request.body)
    except InputError as error:
        return JsonResponse({"error": f"malformed block: {error}"}, status=400)
    last = len(iat_design.BLOCK_TRIAL_COUNTS)
    return JsonResponse({"next_block": posted.block + 1, "finished": posted.block >= last})


@require_http_methods(["GET", "POST"])
@staff_member_required
def instructions(request: HttpRequest, study_id: int) -> HttpResponse:
    study = _study(request, study_id)
    if request.method == "POST":
        return redirect(_after(study, Step("instructions")))
    return render(request, "participant/instructions.html", _context(
        request, study, Step("instructions"), label_choices=label_choices(study)))


def _preview_items(study: Study) -> list[Item]:
    """The sentences a preview shows: the first a participant could get, in file order (attention checks too)."""
    items = Item.objects.filter(study=study).order_by("position", "id")
    return list(items[:study.items_per_annotator] if study.items_per_annotator else items[:50])


def _label_url(study: Study, position: int) -> str:
    return f"{reverse('study-preview:label', args=[study.pk])}?at={position}"


@require_http_methods(["GET", "POST"])
@staff_member_required
def label(request: HttpRequest, study_id: int) -> HttpResponse:
    """One sentence (``?at=<position>``, from 0); a label or a skip (with its reason) moves on, nothing is kept."""
    study = _study(request, study_id)
    items = _preview_items(study)
    step = Step("label")
    if not items:
        return render(request, "participant/message.html", _context(
            request, study, step, message="This study has no sentences yet: import its items first."))
    at = request.GET.get("at", "0")
    position = int(at) if at.isascii() and at.isdigit() and int(at) < len(items) else 0
    choices = label_choices(study)
    skipping = study.skipping != Study.Skipping.OFF
    after = _label_url(study, position + 1) if position + 1 < len(items) else _after(study, step)
    error = None
    if request.method == "POST":
        skipped = request.POST.get("action") == "skip" and skipping
        if skipped and not request.POST.get("skip_reason", "").strip():
            error = "Please say why you skip this sentence."
        elif not skipped and request.POST.get("value") not in {str(value) for value, _, _ in choices}:
            error = "Please choose a label."
        else:
            return redirect(after)
    return render(request, "participant/label.html", _context(
        request, study, step, item=items[position], assignment=None, label=None, number=position + 1,
        total=len(items), done=position, error=error, label_choices=choices, skipping_allowed=skipping,
        back_url=_label_url(study, position - 1) if position else None, after_url=after),
        status=400 if error else 200)


@staff_member_required
def done(request: HttpRequest, study_id: int) -> HttpResponse:
    study = _study(request, study_id)
    return render(request, "participant/done.html", _context(request, study, Step("done")))
