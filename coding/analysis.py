"""The figures of an error-analysis round (seed 000 §3.4 "Error Analysis", §4.3): per lens and coder, each code's
frequency, the share of excerpts with two or more codes, co-occurrences, each code by condition and by model; the
convergence of codes mapped across lenses; agreement per code when coders share a lens.

Inputs (DataFrames; ``excerpt``, ``coder``, ``lens`` and ``code`` are any hashable keys, codes unique within a
lens):
- ``applied``: one row per code a coder gave an excerpt (excerpt, coder, code); duplicates count once.
- ``confirmed``: one row per excerpt a coder confirmed (excerpt, coder).
- ``strata``: one row per excerpt of the sample (excerpt, model, condition).
- ``codes``: the codes of each lens in display order (lens, code); ``coders``: each coder's lens (coder, lens).
- ``mappings``: name → the (lens, code) pairs a researcher reads as one finding.

Denominators are the excerpts a coder **confirmed**: an excerpt confirmed with no code counts (its codes are all
absent); an excerpt opened or coded but not yet confirmed counts nowhere, nor do its codes, until it is confirmed.
A coder is never merged with another: every figure is one coder's. A lens with one coder has that coder's figures;
a lens with several reports each coder's own, and their agreement.

- Frequency of code k for coder c: count_k = Σ_e X[e, k] over c's confirmed excerpts e; share = count_k / n_c
  (§4.3: "WORDING (41%)" is 41 of 99).
- Two or more codes: the share of confirmed excerpts with Σ_k X[e, k] ≥ 2 (§4.3: 65%).
- Co-occurrence: C = Xᵀ X, so C[j, k] counts excerpts with both j and k, each pair once per excerpt; the diagonal
  is the frequency. The most common pairs are the off-diagonal cells by count (§4.3: STEREOTYPES+WORDING, n = 16).
- By stratum (condition, model): count of code k among the confirmed excerpts of the stratum and its share of
  them; a stratum with no confirmed excerpt of the coder has share None.
- Mapping convergence: per coder of a mapped lens, an excerpt is "present" when any of the lens's mapped codes is
  given; over the excerpts every such coder confirmed, the share where all agree (all present or all absent), and
  the excerpts where they diverge. Undefined (None + note) with fewer than two coders or no shared excerpt.
- Agreement (lenses with ≥ 2 coders), per code on presence/absence (0/1): Krippendorff's α, nominal, over every
  excerpt at least two of the lens's coders confirmed (``annotation.agreement.krippendorff_alpha_nominal``: the
  ``krippendorff`` package is GPL, a test-only dependency, and the tests check this against it); Cohen's κ per
  pair of coders over the excerpts both confirmed (``sklearn.metrics.cohen_kappa_score``); and per pair the share
  of excerpts given exactly the same set of codes. α and κ are None with a note when the code has no variance
  (every value the same: the expected disagreement is 0) or fewer than two excerpts are shared.
"""
from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
from sklearn.metrics import cohen_kappa_score

from annotation.agreement import krippendorff_alpha_nominal

DENOMINATOR_NOTE = ("Shares are of the excerpts each coder confirmed: an excerpt confirmed with no code counts, one "
                    "not yet confirmed does not (nor do its codes).")
TOP_PAIRS = 10


def _share(count: int, total: int) -> float | None:
    return count / total if total else None


class _CoderMatrix:
    """One coder's confirmed excerpts (sorted) × the lens's codes, 1 where the coder gave the code."""

    def __init__(self, *, coder, lens, excerpts: np.ndarray, codes: list, applied: pd.DataFrame):
        self.coder, self.lens, self.codes = coder, lens, codes
        self.excerpts = pd.Index(excerpts)
        self.values = np.zeros((len(self.excerpts), len(codes)), dtype=np.int64)
        rows = self.excerpts.get_indexer(applied["excerpt"])
        columns = pd.Index(codes).get_indexer(applied["code"])
        # Codes of unconfirmed excerpts (row -1) and codes outside the coder's lens (column -1) are left out.
        kept = (rows >= 0) & (columns >= 0)
        self.values[rows[kept], columns[kept]] = 1

    @property
    def n(self) -> int:
        return len(self.excerpts)

    def on(self, excerpts: pd.Index) -> np.ndarray:
        return self.values[self.excerpts.get_indexer(excerpts)]


def _stratum_table(matrix: _CoderMatrix, stratum: pd.Series) -> dict:
    """Count and share of each code within each level of ``stratum`` (indexed by excerpt) among the coder's
    confirmed excerpts; every level of the sample is a column, so a level without the code reads 0."""
    levels = sorted(stratum.unique().tolist())
    level_codes = pd.Index(levels).get_indexer(stratum.reindex(matrix.excerpts))
    membership = np.zeros((matrix.n, len(levels)), dtype=np.int64)
    membership[np.arange(matrix.n), level_codes] = 1
    counts = membership.T @ matrix.values
    totals = membership.sum(axis=0)
    return {
        "levels": [{"level": level, "n": int(total)} for level, total in zip(levels, totals, strict=True)],
        "rows": [{"code": code,
                  "counts": [int(c) for c in counts[:, k]],
                  "shares": [_share(int(c), int(t)) for c, t in zip(counts[:, k], totals, strict=True)]}
                 for k, code in enumerate(matrix.codes)],
    }


def coder_figures(matrix: _CoderMatrix, strata: pd.DataFrame, *, top_pairs: int = TOP_PAIRS) -> dict:
    """Frequencies, the ≥ 2 codes share, co-occurrences and the by-condition and by-model tables of one coder."""
    counts = matrix.values.sum(axis=0)
    multi = int((matrix.values.sum(axis=1) >= 2).sum())
    cooccurrence = matrix.values.T @ matrix.values
    first, second = np.triu_indices(len(matrix.codes), k=1)
    pair_counts = cooccurrence[first, second]
    # Most common first; ties keep the codebook's order (a stable sort over the upper triangle's row order).
    order = np.argsort(-pair_counts, kind="stable")
    order = order[pair_counts[order] > 0][:top_pairs]
    by = strata.set_index("excerpt")
    return {
        "coder": matrix.coder,
        "n_coded": matrix.n,
        "frequencies": [{"code": code, "count": int(count), "share": _share(int(count), matrix.n)}
                        for code, count in zip(matrix.codes, counts, strict=True)],
        "multi_code": {"count": multi, "share": _share(multi, matrix.n)},
        "cooccurrence": {"codes": list(matrix.codes), "matrix": cooccurrence.tolist()},
        "top_pairs": [{"codes": [matrix.codes[first[i]], matrix.codes[second[i]]], "count": int(pair_counts[i])}
                      for i in order],
        "by_condition": _stratum_table(matrix, by["condition"]),
        "by_model": _stratum_table(matrix, by["model"]),
    }


def _undefined_note(values: np.ndarray, n_shared: int) -> str | None:
    if n_shared < 2:
        return "undefined: fewer than two excerpts confirmed by two coders"
    if len(np.unique(values)) < 2:
        return ("undefined: no variance (the code is " + ("present" if values.flat[0] else "absent")
                + " on every shared excerpt for every coder)")
    return None


def lens_agreement(matrices: list[_CoderMatrix]) -> dict:
    """Per code α (all coders of the lens) and κ (each pair); per pair the exact code-set agreement."""
    pairs = []
    for a, b in itertools.combinations(matrices, 2):
        shared = a.excerpts.intersection(b.excerpts)
        same = (a.on(shared) == b.on(shared)).all(axis=1)
        pairs.append({"coders": [a.coder, b.coder], "n_shared": len(shared),
                      "exact_set_agreement": _share(int(same.sum()), len(shared)), "shared": shared})
    pairable = pd.Index(np.concatenate([m.excerpts.to_numpy() for m in matrices])).value_counts()
    pairable = pairable[pairable >= 2].index
    codes = []
    for k, code in enumerate(matrices[0].codes):
        long = pd.concat([pd.DataFrame({"participant": m.coder, "item": m.excerpts, "value": m.values[:, k]})
                          for m in matrices], ignore_index=True)
        long = long[long["item"].isin(pairable)]
        alpha_note = _undefined_note(long["value"].to_numpy(), len(pairable))
        alpha = None if alpha_note else krippendorff_alpha_nominal(long)
        if alpha is not None and math.isnan(alpha):
            alpha, alpha_note = None, "undefined"
        kappas = []
        for pair, (a, b) in zip(pairs, itertools.combinations(matrices, 2), strict=True):
            left, right = a.on(pair["shared"])[:, k], b.on(pair["shared"])[:, k]
            note = _undefined_note(np.concatenate([left, right]), len(pair["shared"]))
            kappas.append({"coders": pair["coders"], "n_shared": pair["n_shared"],
                           "kappa": None if note else float(cohen_kappa_score(left, right)), "note": note})
        codes.append({"code": code, "n_excerpts": len(pairable), "alpha": alpha, "alpha_note": alpha_note,
                      "kappa": kappas})
    return {"pairs": [{key: value for key, value in pair.items() if key != "shared"} for pair in pairs],
            "codes": codes}


def mapping_convergence(name: str, members: list[tuple], matrices: list[_CoderMatrix]) -> dict:
    """Per coder of a mapped lens the share with any mapped code, and where the coders agree or diverge."""
    columns, presence = [], []
    for matrix in matrices:
        mapped = [code for lens, code in members if lens == matrix.lens and code in matrix.codes]
        if not mapped:
            continue
        present = matrix.values[:, [matrix.codes.index(code) for code in mapped]].any(axis=1)
        presence.append(pd.Series(present, index=matrix.excerpts))
        columns.append({"lens": matrix.lens, "coder": matrix.coder, "codes": mapped, "count": int(present.sum()),
                        "n": matrix.n, "share": _share(int(present.sum()), matrix.n)})
    result = {"name": name, "columns": columns, "n_shared": 0, "all_present": None, "all_absent": None,
              "agreement": None, "divergent": [], "note": None}
    if len(columns) < 2:
        result["note"] = "undefined: the mapping reaches fewer than two coders"
        return result
    table = pd.concat(presence, axis=1, join="inner").sort_index()
    table.columns = [column["coder"] for column in columns]
    all_present, all_absent = table.all(axis=1), ~table.any(axis=1)
    diverge = table[~(all_present | all_absent)]
    result.update(n_shared=len(table), all_present=int(all_present.sum()), all_absent=int(all_absent.sum()),
                  agreement=_share(int((all_present | all_absent).sum()), len(table)),
                  divergent=[{"excerpt": excerpt, "present": [c for c, given in row.items() if given]}
                             for excerpt, row in diverge.iterrows()])
    if not len(table):
        result["note"] = "undefined: no excerpt confirmed by every mapped coder"
    return result


def round_analysis(*, applied: pd.DataFrame, confirmed: pd.DataFrame, strata: pd.DataFrame, codes: pd.DataFrame,
                   coders: pd.DataFrame, mappings: dict[str, list[tuple]] | None = None,
                   top_pairs: int = TOP_PAIRS) -> dict:
    """Every figure of the round (module docstring), as JSON-ready dicts: ``lenses`` in the order of ``codes``,
    each with its coders' figures (in the order of ``coders``) and, with two or more coders, ``agreement``;
    ``mappings`` in the order given."""
    missing = set(confirmed["excerpt"]) - set(strata["excerpt"])
    if missing:
        raise ValueError(f"confirmed excerpts without a model and condition: {sorted(missing)[:5]}")
    confirmed = confirmed.drop_duplicates(["excerpt", "coder"])
    applied = applied.drop_duplicates(["excerpt", "coder", "code"])
    confirmed_by = {coder: np.sort(group["excerpt"].to_numpy()) for coder, group in confirmed.groupby("coder")}
    applied_by = dict(list(applied.groupby("coder")))
    empty = applied.iloc[:0]
    matrices = {}
    for coder, lens in coders[["coder", "lens"]].itertuples(index=False):
        matrices[coder] = _CoderMatrix(coder=coder, lens=lens, excerpts=confirmed_by.get(coder, np.array([])),
                                       codes=codes.loc[codes["lens"] == lens, "code"].tolist(),
                                       applied=applied_by.get(coder, empty))
    lenses = []
    for lens in codes["lens"].drop_duplicates():
        of_lens = [m for m in matrices.values() if m.lens == lens]
        lenses.append({"lens": lens,
                       "coders": [coder_figures(m, strata, top_pairs=top_pairs) for m in of_lens],
                       "agreement": lens_agreement(of_lens) if len(of_lens) >= 2 else None})
    return {"notes": [DENOMINATOR_NOTE], "lenses": lenses,
            "mappings": [mapping_convergence(name, members, list(matrices.values()))
                         for name, members in (mappings or {}).items()]}
