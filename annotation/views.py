"""Annotator pages of the flow that belong to the annotation domain: open link, consent, labelling
instructions, labelling, completion and withdrawal. Thin: each calls one service."""
from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods

from annotation.access import participant_page
from annotation.models import LabelValue, Study
from annotation.participation import (
    FlowError,
    Step,
    instructions_read,
    label_submit,
    labelling_progress,
    next_step,
    open_link_check,
    open_link_join,
    participant_complete,
    participant_consent,
    participant_withdraw,
    step_position,
    step_url,
)
from common.participant_input import InputError, form_number, storable_text


@require_http_methods(["GET", "POST"])
def join(request: HttpRequest, open_token: str) -> HttpResponse:
    """The study's open link: one participant per visitor (per PROLIFIC_PID when given), up to the cap.

    A study that requires a keyboard first shows the keyboard notice and checks the device in the browser:
    only its form's POST (same URL, so the Prolific parameters come along) creates the participant. A
    touch-only device is told so, and so is a browser without scripts (the IAT needs them), before anything
    is stored or a place under the cap is taken.
    """
    study = get_object_or_404(Study, open_link_token=open_token)
    try:
        prolific = {field: storable_text(request.GET.get(parameter, ""), field=parameter)
                    for field, parameter in (("prolific_pid", "PROLIFIC_PID"), ("prolific_study_id", "STUDY_ID"),
                                             ("prolific_session_id", "SESSION_ID"))}
    except InputError as error:
        return render(request, "participant/message.html", {"study": study, "message": str(error)}, status=400)
    try:
        if study.keyboard_required and request.method == "GET":
            open_link_check(study=study, prolific_pid=prolific["prolific_pid"])
            return render(request, "participant/join.html", {"study": study, "action": request.get_full_path()})
        participant = open_link_join(study=study, **prolific)
    except FlowError as error:
        return render(request, "participant/message.html", {"study": study, "message": str(error)}, status=403)
    return redirect("participant:resume", participant.invite_token)


@participant_page()
def resume(request: HttpRequest, participant) -> HttpResponse:
    return redirect(step_url(participant, next_step(participant)))


@require_http_methods(["GET", "POST"])
@participant_page(step="consent")
def consent(request: HttpRequest, participant) -> HttpResponse:
    if participant.study.status != Study.Status.OPEN:
        return render(request, "participant/message.html", {
            "participant": participant, "message": "This study is not open at the moment."})
    if request.method == "POST" and request.POST.get("consent") == "yes":
        participant_consent(participant=participant)
        return redirect("participant:resume", participant.invite_token)
    return render(request, "participant/consent.html", {
        "participant": participant, "study": participant.study,
        "flow_step": step_position(participant=participant, step=Step("consent"))})


@require_http_methods(["GET", "POST"])
@participant_page(step="instructions")
def instructions(request: HttpRequest, participant) -> HttpResponse:
    if request.method == "POST":
        instructions_read(participant=participant)
        return redirect("participant:resume", participant.invite_token)
    return render(request, "participant/instructions.html", {
        "participant": participant, "study": participant.study, "label_choices": _label_choices(participant.study),
        "flow_step": step_position(participant=participant, step=Step("instructions"))})


def _label_choices(study: Study) -> list[tuple[int, str, str]]:
    """(value, text, keyboard key) of the study's label buttons."""
    choices = [(LabelValue.NEGATIVE, "Not ableist", "0"), (LabelValue.POSITIVE, "Ableist", "1")]
    if LabelValue.UNRELATED in study.allowed_label_values:
        choices.append((LabelValue.UNRELATED, "Unrelated / needs more context", "u"))
    return choices


@require_http_methods(["GET", "POST"])
@participant_page(step="label")
def label(request: HttpRequest, participant) -> HttpResponse:
    error = None
    if request.method == "POST":
        try:
            label_submit(participant=participant, item_id=form_number(request.POST.get("item"), field="item"),
                         value=form_number(request.POST.get("value"), field="value"),
                         rationale=request.POST.get("rationale", ""))
        except InputError:
            error = "Please choose a label."
        except FlowError as refused:
            error = str(refused)
        else:
            # Straight to the next page (the next item, or done after the last one): the label_submit has
            # refreshed the participant under their lock, so no detour through resume is needed.
            return redirect("participant:done" if participant.completed_at else "participant:label",
                            participant.invite_token)
    progress = labelling_progress(participant=participant)
    if progress.assignment is None:  # nothing left, e.g. a researcher deleted the remaining items
        participant_complete(participant=participant)
        return redirect("participant:resume", participant.invite_token)
    return render(request, "participant/label.html", {
        "participant": participant, "study": participant.study, "item": progress.assignment.item,
        "number": progress.done + 1, "total": progress.total, "label_choices": _label_choices(participant.study),
        "error": error, "flow_step": step_position(participant=participant, step=Step("label"))},
        status=400 if error else 200)


@participant_page(step="done")
def done(request: HttpRequest, participant) -> HttpResponse:
    return render(request, "participant/done.html", {"participant": participant, "study": participant.study})


@require_http_methods(["GET", "POST"])
@participant_page()
def withdraw(request: HttpRequest, participant) -> HttpResponse:
    if request.method == "POST" and request.POST.get("confirm") == "yes":
        participant_withdraw(participant=participant)
    return render(request, "participant/withdraw.html", {"participant": participant, "study": participant.study})
