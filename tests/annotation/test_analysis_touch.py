"""Whether touch IAT D scores enter the trust weights (``AnalysisSettings.touch_iat_in_weights``), by hand-worked
numbers (seed 000 Appendix B, eqs. 1–5), and the migration that marks the IATs stored before touch as keyboard."""
from __future__ import annotations

import importlib

import pandas as pd
import pytest
from django.apps import apps
from django.test import Client

from annotation.analysis import AnalysisSettings, analyse
from psychometrics.models import IATSession, IATTrial
from tests.participant.helpers import (
    consent_and_finish_questionnaires,
    flow_study,
    iat_block_posts,
    invite,
    page_config,
)

# One team. A and C answered the IAT by keys, B by taps.
SCORES = pd.DataFrame({"participant": ["A", "B", "C"], "team": ["t"] * 3, "aq": [10.0, 20.0, 30.0],
                       "sata": [10.0, 20.0, 30.0], "iat_d": [0.5, 1.0, 0.0],
                       "iat_modality": ["keyboard", "touch", "keyboard"]})
LABELS = pd.DataFrame({"participant": ["A", "B", "C"], "item": ["x"] * 3, "value": [1, 0, 1]})


def weights(**settings) -> pd.Series:
    return analyse(SCORES, LABELS, AnalysisSettings(**settings)).weights.set_index("participant")["weight"]


def test_touch_d_enters_the_weights_by_default():
    # x̂_AQ = x̂_SATA = (0, .5, 1); x̂_IAT = 1 − (d − 0)/(1 − 0) = (.5, 0, 1)
    # R = (1/6, 1/3, 1), mean R = 1/2, W = R / (1/2) = (1/3, 2/3, 2)
    assert list(weights()) == pytest.approx([1 / 3, 2 / 3, 2])


def test_left_out_a_touch_d_is_a_missing_score_for_the_missing_instrument_rule():
    # exclude: B has no weight; over A and C, x̂_AQ = x̂_SATA = (0, 1), x̂_IAT = 1 − (d − 0)/(.5 − 0) = (0, 1)
    # R = (0, 1), mean 1/2, W = (0, 2)
    result = analyse(SCORES, LABELS, AnalysisSettings(touch_iat_in_weights=False))
    table = result.weights.set_index("participant")
    assert table.loc["A", "weight"] == pytest.approx(0) and table.loc["C", "weight"] == pytest.approx(2)
    assert pd.isna(table.loc["B", "weight"]) and not table.loc["B", "included"]
    assert "B: IAT D measured by touch, left out of the weights (setting touch_iat_in_weights)" in result.notes
    assert result.settings.as_dict()["touch_iat_in_weights"] is False
    # average: x̂_AQ = x̂_SATA = (0, .5, 1) over all three, x̂_IAT over A and C = (0, ·, 1)
    # R = (0, (.5 + .5)/2, 1) = (0, .5, 1), mean 1/2, W = (0, 1, 2)
    assert list(weights(touch_iat_in_weights=False, missing_instrument="average")) == pytest.approx([0, 1, 2])


def test_a_frame_without_modalities_is_scored_as_before():
    weights = analyse(SCORES.drop(columns="iat_modality"), LABELS, AnalysisSettings(touch_iat_in_weights=False)).weights
    assert list(weights["weight"]) == pytest.approx([1 / 3, 2 / 3, 2])


@pytest.mark.django_db
def test_the_migration_marks_the_app_iats_stored_before_touch_as_keyboard(django_assert_num_queries):
    study = flow_study()
    participants = invite(study, 5)
    for participant, blocks in zip(participants, (2, 2, 1, 1, 0), strict=True):
        client = Client()
        base = consent_and_finish_questionnaires(client, participant)
        for body in iat_block_posts(page_config(client.get(base + "iat/").content.decode()))[:blocks]:
            client.post(base + "iat/block/", body, content_type="application/json")
    IATTrial.objects.update(modality="")
    IATSession.objects.update(block_modalities=[], input_modality="")
    migration = importlib.import_module("psychometrics.migrations.0005_iat_input_modality")
    # In bulk: the trials' UPDATE, the SELECT of the numbers of blocks done, one UPDATE for each (2 and 1), not
    # one per session.
    with django_assert_num_queries(4):
        migration.keyboard_before_touch(apps, None)
    sessions = {s.participant_id: s for s in IATSession.objects.all()}
    assert [(sessions[p.id].block_modalities, sessions[p.id].input_modality) for p in participants] == [
        (["keyboard", "keyboard"], "keyboard")] * 2 + [(["keyboard"], "keyboard")] * 2 + [([], "")]
    assert set(IATTrial.objects.values_list("modality", flat=True)) == {"keyboard"}
