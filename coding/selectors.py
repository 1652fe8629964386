"""Reads of a coding round: its codings as DataFrames (a fixed number of queries, whatever the round's size), the
analysis payload (:mod:`coding.analysis`) for the results page and the API, and the codings export.

Excerpts are numbered from 1 in the order coders see them (``Excerpt.position + 1``); lenses likewise. Coders
appear under ``Coder.name`` only, never an account's name or email.
"""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
from django.db.models import F

from auditapp.models import distinct_names
from coding import analysis
from coding.models import Code, CodeMapping, Coder, CodingRound, Excerpt, ExcerptCoding, RoundLens
from common.export_rows import Export

CODING_COLUMNS = ["coder", "lens", "lens_name", "excerpt", "request", "model", "condition", "confirmed",
                  "confirmed_at", "memo"]


@dataclass(frozen=True)
class RoundCodings:
    """A round's sample, lenses, coders, codings and applied codes, read in eight queries."""

    excerpts: pd.DataFrame   # id, excerpt (number from 1), request, model_id, model (its name in tables), condition
    lenses: pd.DataFrame     # lens (id), number (from 1), name, codebook, version
    codes: pd.DataFrame      # code (id), lens, name, in codebook order within lens order
    coders: pd.DataFrame     # coder (id), name, lens, completed_at
    codings: pd.DataFrame    # coding (id), coder, excerpt (number), confirmed_at, memo
    applied: pd.DataFrame    # coding (id), code (id)
    mappings: dict[str, list[int]]   # name → code ids


def round_codings(coding_round: CodingRound) -> RoundCodings:
    excerpts = pd.DataFrame(
        Excerpt.objects.filter(round=coding_round).order_by("position")
        .values_list("id", "position", "request_id", "request__audit_model_id", "model_name", "condition"),
        columns=["id", "excerpt", "request", "model_id", "model", "condition"])
    excerpts["excerpt"] = excerpts["excerpt"] + 1
    # Models as the audit's tables name them, over the names they were drawn with: two sampled models of one name
    # stay two strata.
    drawn = distinct_names(excerpts[["model_id", "model"]].drop_duplicates().itertuples(index=False, name=None))
    excerpts["model"] = excerpts["model_id"].map(drawn)
    lenses = pd.DataFrame(
        RoundLens.objects.filter(round=coding_round).order_by("position", "id")
        .values_list("id", "codebook_id", "codebook__name", "codebook__version"),
        columns=["lens", "codebook", "name", "version"])
    lenses.insert(1, "number", range(1, len(lenses) + 1))
    codes = pd.DataFrame(
        Code.objects.filter(codebook_id__in=lenses["codebook"].tolist()).order_by("position", "id")
        .values_list("id", "codebook_id", "name"),
        columns=["code", "codebook", "name"])
    codes = (codes.merge(lenses[["lens", "codebook", "number"]], on="codebook")
             .sort_values("number", kind="stable")[["code", "lens", "name"]].reset_index(drop=True))
    coders = pd.DataFrame(
        Coder.objects.filter(round=coding_round).order_by("lens__position", "name")
        .values_list("id", "name", "lens_id", "completed_at"),
        columns=["coder", "name", "lens", "completed_at"])
    codings = pd.DataFrame(
        ExcerptCoding.objects.filter(coder__round=coding_round)
        .values_list("id", "coder_id", F("excerpt__position") + 1, "confirmed_at", "memo"),
        columns=["coding", "coder", "excerpt", "confirmed_at", "memo"])
    applied = pd.DataFrame(
        ExcerptCoding.codes.through.objects.filter(excerptcoding__coder__round=coding_round)
        .values_list("excerptcoding_id", "code_id"),
        columns=["coding", "code"])
    mappings = {name: [] for name in CodeMapping.objects.filter(round=coding_round).values_list("name", flat=True)}
    for name, code in CodeMapping.codes.through.objects.filter(codemapping__round=coding_round).values_list(
            "codemapping__name", "code_id"):
        mappings[name].append(code)
    return RoundCodings(excerpts, lenses, codes, coders, codings, applied, mappings)


def coder_progress(codings: RoundCodings) -> pd.DataFrame:
    """Per coder (in ``codings.coders`` order): excerpts confirmed, of the sample's size."""
    confirmed = codings.codings[codings.codings["confirmed_at"].notna()].groupby("coder").size()
    progress = codings.coders[["coder", "name", "lens", "completed_at"]].copy()
    progress["confirmed"] = progress["coder"].map(confirmed).fillna(0).astype(int)
    progress["of"] = len(codings.excerpts)
    return progress


def round_analysis(coding_round: CodingRound, codings: RoundCodings | None = None) -> dict:
    """The analysis payload: :func:`coding.analysis.round_analysis` keyed by lens ids and coder and code names,
    with each lens's number, codebook and coders' progress, and ``partial`` while any coder is still coding."""
    codings = codings or round_codings(coding_round)
    coder_names = codings.coders.set_index("coder")["name"]
    code_names = codings.codes.set_index("code")["name"]
    code_lens = codings.codes.set_index("code")["lens"]
    confirmed = codings.codings[codings.codings["confirmed_at"].notna()]
    applied = codings.applied.merge(codings.codings[["coding", "coder", "excerpt"]], on="coding")
    # Code names repeat across lenses (STEREOTYPES): only the codes of the coder's own lens are the coder's.
    coder_lens = codings.coders.set_index("coder")["lens"]
    applied = applied[applied["code"].map(code_lens).to_numpy() == applied["coder"].map(coder_lens).to_numpy()]
    figures = analysis.round_analysis(
        applied=pd.DataFrame({"excerpt": applied["excerpt"], "coder": applied["coder"].map(coder_names),
                              "code": applied["code"].map(code_names)}),
        confirmed=pd.DataFrame({"excerpt": confirmed["excerpt"], "coder": confirmed["coder"].map(coder_names)}),
        strata=codings.excerpts[["excerpt", "model", "condition"]],
        codes=codings.codes[["lens", "name"]].rename(columns={"name": "code"}),
        coders=pd.DataFrame({"coder": codings.coders["name"], "lens": codings.coders["lens"]}),
        mappings={name: [(int(code_lens[code]), code_names[code]) for code in codes if code in code_lens.index]
                  for name, codes in codings.mappings.items()})
    progress = coder_progress(codings).set_index("name")
    lens_rows = codings.lenses.set_index("lens")
    for lens in figures["lenses"]:
        row = lens_rows.loc[lens["lens"]]
        lens.update(number=int(row["number"]), name=row["name"], codebook=int(row["codebook"]),
                    version=int(row["version"]))
        for coder in lens["coders"]:
            coder["progress"] = {"confirmed": int(progress.at[coder["coder"], "confirmed"]),
                                 "of": len(codings.excerpts)}
    for mapping in figures["mappings"]:
        for column in mapping["columns"]:
            column["lens_number"] = int(lens_rows.at[column["lens"], "number"])
    partial = bool((progress["confirmed"] < len(codings.excerpts)).any()) or progress.empty
    return {"round": coding_round.id, "n_excerpts": len(codings.excerpts), "partial": partial, **figures}


def round_results(coding_round: CodingRound) -> dict:
    """The results page's data: the round's settings, its draw (the sample per model × condition), its lenses with
    coders and progress, and the analysis."""
    codings = round_codings(coding_round)
    strata = (codings.excerpts.groupby(["model", "condition"]).size().rename("n").reset_index()
              .to_dict("records"))
    draw = coding_round.draw or {}
    return {
        "settings": {
            "sample_size": coding_round.sample_size, "n_excerpts": len(codings.excerpts),
            "allocation": coding_round.get_allocation_display(), "eligible": coding_round.get_eligible_display(),
            "models_included": coding_round.models_included, "conditions_included": coding_round.conditions_included,
            "seed": coding_round.seed, "show_model": coding_round.show_model,
            "show_condition": coding_round.show_condition, "show_reference": coding_round.show_reference,
            "closed_at": coding_round.closed_at,
        },
        "draw": {"strata": [{"model": s["model"], "condition": s["condition"], "n": int(s["n"])} for s in strata],
                 "recorded": {key: value for key, value in draw.items() if isinstance(value, (str, int, float))}},
        "analysis": _table_cells(round_analysis(coding_round, codings)),
    }


def _table_cells(payload: dict) -> dict:
    """The payload with each matrix and stratum table also as rows of cells, which a template can loop over (it
    cannot index one list by another's position)."""
    for lens in payload["lenses"]:
        for coder in lens["coders"]:
            cooccurrence = coder["cooccurrence"]
            cooccurrence["rows"] = [{"code": code, "counts": counts}
                                    for code, counts in zip(cooccurrence["codes"], cooccurrence["matrix"], strict=True)]
            for table in (coder["by_condition"], coder["by_model"]):
                for row in table["rows"]:
                    row["cells"] = [{"level": level["level"], "count": count, "share": share}
                                    for level, count, share in zip(table["levels"], row["counts"], row["shares"],
                                                                   strict=True)]
    return payload


def code_columns(codings: RoundCodings) -> list[str]:
    """The CSV's code columns: ``lens<number>:<code name>`` for every code of every lens, in lens and codebook
    order (``lens1:WORDING``)."""
    numbers = codings.lenses.set_index("lens")["number"]
    return [f"lens{numbers[lens]}:{name}" for lens, name in codings.codes[["lens", "name"]].itertuples(index=False)]


def round_codings_rows(coding_round: CodingRound) -> tuple[RoundCodings, list[dict]]:
    """One record per coder × excerpt a coder has opened (``CODING_COLUMNS`` and ``codes``: the names of the codes
    given, in codebook order), ordered by lens, coder and excerpt."""
    codings = round_codings(coding_round)
    rows = (codings.codings
            .merge(codings.coders[["coder", "name", "lens"]], on="coder")
            .merge(codings.lenses[["lens", "number", "name", "version"]].rename(
                columns={"name": "codebook_name", "number": "lens_number"}), on="lens")
            .merge(codings.excerpts[["excerpt", "request", "model", "condition"]], on="excerpt"))
    order = codings.coders["coder"].tolist()
    rows["coder_order"] = rows["coder"].map({coder: i for i, coder in enumerate(order)})
    rows = rows.sort_values(["lens_number", "coder_order", "excerpt"]).reset_index(drop=True)
    code_order = {code: i for i, code in enumerate(codings.codes["code"])}
    given = codings.applied.assign(order=codings.applied["code"].map(code_order)).sort_values("order")
    given = given.assign(name=given["code"].map(codings.codes.set_index("code")["name"]))
    names_by_coding = given.groupby("coding")["name"].agg(list)
    records = [
        {"coder": row.name, "lens": int(row.lens_number), "lens_name": f"{row.codebook_name} (v{row.version})",
         "excerpt": int(row.excerpt), "request": int(row.request), "model": row.model, "condition": row.condition,
         "confirmed": pd.notna(row.confirmed_at), "confirmed_at": None if pd.isna(row.confirmed_at) else
         row.confirmed_at.to_pydatetime(), "memo": row.memo, "coding": int(row.coding)}
        for row in rows.itertuples(index=False)]
    for record in records:
        record["codes"] = names_by_coding.get(record.pop("coding"), [])
    return codings, records


def round_codings_export(coding_round: CodingRound) -> Export:
    """The codings as CSV rows: ``CODING_COLUMNS`` then one 0/1 column per code of every lens (``code_columns``);
    a coder's row is empty (not 0) under another lens's codes, which that coder never saw. On an excerpt the coder
    has not confirmed, a code ticked so far reads 1 and the others are empty, not 0: the coder has not said they
    are absent (a script that reads the cells as presence/absence without the ``confirmed`` column imputes
    nothing)."""
    codings, records = round_codings_rows(coding_round)
    columns = code_columns(codings)
    lens_of_column = [f"lens{number}:" for number in
                      codings.codes["lens"].map(codings.lenses.set_index("lens")["number"])]

    def row(record: dict) -> tuple:
        given = {f"lens{record['lens']}:{name}" for name in record["codes"]}
        own = f"lens{record['lens']}:"
        absent = 0 if record["confirmed"] else None
        flags = [(1 if column in given else absent) if prefix == own else None
                 for column, prefix in zip(columns, lens_of_column, strict=True)]
        return (*(record[name] for name in CODING_COLUMNS), *flags)
    return Export([*CODING_COLUMNS, *columns], records, transform=row)


FREQUENCY_COLUMNS = ["lens", "lens_name", "coder", "breakdown", "level", "code", "count", "n", "share", "partial"]


def round_analysis_frequency_rows(payload: dict) -> Export:
    """The analysis payload's frequencies as a long table (``FREQUENCY_COLUMNS``): per lens, coder and code the
    whole sample (``breakdown`` "all", ``level`` empty), then each condition and each model."""
    rows = []
    for lens in payload["lenses"]:
        lens_name = f"{lens['name']} (v{lens['version']})"
        for coder in lens["coders"]:
            head = (lens["number"], lens_name, coder["coder"])
            rows.extend((*head, "all", None, f["code"], f["count"], coder["n_coded"], f["share"], payload["partial"])
                        for f in coder["frequencies"])
            for breakdown in ("condition", "model"):
                table = coder[f"by_{breakdown}"]
                rows.extend((*head, breakdown, level["level"], row["code"], count, level["n"], share,
                             payload["partial"])
                            for row in table["rows"]
                            for level, count, share in zip(table["levels"], row["counts"], row["shares"],
                                                           strict=True))
    return Export(FREQUENCY_COLUMNS, rows)
