"""Coders' pages: the intro (the lens and its codebook, the keys), one excerpt at a time, the done page, and the
save endpoint the excerpt page's script posts to. Thin: access is checked by ``coding.access.coder_page``, writes
go through ``coding.coding_services``.

Without scripts the excerpt page is a plain form: its buttons save the codes and memo and go on (``go`` is
``confirm``, ``previous`` or ``next``). With scripts every change is posted to the save endpoint at once (JSON
``{"codes": [ids], "memo": text, "confirm": bool, "revision": n, "writer": page id, "seq": n, "coder": id}``),
which answers the coder's progress, the new revision and where to go next, and with ``superseded`` the stored
codes and memo when what it sent was not stored (a later save of the same page, or this one, was stored first). A
save based on an older revision than the stored one (another device saved since) is answered 409 with ``conflict``
and the stored state; the form shows the stored state beside what the coder sent. A form or save of a page opened
by another coder than the one the request reaches (another account logged in since in this browser) is refused,
403, and stores nothing.
"""
from __future__ import annotations

from dataclasses import dataclass

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation.models import LabelValue
from coding.access import WRONG_CODER, CoderAccess, coder_page, excerpt_of_coder
from coding.codebooks import MAX_CODES
from coding.coding_services import CodingConflict, CodingInputError, coder_progress, coding_save
from coding.models import Code, Excerpt, ExcerptCoding
from common.participant_input import InputError, form_number, json_object, page_write, whole_number

# Keys the excerpt page keeps for moving around; a code whose shortcut is one of them is toggled by its
# checkbox only (the intro says so).
NAVIGATION_KEYS = frozenset({"p", "n", "m", "?"})
GO_CHOICES = ("confirm", "previous", "next")
MAX_COUNT = 2**31 - 1  # a revision or a page's save count (PositiveIntegerField on every database)


@dataclass(frozen=True)
class CodeChoice:
    code: Code
    key: str
    checked: bool = False


def label_words(value: int | None) -> str:
    """A label as the app names it (annotation.models.LabelValue)."""
    if value is None:
        return "none"
    try:
        return LabelValue(value).label
    except ValueError:
        return f"label {value}"


def _code_choices(access: CoderAccess, checked_ids: set[int] = frozenset()) -> list[CodeChoice]:
    codes = Code.objects.filter(codebook_id=access.coder.lens.codebook_id).order_by("position", "id")
    return [CodeChoice(code=code, key="" if code.shortcut in NAVIGATION_KEYS else code.shortcut,
                       checked=code.id in checked_ids) for code in codes]


def _code_names(access: CoderAccess, values: list[str]) -> list[str]:
    """The names of the coder's codes among posted ids (others are left out)."""
    ids = {int(value) for value in values if value.isascii() and value.isdigit()}
    return [choice.code.name for choice in _code_choices(access) if choice.code.id in ids]


def _of_another_coder(posted: str | None, access: CoderAccess) -> bool:
    """Whether a form names another coder than the one the request reaches: a page opened by another account in
    this browser, still open after someone else logged in (the session cookie is the browser's, not the page's)."""
    return posted is not None and posted != str(access.coder.id)


def _resume_url(access: CoderAccess) -> str:
    progress = coder_progress(coder=access.coder)
    if progress.first_unconfirmed is None:
        return access.url("done")
    return access.url("excerpt", excerpt_id=progress.first_unconfirmed.id)


def _excerpt_ids(access: CoderAccess) -> list[int]:
    return list(Excerpt.objects.filter(round_id=access.coder.round_id).order_by("position")
                .values_list("id", flat=True))


def _after(access: CoderAccess, excerpt_ids: list[int], index: int, go: str) -> str:
    """Where a button (or key) leads from the excerpt at ``index``: the previous or next excerpt by position;
    after the last one, the first still unconfirmed (or the done page)."""
    if go == "previous":
        return access.url("excerpt", excerpt_id=excerpt_ids[max(index - 1, 0)])
    if index + 1 < len(excerpt_ids):
        return access.url("excerpt", excerpt_id=excerpt_ids[index + 1])
    return _resume_url(access)


@require_GET
@coder_page
def resume(request: HttpRequest, access: CoderAccess) -> HttpResponse:
    """The coder's link: the intro before the first save, then the first unconfirmed excerpt, then done."""
    if access.coder.started_at is None:
        return redirect(access.url("intro"))
    return redirect(_resume_url(access))


@require_GET
@coder_page
def intro(request: HttpRequest, access: CoderAccess) -> HttpResponse:
    choices = _code_choices(access)
    return render(request, "coding/code_intro.html", {
        "access": access, "round": access.coder.round, "codebook": access.coder.lens.codebook, "choices": choices,
        "reserved_shortcuts": [choice.code for choice in choices if choice.code.shortcut and not choice.key],
        "progress": coder_progress(coder=access.coder), "start_url": _resume_url(access)})


@require_http_methods(["GET", "POST"])
@coder_page
def excerpt(request: HttpRequest, access: CoderAccess, excerpt_id: int) -> HttpResponse:
    shown = excerpt_of_coder(access, excerpt_id)
    excerpt_ids = _excerpt_ids(access)
    index = excerpt_ids.index(shown.id)
    error = conflict = None
    if request.method == "POST" and _of_another_coder(request.POST.get("coder"), access):
        return render(request, "coding/code_message.html", {
            "access": access, "round": access.coder.round, "heading": "Not saved", "message": WRONG_CODER},
            status=403)
    if request.method == "POST":
        go = request.POST.get("go", "confirm")
        try:
            if go not in GO_CHOICES:
                raise CodingInputError(f"go must be one of {', '.join(GO_CHOICES)}.")
            code_ids = [form_number(value, field="code") for value in request.POST.getlist("code")]
            revision = request.POST.get("revision")
            coding_save(coder=access.coder, excerpt_id=shown.id, code_ids=code_ids,
                        memo=request.POST.get("memo", ""), confirm=go == "confirm",
                        base_revision=None if revision is None else form_number(revision, field="revision"))
        except (InputError, CodingInputError) as refused:
            error = str(refused)
        except CodingConflict as stale:
            error = str(stale) + " The page now shows what is saved; what you sent is below."
            conflict = {"codes": _code_names(access, request.POST.getlist("code")),
                        "memo": request.POST.get("memo", "")}
        else:
            return redirect(_after(access, excerpt_ids, index, go))
    coding = ExcerptCoding.objects.filter(coder=access.coder, excerpt=shown).first()
    checked = set() if coding is None else set(coding.codes.values_list("id", flat=True))
    if error is not None and conflict is None:  # show what the coder sent beside the reason it was refused
        checked = {int(value) for value in request.POST.getlist("code") if value.isascii() and value.isdigit()}
    progress = coder_progress(coder=access.coder)
    return render(request, "coding/code_excerpt.html", {
        "access": access, "round": access.coder.round, "codebook": access.coder.lens.codebook,
        "excerpt": shown, "number": index + 1, "total": len(excerpt_ids), "progress": progress,
        "choices": _code_choices(access, checked),
        "memo": request.POST.get("memo", "") if error is not None and conflict is None
        else ("" if coding is None else coding.memo),
        "revision": 0 if coding is None else coding.revision, "conflict": conflict,
        "confirmed": coding is not None and coding.confirmed_at is not None,
        "model_label": label_words(shown.label), "reference_label": label_words(shown.reference_label),
        "previous_url": access.url("excerpt", excerpt_id=excerpt_ids[index - 1]) if index > 0 else "",
        "next_url": access.url("excerpt", excerpt_id=excerpt_ids[index + 1]) if index + 1 < len(excerpt_ids) else "",
        "save_url": access.url("save", excerpt_id=shown.id), "intro_url": access.url("intro"), "error": error},
        status=409 if conflict else 400 if error else 200)


@require_POST
@coder_page
def save(request: HttpRequest, access: CoderAccess, excerpt_id: int) -> JsonResponse:
    """The excerpt page's autosave: the full code set and memo, and ``confirm`` for Enter."""
    shown = excerpt_of_coder(access, excerpt_id)
    try:
        data = json_object(request.body)
        page_coder = data.get("coder")
        if page_coder is not None and whole_number(page_coder, field="coder", minimum=1) != access.coder.id:
            return JsonResponse({"error": WRONG_CODER, "wrong_coder": True}, status=403)
        codes = data.get("codes", [])
        if not isinstance(codes, list) or len(codes) > MAX_CODES:
            raise InputError("codes", f"must be a list of at most {MAX_CODES} code ids")
        memo = data.get("memo", "")
        if not isinstance(memo, str):
            raise InputError("memo", "must be a text")
        confirm = data.get("confirm", False)
        if not isinstance(confirm, bool):
            raise InputError("confirm", "must be true or false")
        revision = data.get("revision")
        page = page_write(data)
        coding = coding_save(coder=access.coder, excerpt_id=shown.id, memo=memo, confirm=confirm,
                             code_ids=[whole_number(code, field=f"codes[{n}]", minimum=1)
                                       for n, code in enumerate(codes)],
                             base_revision=None if revision is None else whole_number(revision, field="revision",
                                                                                      maximum=MAX_COUNT),
                             writer=page.writer, writer_seq=page.seq)
    except (InputError, CodingInputError) as refused:
        return JsonResponse({"error": str(refused)}, status=400)
    except CodingConflict as stale:
        stored = stale.stored
        return JsonResponse({"error": str(stale), "conflict": True, "stored": {
            "codes": sorted(stored.codes.values_list("id", flat=True)), "memo": stored.memo,
            "revision": stored.revision, "confirmed": stored.confirmed_at is not None}}, status=409)
    excerpt_ids = _excerpt_ids(access)
    progress = coder_progress(coder=access.coder)
    answer = {"confirmed": coding.confirmed_at is not None, "revision": coding.revision,
              "progress": {"confirmed": progress.confirmed, "total": progress.total},
              "next_url": _after(access, excerpt_ids, excerpt_ids.index(shown.id), "next"),
              "superseded": coding.superseded}
    if coding.superseded:  # what the page sent was not stored: the page compares what is with what it shows
        answer["stored"] = {"codes": sorted(coding.codes.values_list("id", flat=True)), "memo": coding.memo}
    return JsonResponse(answer)


@require_GET
@coder_page
def done(request: HttpRequest, access: CoderAccess) -> HttpResponse:
    progress = coder_progress(coder=access.coder)
    if not progress.complete:
        return redirect(_resume_url(access))
    excerpts = Excerpt.objects.filter(round_id=access.coder.round_id).order_by("position")
    return render(request, "coding/code_done.html", {
        "access": access, "round": access.coder.round, "codebook": access.coder.lens.codebook,
        "progress": progress, "excerpts": [(n, item, access.url("excerpt", excerpt_id=item.id))
                                           for n, item in enumerate(excerpts, start=1)]})
