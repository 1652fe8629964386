"""Annotator pages of the psychometrics domain: questionnaires (each answer saved as it is given) and the
IAT (trials run in the browser; each block posted when it ends). Thin: each calls one service."""
from __future__ import annotations

import logging

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from annotation.access import participant_page
from annotation.participation import Step, step_position
from common.participant_input import InputError, form_number
from psychometrics import iat as iat_design
from psychometrics.models import Instrument, InstrumentResponse
from psychometrics.page_input import MAX_ANSWER_TIME_MS, iat_block_post, questionnaire_answer
from psychometrics.services import (
    IATBlockRejected,
    IATTrialNotAllowed,
    IncompleteQuestionnaire,
    answer_save,
    iat_block_submit,
    iat_session,
    questionnaire_session,
    questionnaire_submit,
)

logger = logging.getLogger(__name__)


@require_http_methods(["GET", "POST"])
@participant_page(step="questionnaire")
def questionnaire(request: HttpRequest, participant, instrument_id: int) -> HttpResponse:
    instrument = get_object_or_404(Instrument, pk=instrument_id)
    session = questionnaire_session(participant=participant, instrument=instrument)
    missing: list[int] = []
    if request.method == "POST":
        given = {}
        for number in session.item_order:
            value = request.POST.get(f"item-{number}")
            if value is not None:
                try:
                    given[number] = (form_number(value, field=f"item-{number}"),
                                     _unacknowledged_time(request.POST.get(f"rt-{number}")))
                except InputError:
                    continue  # not a number, so no option of this item: it stays unanswered and is marked below
        try:
            questionnaire_submit(participant=participant, instrument=instrument, answers=given)
        except IncompleteQuestionnaire as incomplete:
            missing = incomplete.missing
        else:
            return redirect("participant:resume", participant.invite_token)
    answers = dict(InstrumentResponse.objects.filter(participant=participant, instrument=instrument)
                   .values_list("item_number", "response_index"))
    items = {item.number: item for item in instrument.parsed.items}
    rows = [{"number": n, "text": items[n].text, "answer": answers.get(n), "missing": n in missing}
            for n in session.item_order]
    return render(request, "participant/questionnaire.html", {
        "participant": participant, "study": participant.study, "instrument": instrument, "rows": rows,
        "options": list(enumerate(instrument.parsed.response_options)), "missing": missing,
        "answered": len(answers), "total": len(rows),
        "answer_url": reverse("participant:answer", args=[participant.invite_token, instrument.pk]),
        "flow_step": step_position(participant=participant, step=Step("questionnaire", instrument.pk))},
        status=400 if missing else 200)


def _unacknowledged_time(text: str | None) -> int | None:
    """The time on an item whose autosave the page could not get acknowledged (questionnaire.js adds it to the
    submit as ``rt-<item>``), or None: the answer then keeps the time an autosave stored. An unusable value in
    this hidden field is the page's, not the participant's, so it is dropped (and logged, as a page fault) and
    the answer is still taken."""
    if text is None:
        return None
    try:
        return form_number(text, field="rt", maximum=MAX_ANSWER_TIME_MS)
    except InputError:
        logger.warning("questionnaire submit: an unusable answer time %r was dropped", text[:40])
        return None


@require_POST
@participant_page(step="questionnaire")
def answer(request: HttpRequest, participant, instrument_id: int) -> JsonResponse:
    """Autosave of one answer (JSON: item, response, rt_ms)."""
    instrument = get_object_or_404(Instrument, pk=instrument_id)
    try:
        given = questionnaire_answer(request.body)
        answer_save(participant=participant, instrument=instrument, item_number=given.item,
                    response_index=given.response, rt_ms=given.rt_ms, writer=given.page.writer,
                    writer_seq=given.page.seq)
    except ValueError as exc:
        return JsonResponse({"error": str(exc)}, status=400)
    return JsonResponse({"saved": True})


@participant_page(step="iat")
def iat(request: HttpRequest, participant) -> HttpResponse:
    session = iat_session(participant=participant)
    config = {
        "blocks": session.design,
        "start_block": session.blocks_done + 1,
        "post_url": reverse("participant:iat-block", args=[participant.invite_token]),
        "next_url": reverse("participant:resume", args=[participant.invite_token]),
        "touch_allowed": not participant.study.keyboard_required,
        "categories": iat_design.IATStimuli(**session.stimuli).preview(),
    }
    return render(request, "participant/iat.html", {
        "participant": participant, "study": participant.study, "config": config,
        "flow_step": step_position(participant=participant, step=Step("iat"))})


@require_POST
@participant_page()
def iat_block(request: HttpRequest, participant) -> JsonResponse:
    """One finished block (JSON: block, trials); answers with the next block to run.

    Not bound to the IAT step, so a retried post of the last block is still acknowledged.
    """
    try:
        posted = iat_block_post(request.body)
    except InputError as error:
        return JsonResponse({"error": f"malformed block: {error}"}, status=400)
    try:
        session = iat_block_submit(participant=participant, block_number=posted.block, trials=posted.trials)
    except IATTrialNotAllowed as not_allowed:
        return JsonResponse({"error": str(not_allowed), "field": not_allowed.field}, status=400)
    except IATBlockRejected as rejected:
        return JsonResponse({"error": str(rejected)}, status=409)
    return JsonResponse({"next_block": session.blocks_done + 1, "finished": session.completed_at is not None})
