"""Annotator pages of the flow that belong to the annotation domain: open link, consent, labelling
instructions, labelling, completion and withdrawal. Thin: each calls one service."""
from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from annotation.access import participant_page
from annotation.models import LabelValue, Participant, Study
from annotation.participation import (
    FlowError,
    Step,
    flow_facts_read_with,
    instructions_read,
    label_skip,
    label_submit,
    labelling_progress,
    labelling_review,
    next_step,
    open_link_check,
    open_link_join,
    participant_assignment_position,
    participant_complete,
    participant_consent,
    participant_decline,
    participant_withdraw,
    step_position,
    step_url,
)
from annotation.selectors import study_duration
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
    return redirect(step_url(participant, next_step(participant, facts=flow_facts_read_with(participant))))


@require_http_methods(["GET", "POST"])
@participant_page(step="consent")
def consent(request: HttpRequest, participant) -> HttpResponse:
    if participant.study.status != Study.Status.OPEN:
        return render(request, "participant/message.html", {
            "participant": participant, "message": "This study is not open at the moment."})
    if request.method == "POST" and request.POST.get("consent") == "yes":
        participant_consent(participant=participant)
        return redirect("participant:resume", participant.invite_token)
    if request.method == "POST" and request.POST.get("consent") == "no":
        participant_decline(participant=participant)
        # Only the study's own stored address, never one from the request.
        return redirect(participant.study.no_consent_url or reverse("participant:declined",
                                                                    args=[participant.invite_token]))
    return render(request, "participant/consent.html", {
        "participant": participant, "study": participant.study, "duration": study_duration(study=participant.study),
        "flow_step": step_position(participant=participant, step=Step("consent"))})


@participant_page(step="declined")
def declined(request: HttpRequest, participant) -> HttpResponse:
    return render(request, "participant/declined.html", {"participant": participant, "study": participant.study})


@require_http_methods(["GET", "POST"])
@participant_page(step="instructions")
def instructions(request: HttpRequest, participant) -> HttpResponse:
    if request.method == "POST":
        instructions_read(participant=participant)
        return redirect("participant:resume", participant.invite_token)
    return render(request, "participant/instructions.html", {
        "participant": participant, "study": participant.study, "label_choices": label_choices(participant.study),
        "flow_step": step_position(participant=participant, step=Step("instructions"),
                                   facts=flow_facts_read_with(participant))})


def label_choices(study: Study) -> list[tuple[int, str, str]]:
    """(value, text, keyboard key) of the study's label buttons."""
    choices = [(LabelValue.NEGATIVE, "Not ableist", "0"), (LabelValue.POSITIVE, "Ableist", "1")]
    if LabelValue.UNRELATED in study.allowed_label_values:
        choices.append((LabelValue.UNRELATED, "Unrelated / needs more context", "u"))
    return choices


def _label_page_url(participant, position: int | None = None) -> str:
    """The labelling page: the next sentence to do, or with ``position`` a done one opened again."""
    url = reverse("participant:label", args=[participant.invite_token])
    return url if position is None else f"{url}?at={position}"


def _label_post(request: HttpRequest, participant) -> int | None:
    """Store what the label form sent (a label, a changed label, a skip; a flag with either) and return the
    position of the sentence it was about when it was a change (so the page moves on from there), else None."""
    item_id = form_number(request.POST.get("item"), field="item")
    revise = request.POST.get("revise") == "1"
    flag_reason = request.POST.get("flag_reason")
    if flag_reason == "" and not revise:
        flag_reason = None  # an empty flag field on a first answer is no flag, not the removal of one
    if request.POST.get("action") == "skip":
        label_skip(participant=participant, item_id=item_id, reason=request.POST.get("skip_reason", ""),
                   flag_reason=flag_reason)
        return None
    label_submit(participant=participant, item_id=item_id, value=form_number(request.POST.get("value"), field="value"),
                 rationale=request.POST.get("rationale", ""), flag_reason=flag_reason, revise=revise)
    return participant_assignment_position(participant=participant, item_id=item_id) if revise else None


@require_http_methods(["GET", "POST"])
@participant_page(step="label")
def label(request: HttpRequest, participant) -> HttpResponse:
    """One sentence to label: the next one to do, or (``?at=<position>``) one the participant has done and went
    back to, to change its label or its flag. After a change the page moves on to the following sentence."""
    error = None
    if request.method == "POST":
        try:
            revised_position = _label_post(request, participant)
        except InputError:
            error = "Please choose a label."
        except FlowError as refused:
            error = str(refused)
        else:
            # Straight to the next page (the next sentence, or done after the last one): the services have
            # refreshed the participant under their lock, so no detour through resume is needed.
            if participant.completed_at:
                return redirect("participant:done", participant.invite_token)
            if revised_position is not None:
                review = labelling_review(participant=participant, position=revised_position)
                return redirect(_label_page_url(participant, review.next_position if review else None))
            return redirect(_label_page_url(participant))
    context = {"participant": participant, "study": participant.study, "error": error,
               "label_choices": label_choices(participant.study),
               "skipping_allowed": participant.study.skipping != Study.Skipping.OFF,
               "flow_step": step_position(participant=participant, step=Step("label"),
                                          facts=flow_facts_read_with(participant))}
    position = request.GET.get("at")
    if position is not None:
        # A position is a small whole number: anything else (other digits, a number past any column) opens no review.
        known = position.isascii() and position.isdigit() and len(position) < 10
        review = labelling_review(participant=participant, position=int(position)) if known else None
        if review is None:
            return redirect(_label_page_url(participant))
        return render(request, "participant/label.html", context | {
            "assignment": review.assignment, "item": review.assignment.item, "label": review.label,
            "number": review.number, "total": review.total, "done": review.done, "reviewing": True,
            "back_url": None if review.previous_position is None else _label_page_url(participant,
                                                                                      review.previous_position),
            "after_url": _label_page_url(participant, review.next_position)}, status=400 if error else 200)
    progress = labelling_progress(participant=participant)
    if progress.assignment is None:  # nothing left, e.g. a researcher deleted the remaining items
        participant_complete(participant=participant)
        return redirect("participant:resume", participant.invite_token)
    return render(request, "participant/label.html", context | {
        "assignment": progress.assignment, "item": progress.assignment.item, "label": None,
        "number": progress.done + 1, "total": progress.total, "done": progress.done,
        "back_url": None if progress.previous_position is None else _label_page_url(participant,
                                                                                    progress.previous_position),
        "after_url": _label_page_url(participant)}, status=400 if error else 200)


@participant_page(step="done")
def done(request: HttpRequest, participant) -> HttpResponse:
    return render(request, "participant/done.html", {"participant": participant, "study": participant.study})


@require_http_methods(["GET", "POST"])
@participant_page()
def withdraw(request: HttpRequest, participant) -> HttpResponse:
    if participant.status == Participant.Status.DECLINED:  # nothing of theirs to withdraw
        return redirect("participant:declined", participant.invite_token)
    if request.method == "POST" and request.POST.get("confirm") == "yes":
        participant_withdraw(participant=participant)
    return render(request, "participant/withdraw.html", {"participant": participant, "study": participant.study})
