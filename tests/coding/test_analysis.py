"""The round's figures (coding.analysis) on hand-worked examples, and agreement against the reference libraries
(``krippendorff`` is a test-only dependency; scikit-learn's ``cohen_kappa_score``)."""
from __future__ import annotations

import json

import krippendorff
import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score

from coding.analysis import round_analysis

CODES_A = ["WORDING", "STEREOTYPES", "TONE", "INTENT"]
# Excerpt → (model, condition).
STRATA = {1: ("m1", "zs"), 2: ("m2", "zs"), 3: ("m1", "cot"), 4: ("m2", "cot"), 5: ("m1", "cot"), 6: ("m2", "zs")}


def frames(applied: list[tuple], confirmed: list[tuple], *, codes: dict, coders: dict, strata: dict = STRATA):
    return {
        "applied": pd.DataFrame(applied, columns=["excerpt", "coder", "code"]),
        "confirmed": pd.DataFrame(confirmed, columns=["excerpt", "coder"]),
        "strata": pd.DataFrame([(e, m, c) for e, (m, c) in strata.items()], columns=["excerpt", "model", "condition"]),
        "codes": pd.DataFrame([(lens, code) for lens, names in codes.items() for code in names], columns=["lens", "code"]),
        "coders": pd.DataFrame(list(coders.items()), columns=["coder", "lens"]),
    }


def toy() -> dict:
    applied = [(1, "ann", "WORDING"), (1, "ann", "STEREOTYPES"),
               (2, "ann", "WORDING"), (2, "ann", "WORDING"),            # given twice: counts once
               (3, "ann", "WORDING"), (3, "ann", "STEREOTYPES"), (3, "ann", "TONE"),
               (5, "ann", "STEREOTYPES"), (5, "ann", "TONE"),
               (6, "ann", "TONE")]                                      # excerpt 6 is not confirmed: left out
    confirmed = [(1, "ann"), (2, "ann"), (3, "ann"), (4, "ann"), (5, "ann")]   # 4: confirmed with no code
    return frames(applied, confirmed, codes={"A": CODES_A}, coders={"ann": "A"})


def test_six_excerpt_toy_by_hand():
    result = round_analysis(**toy())
    json.dumps(result)  # the payload is JSON as it stands
    [lens] = result["lenses"]
    assert lens["lens"] == "A" and lens["agreement"] is None
    [ann] = lens["coders"]
    # Denominator: the 5 confirmed excerpts (1–5); 4 counts with no code; 6 (unconfirmed) does not.
    assert ann["n_coded"] == 5
    # WORDING on 1, 2, 3 → 3/5; STEREOTYPES on 1, 3, 5 → 3/5; TONE on 3, 5 → 2/5 (6 left out); INTENT 0/5.
    assert [(f["code"], f["count"], f["share"]) for f in ann["frequencies"]] == [
        ("WORDING", 3, 0.6), ("STEREOTYPES", 3, 0.6), ("TONE", 2, 0.4), ("INTENT", 0, 0.0)]
    # Two or more codes: 1 (2 codes), 3 (3), 5 (2) → 3/5.
    assert ann["multi_code"] == {"count": 3, "share": 0.6}
    # Pairs once per excerpt: W+S on 1, 3 → 2; W+T on 3 → 1; S+T on 3, 5 → 2; the diagonal is the frequency.
    assert ann["cooccurrence"]["matrix"] == [[3, 2, 1, 0], [2, 3, 2, 0], [1, 2, 2, 0], [0, 0, 0, 0]]
    assert ann["top_pairs"] == [{"codes": ["WORDING", "STEREOTYPES"], "count": 2},
                                {"codes": ["STEREOTYPES", "TONE"], "count": 2},
                                {"codes": ["WORDING", "TONE"], "count": 1}]
    # By condition: cot = 3, 4, 5 (n 3): W 1 (3), S 2 (3, 5), T 2 (3, 5); zs = 1, 2 (n 2; 6 unconfirmed): W 2, S 1, T 0.
    by_condition = ann["by_condition"]
    assert by_condition["levels"] == [{"level": "cot", "n": 3}, {"level": "zs", "n": 2}]
    rows = {row["code"]: row for row in by_condition["rows"]}
    assert rows["WORDING"]["counts"] == [1, 2] and rows["WORDING"]["shares"] == pytest.approx([1 / 3, 1.0])
    assert rows["STEREOTYPES"]["counts"] == [2, 1] and rows["TONE"]["counts"] == [2, 0]
    assert rows["TONE"]["shares"] == pytest.approx([2 / 3, 0.0])
    # By model: m1 = 1, 3, 5 (n 3): W 2, S 3, T 2; m2 = 2, 4 (n 2): W 1, S 0, T 0.
    rows = {row["code"]: row["counts"] for row in ann["by_model"]["rows"]}
    assert ann["by_model"]["levels"] == [{"level": "m1", "n": 3}, {"level": "m2", "n": 2}]
    assert rows == {"WORDING": [2, 1], "STEREOTYPES": [3, 0], "TONE": [2, 0], "INTENT": [0, 0]}
    assert "confirmed" in result["notes"][0]


def test_a_coder_who_confirmed_nothing_has_no_shares_rather_than_zero():
    data = toy()
    data["coders"] = pd.DataFrame([("ann", "A"), ("bob", "A")], columns=["coder", "lens"])
    [lens] = round_analysis(**data)["lenses"]
    bob = lens["coders"][1]
    assert bob["n_coded"] == 0 and {f["share"] for f in bob["frequencies"]} == {None}
    assert bob["multi_code"]["share"] is None
    # Agreement over no shared excerpt is undefined, never 0.
    assert {code["alpha"] for code in lens["agreement"]["codes"]} == {None}
    assert lens["agreement"]["pairs"][0]["exact_set_agreement"] is None


def test_codes_of_an_other_lens_are_not_counted_for_a_coder():
    data = toy()
    data["applied"] = pd.concat([data["applied"], pd.DataFrame([(1, "ann", "pathologization")],
                                                                columns=["excerpt", "coder", "code"])])
    [lens] = round_analysis(**data)["lenses"]
    assert [f["code"] for f in lens["coders"][0]["frequencies"]] == CODES_A


def test_mapping_convergence_by_hand():
    # Lens A's STEREOTYPES (coder ann) mapped to lens B's STEREOTYPES (coder bea); bea also gave IFL.
    applied = [(1, "ann", "STEREOTYPES"), (3, "ann", "STEREOTYPES"), (5, "ann", "STEREOTYPES"),
               (1, "bea", "STEREOTYPES"), (2, "bea", "STEREOTYPES"), (5, "bea", "STEREOTYPES"), (6, "bea", "IFL")]
    confirmed = [(e, "ann") for e in (1, 2, 3, 4, 5)] + [(e, "bea") for e in (1, 2, 3, 4, 5, 6)]
    data = frames(applied, confirmed, codes={"A": CODES_A, "B": ["IFL", "STEREOTYPES"]},
                  coders={"ann": "A", "bea": "B"})
    result = round_analysis(**data, mappings={"Stereotypes": [("A", "STEREOTYPES"), ("B", "STEREOTYPES")]})
    [mapping] = result["mappings"]
    # ann: 1, 3, 5 of 5 → 0.6; bea: 1, 2, 5 of 6 → 0.5.
    assert [(c["coder"], c["count"], c["n"], c["share"]) for c in mapping["columns"]] == [
        ("ann", 3, 5, 0.6), ("bea", 3, 6, 0.5)]
    # Shared excerpts 1–5: both present on 1, 5; both absent on 4; diverge on 2 (bea) and 3 (ann) → 3/5 agree.
    assert (mapping["n_shared"], mapping["all_present"], mapping["all_absent"]) == (5, 2, 1)
    assert mapping["agreement"] == 0.6
    assert mapping["divergent"] == [{"excerpt": 2, "present": ["bea"]}, {"excerpt": 3, "present": ["ann"]}]
    json.dumps(result)


def test_a_mapping_within_one_coder_has_no_convergence():
    result = round_analysis(**toy(), mappings={"Identity": [("A", "INTENT"), ("A", "TONE")]})
    [mapping] = result["mappings"]
    # One coder: TONE or INTENT on 3, 5 → 2 of 5, and nothing to converge with.
    assert mapping["columns"][0]["count"] == 2 and mapping["agreement"] is None and "fewer than two" in mapping["note"]


def random_codings(rng, *, coders: list[str], n_excerpts: int, codes: list[str], p_confirmed: float = 0.85):
    applied, confirmed = [], []
    for coder in coders:
        given = rng.random((n_excerpts, len(codes))) < rng.uniform(0.2, 0.5, size=len(codes))
        for e in range(n_excerpts):
            if rng.random() < p_confirmed:
                confirmed.append((e, coder))
            applied.extend((e, coder, codes[k]) for k in np.flatnonzero(given[e]))
    strata = {e: (f"m{e % 3}", ("zs", "cot")[e % 2]) for e in range(n_excerpts)}
    return frames(applied, confirmed, codes={"A": codes}, coders=dict.fromkeys(coders, "A"), strata=strata)


def presence_matrix(data: dict, coders: list[str], code: str, n_excerpts: int) -> np.ndarray:
    """Coders × excerpts, 1/0 where confirmed, NaN where not (the krippendorff package's reliability data)."""
    matrix = np.full((len(coders), n_excerpts), np.nan)
    for i, coder in enumerate(coders):
        done = data["confirmed"].loc[data["confirmed"]["coder"] == coder, "excerpt"].to_numpy()
        matrix[i, done] = 0
        given = data["applied"][(data["applied"]["coder"] == coder) & (data["applied"]["code"] == code)]["excerpt"]
        given = given[given.isin(done)].to_numpy()
        matrix[i, given] = 1
    return matrix


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("n_coders", [2, 3])
def test_agreement_equals_krippendorff_and_scikit_learn(seed, n_coders):
    rng = np.random.default_rng(seed)
    coders, codes, n = ["ann", "bob", "cy"][:n_coders], ["W", "S", "T"], 40
    data = random_codings(rng, coders=coders, n_excerpts=n, codes=codes)
    [lens] = round_analysis(**data)["lenses"]
    agreement = lens["agreement"]
    for k, code in enumerate(codes):
        matrix = presence_matrix(data, coders, code, n)
        entry = agreement["codes"][k]
        assert entry["alpha"] == pytest.approx(
            krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal"), abs=1e-12)
        for pair in entry["kappa"]:
            a, b = (matrix[coders.index(c)] for c in pair["coders"])
            both = ~np.isnan(a) & ~np.isnan(b)
            assert pair["n_shared"] == both.sum()
            assert pair["kappa"] == pytest.approx(cohen_kappa_score(a[both], b[both]), abs=1e-12)
    for pair in agreement["pairs"]:
        stacked = [np.stack([presence_matrix(data, [c], code, n)[0] for code in codes]) for c in pair["coders"]]
        both = ~np.isnan(stacked[0][0]) & ~np.isnan(stacked[1][0])
        same = (stacked[0][:, both] == stacked[1][:, both]).all(axis=0)
        assert pair["exact_set_agreement"] == pytest.approx(same.mean())


def test_a_code_without_variance_has_undefined_agreement_with_a_note():
    # Both coders confirm 1–4; WORDING on every one by both; TONE never; STEREOTYPES differs on 2 of 4.
    applied = [(e, c, "WORDING") for e in (1, 2, 3, 4) for c in ("ann", "bob")]
    applied += [(1, "ann", "STEREOTYPES"), (2, "ann", "STEREOTYPES"), (1, "bob", "STEREOTYPES"),
                (3, "bob", "STEREOTYPES")]
    confirmed = [(e, c) for e in (1, 2, 3, 4) for c in ("ann", "bob")]
    data = frames(applied, confirmed, codes={"A": ["WORDING", "STEREOTYPES", "TONE"]},
                  coders={"ann": "A", "bob": "A"})
    agreement = round_analysis(**data)["lenses"][0]["agreement"]
    by_code = {entry["code"]: entry for entry in agreement["codes"]}
    assert by_code["WORDING"]["alpha"] is None and "present on every" in by_code["WORDING"]["alpha_note"]
    assert by_code["TONE"]["kappa"][0]["kappa"] is None and "absent on every" in by_code["TONE"]["kappa"][0]["note"]
    # STEREOTYPES: ann 1,1,0,0, bob 1,0,1,0: po = 1/2, pe = 1/2 → κ = 0.
    assert by_code["STEREOTYPES"]["kappa"][0]["kappa"] == pytest.approx(0.0)
    # Same code set on 1 (W+S) and 4 (W) → 2/4.
    assert agreement["pairs"] == [{"coders": ["ann", "bob"], "n_shared": 4, "exact_set_agreement": 0.5}]


def simulated_round(*, planted: bool, seed: int = 7) -> dict:
    """99 excerpts, 33 per condition; SPEAKER IDENTITY given only under cot when planted, anywhere otherwise."""
    rng = np.random.default_rng(seed)
    conditions = np.repeat(["cot", "persona", "zs"], 33)
    strata = {e: (f"m{e % 4}", str(conditions[e])) for e in range(99)}
    eligible = conditions == "cot" if planted else np.ones(99, dtype=bool)
    given = np.flatnonzero(eligible & (rng.random(99) < 0.3))
    applied = [(int(e), "cy", "SPEAKER IDENTITY") for e in given]
    applied += [(int(e), "cy", "NO CATEGORIZATION") for e in np.flatnonzero(rng.random(99) < 0.3)]
    data = frames(applied, [(e, "cy") for e in range(99)], codes={"C": ["NO CATEGORIZATION", "SPEAKER IDENTITY"]},
                  coders={"cy": "C"}, strata=strata)
    return round_analysis(**data)["lenses"][0]["coders"][0]["by_condition"]


def test_a_code_planted_under_one_condition_shows_zero_elsewhere():
    table = simulated_round(planted=True)
    assert [level["level"] for level in table["levels"]] == ["cot", "persona", "zs"]
    speaker = next(row for row in table["rows"] if row["code"] == "SPEAKER IDENTITY")
    assert speaker["counts"][0] > 0 and speaker["counts"][1:] == [0, 0] and speaker["shares"][1:] == [0.0, 0.0]


def test_nothing_planted_no_condition_is_empty():
    table = simulated_round(planted=False)
    for row in table["rows"]:
        assert all(count > 0 for count in row["counts"]), row


def test_confirmed_excerpts_without_strata_are_refused():
    data = toy()
    data["strata"] = data["strata"][data["strata"]["excerpt"] != 3]
    with pytest.raises(ValueError, match="without a model and condition"):
        round_analysis(**data)
