"""Reads of error-analysis rounds for the researcher's API: the rounds, one round's settings, draw, lenses, coders
with their progress, and mappings, and the sample of excerpts with its strata."""
from __future__ import annotations

from django.db.models import Count, Q, QuerySet

from coding.models import Coder, CodingRound, Excerpt, RoundLens
from coding.round_services import invite_path
from common.export_rows import Export


def round_list(*, audit_id: int | None = None) -> QuerySet[CodingRound]:
    """Rounds, newest first, each with ``n_excerpts``, ``n_lenses`` and ``n_coders``; only one audit's with
    ``audit_id``."""
    rounds = CodingRound.objects.annotate(n_excerpts=Count("excerpts", distinct=True),
                                          n_lenses=Count("lenses", distinct=True),
                                          n_coders=Count("coders", distinct=True)).order_by("-created_at", "-id")
    return rounds if audit_id is None else rounds.filter(audit_id=audit_id)


def draw_summary(coding_round: CodingRound) -> dict:
    """The round's draw without its ids: algorithm, seed, rule, sizes, and per stratum the model (id and name as
    the excerpts show it), the condition, the eligible count and the allocation."""
    draw = coding_round.draw or {}
    names = dict(Excerpt.objects.filter(round=coding_round).values_list("request__audit_model_id", "model_name")
                 .distinct())
    return {"algorithm": draw.get("algorithm"), "seed": draw.get("seed"), "allocation": draw.get("allocation"),
            "n": draw.get("n"), "n_eligible": draw.get("n_eligible"),
            "strata": [{"model": s["model"], "model_name": names.get(s["model"]), "condition": s["condition"],
                        "eligible": s["eligible"], "allocated": s["allocated"]} for s in draw.get("strata", [])]}


def round_coders(coding_round: CodingRound) -> list[dict]:
    """The round's coders by lens and name, with how many excerpts each has confirmed and the path of their invite
    link (to be shown to researchers only)."""
    coders = (Coder.objects.filter(round=coding_round).select_related("lens")
              .annotate(n_confirmed=Count("codings", filter=Q(codings__confirmed_at__isnull=False)))
              .order_by("lens__position", "name"))
    n_excerpts = coding_round.excerpts.count()
    return [{"id": coder.id, "name": coder.name, "lens": coder.lens_id, "lens_position": coder.lens.position,
             "user": coder.user_id, "invite_path": invite_path(coder), "n_confirmed": coder.n_confirmed,
             "n_excerpts": n_excerpts, "started_at": coder.started_at, "completed_at": coder.completed_at}
            for coder in coders]


def round_detail(coding_round: CodingRound) -> dict:
    """Everything the round's API detail shows: settings, draw summary, lenses, coders, mappings."""
    lenses = (RoundLens.objects.filter(round=coding_round).select_related("codebook")
              .annotate(n_codes=Count("codebook__codes")).order_by("position"))
    lens_of_codebook = {lens.codebook_id: lens.position for lens in lenses}
    mappings = [{"id": mapping.id, "name": mapping.name,
                 "codes": [{"id": code.id, "name": code.name, "lens_position": lens_of_codebook.get(code.codebook_id)}
                           for code in mapping.codes.all()]}
                for mapping in coding_round.mappings.prefetch_related("codes")]
    return {
        "id": coding_round.id, "audit": coding_round.audit_id, "name": coding_round.name,
        "sample_size": coding_round.sample_size, "allocation": coding_round.allocation,
        "eligible": coding_round.eligible, "models_included": coding_round.models_included,
        "conditions_included": coding_round.conditions_included, "seed": coding_round.seed,
        "show_model": coding_round.show_model, "show_condition": coding_round.show_condition,
        "show_reference": coding_round.show_reference, "created_at": coding_round.created_at,
        "closed_at": coding_round.closed_at, "draw": draw_summary(coding_round),
        "lenses": [{"id": lens.id, "position": lens.position, "codebook": lens.codebook_id,
                    "codebook_name": lens.codebook.name, "codebook_version": lens.codebook.version,
                    "n_codes": lens.n_codes} for lens in lenses],
        "coders": round_coders(coding_round), "mappings": mappings,
    }


EXCERPT_EXPORT = ["position", "excerpt", "request_id", "model", "model_name", "condition", "target", "preceding",
                  "following", "label", "explanation", "reference_label", "majority_label"]


def round_excerpts_export(*, coding_round: CodingRound) -> Export:
    """The round's sample in display order, one row per excerpt with its stratum (model id and name, condition)
    and the snapshot coders see."""
    rows = (Excerpt.objects.filter(round=coding_round).order_by("position")
            .values_list("position", "id", "request_id", "request__audit_model_id", "model_name", "condition",
                         "target", "preceding", "following", "label", "explanation", "reference_label",
                         "majority_label"))
    return Export(EXCERPT_EXPORT, rows)
