"""The annotator flow end to end through HTTP (the browser tests drive the same pages in Chromium)."""
from __future__ import annotations

import pytest
from django.test import Client

from annotation.models import Assignment, Label, Participant
from psychometrics.iat import iat_d_score
from psychometrics.models import IATSession, IATTrial, InstrumentResponse, InstrumentScore
from tests.participant.helpers import (
    answer_everything,
    consent_and_finish_questionnaires,
    flow_study,
    iat_block_posts,
    invite,
    page_config,
    trials_frame,
)

pytestmark = pytest.mark.django_db


def test_whole_flow_then_exports_show_exactly_the_answers(api_client):
    study = flow_study()
    (participant,) = invite(study)
    client = Client()
    assert client.get(f"/p/{participant.invite_token}/")["Location"] == f"/p/{participant.invite_token}/consent/"
    consent_page = client.get(f"/p/{participant.invite_token}/consent/").content.decode()
    assert "Some sentences hurt." in consent_page and "You agree to take part." in consent_page

    answer_everything(client, participant, aq_choice=0, sata_choice=3)
    done = client.get(f"/p/{participant.invite_token}/done/").content.decode()
    assert study.completion_code in done and "https://example.org/complete?cc=X" in done

    rows = api_client.get(f"/api/studies/{study.id}/participants/").json()["results"]
    (row,) = rows
    # All "Definitely agree": 1 point on each of the 24 agree-scored AQ items.
    assert (row["participant"], row["status"], row["aq"], row["aq_tier"]) == ("P0001", "completed", 24, "below screening threshold (< 26)")
    # Social skill items 1, 11, 13, 15, 22, 36, 44, 45, 47, 48: of these 13, 22 and 45 are agree-scored.
    assert row["aq_social_skill"] == 3
    # Partial SATA, all "Strongly agree" (index 3): one forward item scores 4, four reverse items score 1 → 8.
    assert row["sata"] == 8
    assert row["iat_d"] > 1.9 and row["iat_flagged_fast"] is False and row["attention_check_score"] == 1.0
    assert row["attention_checks_passed"] is True and row["n_labels"] == 5

    responses = api_client.get(f"/api/studies/{study.id}/instrument-responses/?format=csv")
    lines = b"".join(responses.streaming_content).decode().splitlines()
    assert lines[0] == "participant,instrument,item_number,response_index,response_text,position,rt_ms,answered_at"
    assert len(lines) == 1 + 50 + 5
    aq_lines = [line for line in lines if ",aq50," in line]
    assert all(",0,Definitely agree," in line and ",1234," in line for line in aq_lines)

    trials = api_client.get(f"/api/studies/{study.id}/iat-trials/?page_size=10000").json()["results"]
    assert len(trials) == 200
    recomputed = iat_d_score(trials_frame(trials))
    assert row["iat_d"] == pytest.approx(recomputed.d)
    # Practice pair: 20 at 500 and 20 at 700 → 200 / sd(40 values) = 1.97484; test pair: 40 + 40 → 200 / 100.6309.
    assert recomputed.d_practice == pytest.approx(1.97484, abs=1e-5)
    assert recomputed.d == pytest.approx((1.974842 + 200 / (80 * 100**2 / 79) ** 0.5) / 2, abs=1e-5)


def test_aq_subscales_are_exported(api_client):
    study = flow_study(iat=False, attention_check=False)
    (participant,) = invite(study)
    answer_everything(Client(), participant, aq_choice=3)  # all "Definitely disagree"
    row = api_client.get(f"/api/studies/{study.id}/participants/").json()["results"][0]
    assert row["aq"] == 26  # the 26 disagree-scored items
    score = InstrumentScore.objects.get(participant=participant, instrument__slug="aq50")
    assert score.subscales == {k: row[f"aq_{k}"] for k in score.subscales}


def consented_at_the_questionnaire() -> tuple[Participant, Client, str, str]:
    """A new participant who has consented: their client, link and first questionnaire's URL."""
    (participant,) = invite(flow_study())
    client = Client()
    base = f"/p/{participant.invite_token}/"
    client.post(base + "consent/", {"consent": "yes"})
    return participant, client, base, client.get(base)["Location"]


def test_resume_sends_the_participant_to_where_they_stopped():
    _, client, base, aq = consented_at_the_questionnaire()
    assert "/questionnaire/" in aq
    page = client.get(aq).content.decode()
    client.post(aq + "answer/", {"item": 7, "response": 2}, content_type="application/json")
    # A new device (no session) with the same link sees the saved answer checked.
    fresh = Client().get(aq).content.decode()
    assert 'name="item-7" value="2" checked' in fresh and "1 of 50 answered" in fresh
    assert page.count("data-item=") == 50
    # Finishing with answers missing names them and stores no score; an answer that is no option is ignored.
    response = client.post(aq, {"item-1": 0, "item-2": 9})
    html = response.content.decode()
    assert response.status_code == 400 and "48 statements not answered yet" in html
    # The summary links each unanswered statement; the answers given (item 1, and item 7 autosaved) stay checked.
    assert html.count('<a href="#statement-') == 48 and 'href="#statement-2"' in html
    assert 'href="#statement-1"' not in html and 'href="#statement-7"' not in html
    assert 'name="item-1" value="0" checked' in html and 'name="item-7" value="2" checked' in html
    assert not InstrumentScore.objects.exists()
    # Pages further on redirect back to the current step.
    assert client.get(base + "label/")["Location"] == aq


def test_item_order_is_randomised_per_participant_and_recorded():
    study = flow_study()
    first, second = invite(study, 2)
    orders = []
    for participant in (first, second):
        client = Client()
        client.post(f"/p/{participant.invite_token}/consent/", {"consent": "yes"})
        client.get(client.get(f"/p/{participant.invite_token}/")["Location"])
        orders.append(participant.questionnaires.get().item_order)
    assert sorted(orders[0]) == sorted(orders[1]) == list(range(1, 51)) and orders[0] != orders[1]


def test_iat_blocks_are_idempotent_and_in_order():
    study = flow_study()
    (participant,) = invite(study)
    client = Client()
    base = consent_and_finish_questionnaires(client, participant)
    config = page_config(client.get(base + "iat/").content.decode())
    posts = iat_block_posts(config)
    assert client.post(base + "iat/block/", posts[1], content_type="application/json").status_code == 409
    for _ in range(2):  # a retried post of an acknowledged block
        response = client.post(base + "iat/block/", posts[0], content_type="application/json")
        assert response.json() == {"next_block": 2, "finished": False}
    assert IATTrial.objects.filter(participant=participant).count() == 20
    # A reload restarts at the first unacknowledged block.
    assert page_config(client.get(base + "iat/").content.decode())["start_block"] == 2
    for bad in (0, 8, -1):  # no such block
        beyond = {**posts[0], "block": bad}
        assert client.post(base + "iat/block/", beyond, content_type="application/json").status_code == 409
    tampered = {**posts[1], "trials": [{**posts[1]["trials"][0], "stimulus": "Other"}, *posts[1]["trials"][1:]]}
    assert client.post(base + "iat/block/", tampered, content_type="application/json").status_code == 409
    wrong_first = {**posts[1], "trials": [{**t, "first_key": "i" if t["first_key"] == "e" else "e",
                                           "latency_correct_ms": t["latency_first_ms"] + 300} for t in posts[1]["trials"]]}
    assert client.post(base + "iat/block/", wrong_first, content_type="application/json").status_code == 200
    assert IATTrial.objects.filter(participant=participant, block=2, error=True).count() == 20  # from the design
    session = IATSession.objects.get(participant=participant)
    assert session.blocks_done == 2 and session.d_score is None


def test_assignments_cover_each_item_the_configured_number_of_times():
    study = flow_study(n_items=6, items_per_annotator=4, annotators_per_item=2, iat=False, attention_check=False)
    participants = invite(study, 4)
    for participant in participants:
        answer_everything(Client(), participant)
    per_item = {}
    for item_id in Label.objects.values_list("item_id", flat=True):
        per_item[item_id] = per_item.get(item_id, 0) + 1
    assert sorted(per_item.values()) == [2, 2, 2, 2, 2, 2]  # 12 places; the 4th annotator got the last 0
    assert Participant.objects.get(pseudonym="P0004").labels.count() == 0
    assert Participant.objects.get(pseudonym="P0004").status == "completed"


def test_abandoned_assignments_are_released_after_the_timeout():
    from django.utils import timezone

    study = flow_study(n_items=2, items_per_annotator=2, annotators_per_item=1, iat=False, attention_check=False)
    first, second = invite(study, 2)
    Client().post(f"/p/{first.invite_token}/consent/", {"consent": "yes"})
    from annotation.participation import assignments_allocate

    assert assignments_allocate(participant=first) == 2
    assert assignments_allocate(participant=second) == 0  # every place is held
    Assignment.objects.filter(participant=first).update(expires_at=timezone.now())
    second.refresh_from_db()
    Assignment.objects.filter(participant=second).delete()
    assert assignments_allocate(participant=second) == 2


def test_attention_check_failure_is_recorded(api_client):
    study = flow_study(iat=False)
    study.attention_check_pass_threshold = 1.0
    study.save()
    (participant,) = invite(study)
    client = Client()
    answer_everything(client, participant)
    Label.objects.filter(participant=participant, item__external_id="check").update(value=1)
    from annotation.participation import participant_complete

    participant_complete(participant=Participant.objects.get(pk=participant.pk))
    row = api_client.get(f"/api/studies/{study.id}/participants/").json()["results"][0]
    assert (row["attention_check_score"], row["attention_checks_passed"]) == (0.0, False)


def test_withdrawal_deletes_everything_and_exports_no_longer_show_it(api_client):
    study = flow_study()
    (participant,) = invite(study)
    client = Client()
    answer_everything(client, participant)
    assert Label.objects.count() == 5 and IATTrial.objects.count() == 200
    page = client.get(f"/p/{participant.invite_token}/withdraw/").content.decode()
    assert "cannot be undone" in page
    client.post(f"/p/{participant.invite_token}/withdraw/", {"confirm": "yes"})
    for model in (Label, Assignment, InstrumentResponse, InstrumentScore, IATTrial, IATSession):
        assert not model.objects.filter(participant=participant).exists(), model
    row = api_client.get(f"/api/studies/{study.id}/participants/").json()["results"][0]
    assert (row["status"], row["aq"], row["iat_d"], row["n_labels"]) == ("withdrawn", None, None, 0)
    assert api_client.get(f"/api/studies/{study.id}/labels/").json()["count"] == 0
    assert api_client.get(f"/api/studies/{study.id}/iat-trials/").json()["count"] == 0
    assert "You have withdrawn" in client.get(f"/p/{participant.invite_token}/").content.decode() or \
        client.get(f"/p/{participant.invite_token}/")["Location"].endswith("/withdraw/")


def test_a_study_can_use_its_own_iat_stimuli():
    from psychometrics.iat import AUTISTIC_NEUROTYPICAL

    study = flow_study()
    study.iat_stimuli = {k: list(v) if isinstance(v, tuple) else v for k, v in vars(AUTISTIC_NEUROTYPICAL).items()}
    study.full_clean()
    study.save()
    (participant,) = invite(study)
    client = Client()
    base = consent_and_finish_questionnaires(client, participant)
    config = page_config(client.get(base + "iat/").content.decode())
    labels = {label for block in config["blocks"] for label in block["left_labels"] + block["right_labels"]}
    assert {"Autistic", "Neurotypical"} <= labels and "Autism Spectrum" not in labels


def test_a_repeated_last_label_changes_nothing():
    study = flow_study(iat=False, attention_check=False, n_items=2, items_per_annotator=2)
    (participant,) = invite(study)
    answer_everything(Client(), participant)
    participant.refresh_from_db()
    completed_at = participant.completed_at
    last = Label.objects.filter(participant=participant).order_by("-created_at").first()
    from annotation.participation import label_submit

    label_submit(participant=participant, item_id=last.item_id, value=1 - last.value)  # a double click
    participant.refresh_from_db()
    assert participant.completed_at == completed_at
    assert Label.objects.get(pk=last.pk).value == last.value and Label.objects.filter(participant=participant).count() == 2


def test_labelling_moves_the_expiry_on_to_within_a_minute_without_rewriting_it_at_every_label():
    from datetime import timedelta

    from django.utils import timezone

    from annotation.participation import instructions_read, label_submit, participant_consent

    study = flow_study(n_items=3, items_per_annotator=3, annotators_per_item=1, iat=False, attention_check=False)
    study.study_instruments.all().delete()
    (participant,) = invite(study)
    participant_consent(participant=participant)
    instructions_read(participant=participant)
    timeout = timedelta(minutes=study.assignment_timeout_minutes)
    first, second, third = Assignment.objects.filter(participant=participant).order_by("position")

    # Allocated just now: a label a moment later leaves the rows alone (within a minute of now + time-out).
    allocated = {a.id: a.expires_at for a in (first, second, third)}
    label_submit(participant=participant, item_id=first.item_id, value=1)
    assert dict(Assignment.objects.filter(participant=participant).values_list("id", "expires_at")) == allocated

    # Two minutes of the time-out gone: the next label moves every row on to now + time-out.
    Assignment.objects.filter(participant=participant).update(expires_at=timezone.now() + timeout
                                                              - timedelta(minutes=2))
    before = timezone.now()
    label_submit(participant=participant, item_id=second.item_id, value=0)
    for expires in Assignment.objects.filter(participant=participant).values_list("expires_at", flat=True):
        assert before + timeout <= expires <= timezone.now() + timeout


def test_the_submit_carries_the_time_of_an_answer_whose_autosave_was_not_acknowledged():
    """questionnaire.js adds rt-<item> for answers still waiting for their autosave; an autosaved time is kept
    when the form has none, and an unusable hidden time is dropped without losing the answer."""
    participant, client, _, aq = consented_at_the_questionnaire()
    for item, rt_ms in ((7, 900), (8, 900)):
        client.post(aq + "answer/", {"item": item, "response": 2, "rt_ms": rt_ms}, content_type="application/json")
    too_long = str(24 * 60 * 60 * 1000 + 1)  # beyond MAX_ANSWER_TIME_MS, a day
    form = {f"item-{n}": 1 for n in range(1, 51)} | {
        "item-7": 2, "item-8": 2, "rt-8": "1300", "rt-3": "2450", "rt-9": "0",
        "rt-4": "1e3", "rt-5": "-1", "rt-6": too_long}
    assert client.post(aq, form).status_code == 302
    times = dict(InstrumentResponse.objects.filter(participant=participant).values_list("item_number", "rt_ms"))
    assert len(times) == 50
    # Carried times are stored (item 8's replaces its autosaved one); without one the autosaved time stays.
    assert (times[3], times[8], times[9], times[7]) == (2450, 1300, 0, 900)
    assert times[4] is None and times[5] is None and times[6] is None and times[1] is None


def test_an_autosave_overtaken_by_a_later_one_of_its_page_does_not_replace_it():
    """A page's answers carry its id and count: an earlier one reaching the server last (a request the page gave
    up on, still delivered) leaves the later one; another page's answer, and the form's, replace it."""
    participant, client, _, aq = consented_at_the_questionnaire()

    def autosave(response: int, **page) -> int:
        return client.post(aq + "answer/", {"item": 4, "response": response, "rt_ms": 100 * response, **page},
                           content_type="application/json").status_code

    def stored() -> tuple[int, int]:
        return InstrumentResponse.objects.filter(participant=participant, item_number=4).values_list(
            "response_index", "rt_ms").get()

    assert autosave(2, writer="page-a", seq=7) == 200
    assert autosave(1, writer="page-a", seq=6) == 200  # acknowledged, so the page stops sending it
    assert stored() == (2, 200)
    assert autosave(2, writer="page-a", seq=7) == 200 and stored() == (2, 200)  # the same answer again
    assert autosave(3, writer="page-b", seq=1) == 200 and stored() == (3, 300)  # another load of the page
    assert autosave(1) == 200 and stored() == (1, 100)  # a page that names itself not
    form = {f"item-{n}": 0 for n in range(1, 51)}
    assert client.post(aq, form).status_code == 302
    assert stored() == (0, 100)
