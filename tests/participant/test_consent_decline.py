"""Declining consent: only the decline is kept, later writes are refused, the panel's no-consent address is used
when the study has one, and the open link's cap is not used up. The duration is shown before consent."""
from __future__ import annotations

import re

import pytest
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.forms.models import model_to_dict
from django.test import Client, RequestFactory

from annotation.models import Assignment, Label, Participant, Study
from annotation.participation import (
    FlowError,
    ParticipantWithdrawn,
    label_submit,
    participant_consent,
    participant_decline,
)
from psychometrics.models import (
    IATSession,
    IATTrial,
    Instrument,
    InstrumentResponse,
    InstrumentScore,
    QuestionnaireSession,
)
from psychometrics.services import iat_session
from tests.participant.helpers import flow_study, iat_block_posts, invite

pytestmark = pytest.mark.django_db


def test_declining_keeps_only_the_decline_and_shows_the_thank_you_page():
    study = flow_study(n_items=6, items_per_annotator=4)
    (participant,) = invite(study)
    client = Client()
    base = f"/p/{participant.invite_token}/"
    before = model_to_dict(Participant.objects.get(pk=participant.pk))
    answer = client.post(base + "consent/", {"consent": "no"})
    assert answer["Location"] == base + "declined/"
    after = model_to_dict(Participant.objects.get(pk=participant.pk))
    changed = {field for field in after if after[field] != before[field]}
    assert changed == {"status", "declined_at"} and after["status"] == "declined"
    page = client.get(base).get("Location")
    assert page == base + "declined/"
    shown = client.get(base + "declined/").content.decode()
    assert "Nothing about you has been recorded" in shown and "withdraw-link" not in shown
    # The consent page is not offered again, and consent is refused.
    assert client.get(base + "consent/")["Location"] == base + "declined/"
    client.post(base + "consent/", {"consent": "yes"})
    assert Participant.objects.get(pk=participant.pk).started_at is None


def test_every_later_write_is_refused_with_410_and_stores_nothing():
    study = flow_study()
    declining, other = invite(study, count=2)
    base = f"/p/{declining.invite_token}/"
    Client().post(base + "consent/", {"consent": "no"})
    before = model_to_dict(Participant.objects.get(pk=declining.pk))
    # Real posts, shaped as the pages send them: another participant's IAT design gives a well-formed block.
    participant_consent(participant=other)
    block = iat_block_posts({"blocks": iat_session(participant=other).design})[0]
    aq = Instrument.objects.get(slug="aq50")
    item = study.items.first()
    client = Client()
    writes = {
        "answer": client.post(f"{base}questionnaire/{aq.pk}/answer/", {"item": 1, "response": 0, "rt_ms": 900},
                              content_type="application/json"),
        "iat block": client.post(base + "iat/block/", block, content_type="application/json"),
        "label": client.post(base + "label/", {"item": item.pk, "value": 1}),
        "instructions": client.post(base + "instructions/", {}),
        "consent": client.post(base + "consent/", {"consent": "yes"}),
        "decline again": client.post(base + "consent/", {"consent": "no"}),
    }
    assert {name: response.status_code for name, response in writes.items()} == dict.fromkeys(writes, 410)
    assert writes["answer"].json() == {"error": "You did not consent to this study; nothing is recorded.",
                                       "withdrawn": True}
    assert "Nothing about you has been recorded" in writes["label"].content.decode()
    for model in (Label, Assignment, InstrumentResponse, InstrumentScore, QuestionnaireSession, IATSession,
                  IATTrial):
        assert not model.objects.filter(participant_id=declining.pk).exists(), model
    assert model_to_dict(Participant.objects.get(pk=declining.pk)) == before
    # The services refuse too, for a request that read the participant before the decline.
    declined = Participant.objects.get(pk=declining.pk)
    with pytest.raises(ParticipantWithdrawn, match="did not consent"):
        participant_consent(participant=declined)
    with pytest.raises(ParticipantWithdrawn):
        label_submit(participant=declined, item_id=item.pk, value=1)
    # Withdrawing is not offered: there is nothing to withdraw.
    assert Client().get(base + "withdraw/")["Location"].endswith("/declined/")


def test_the_study_s_no_consent_address_and_only_it_is_where_the_decline_goes():
    study = flow_study()
    study.no_consent_url = "https://app.prolific.com/submissions/complete?cc=NOCONSENT"
    study.save()
    (participant,) = invite(study)
    answer = Client().post(f"/p/{participant.invite_token}/consent/?next=https://evil.example/",
                           {"consent": "no", "next": "https://evil.example/"})
    assert answer["Location"] == study.no_consent_url


def test_an_open_link_decline_clears_the_panel_identifiers_and_takes_no_place_under_the_cap():
    study = flow_study()
    study.open_link_enabled, study.open_link_cap = True, 1
    study.save()
    client = Client()
    joined = client.get(f"/join/{study.open_link_token}/?PROLIFIC_PID=abc&STUDY_ID=s1&SESSION_ID=x9")
    participant = Participant.objects.get()
    assert participant.prolific_pid == "abc"
    client.post(joined["Location"] + "consent/", {"consent": "no"})
    participant.refresh_from_db()
    assert (participant.prolific_pid, participant.prolific_study_id, participant.prolific_session_id) == ("", "", "")
    # The one place under the cap is still free for the next visitor.
    assert Client().get(f"/join/{study.open_link_token}/?PROLIFIC_PID=def")["Location"].startswith("/p/")
    assert Participant.objects.filter(status=Participant.Status.DECLINED).count() == 1


def test_declining_after_consent_is_refused():
    study = flow_study()
    (participant,) = invite(study)
    client = Client()
    client.post(f"/p/{participant.invite_token}/consent/", {"consent": "yes"})
    with pytest.raises(FlowError, match="withdraw"):
        participant_decline(participant=Participant.objects.get(pk=participant.pk))
    assert Participant.objects.get(pk=participant.pk).status == Participant.Status.ACTIVE


def test_the_participants_export_shows_the_decline(api_client):
    study = flow_study()
    (participant,) = invite(study)
    Client().post(f"/p/{participant.invite_token}/consent/", {"consent": "no"})
    (row,) = api_client.get(f"/api/studies/{study.id}/participants/").json()["results"]
    assert row["status"] == "declined" and row["declined_at"] and row["consented_at"] is None
    assert row["n_labels"] == 0 and row["aq"] is None


def test_the_consent_page_shows_the_duration_estimated_or_stated():
    study = flow_study(n_items=6, items_per_annotator=4)  # and one attention check
    (participant,) = invite(study)
    page = Client().get(f"/p/{participant.invite_token}/consent/").content.decode()
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", re.search(r'<p id="duration">(.*?)</p>', page, re.S).group(1)))
    # AQ-50 (50) and the partial SATA (5): 55 × 6 s = 330 s; IAT 390 s; 4 sentences + 1 check = 5 × 15 s = 75 s;
    # consent 120 s. 915 s = 15.25 min → 16.
    assert text.startswith("This study takes about 16 minutes: consent and instructions, questionnaires (55")
    assert "labelling (5 sentences)" in text
    Study.objects.filter(pk=study.pk).update(estimated_minutes=25)
    page = Client().get(f"/p/{participant.invite_token}/consent/").content.decode()
    assert "about <strong>25 minutes</strong>." in page


def test_the_study_api_reads_and_sets_the_consent_settings_and_refuses_bad_ones(api_client):
    study = flow_study()
    url = f"/api/studies/{study.id}/"
    shown = api_client.get(url).json()
    assert (shown["no_consent_url"], shown["estimated_minutes"], shown["skipping"]) == ("", None, "reassign")
    settings = {"no_consent_url": "https://app.prolific.com/submissions/complete?cc=C1", "estimated_minutes": 20,
                "skipping": "keep"}
    assert api_client.patch(url, settings, format="json").status_code == 200
    study.refresh_from_db()
    assert (study.no_consent_url, study.estimated_minutes, study.skipping) == tuple(settings.values())
    for bad in ({"no_consent_url": "javascript:alert(1)"}, {"estimated_minutes": 0},
                {"estimated_minutes": 24 * 60 + 1}, {"skipping": "sometimes"}):
        response = api_client.patch(url, bad, format="json")
        assert response.status_code == 400 and set(response.json()) == set(bad), bad
    assert api_client.patch(url, {"estimated_minutes": None}, format="json").json()["estimated_minutes"] is None


def test_the_study_admin_shows_the_estimate_s_parts_and_refuses_zero_minutes(researcher, staff_client):
    study = flow_study(n_items=6, items_per_annotator=4)  # and one attention check
    page = staff_client.get(f"/admin/annotation/study/{study.pk}/change/").content.decode()
    # As on the consent page: 120 + 330 + 390 + 75 = 915 s, 15.25 min, rounded up to 16.
    assert ("About 16 minutes, estimated (annotation/duration.py; our own per-part times): consent and "
            "instructions 120 s, questionnaires (55 statements) 330 s, reaction-time task 390 s, labelling "
            "(5 sentences) 75 s") in page
    assert 'name="no_consent_url"' in page and 'name="estimated_minutes"' in page
    request = RequestFactory().get("/admin/")
    request.user = researcher[0]
    field = admin.site._registry[Study].get_form(request, study)().fields["estimated_minutes"]
    with pytest.raises(ValidationError):
        field.clean(0)
    assert field.clean(20) == 20
