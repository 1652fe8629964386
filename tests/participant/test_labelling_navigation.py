"""Labelling with back, change, skip and flag, through the participant's pages (the HTTP posts the page makes),
and what the exports and the item allocation make of them."""
from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.models import Assignment, Label, LabelChange, Participant, Study
from tests.participant.helpers import labelling_study, start_labelling

pytestmark = pytest.mark.django_db


def shown_item(html: str) -> int:
    return int(re.search(r'name="item" value="(\d+)"', html).group(1))


def in_order(participant: Participant) -> list[Assignment]:
    return list(Assignment.objects.filter(participant=participant).order_by("position"))


def test_back_opens_the_previous_sentence_and_a_change_keeps_the_replaced_label_with_both_times(api_client):
    study = labelling_study()
    client, participant, url = start_labelling(study)
    first, second, _third = in_order(participant)
    page = client.get(url).content.decode()
    assert shown_item(page) == first.item_id and 'id="label-back"' not in page
    assert 'id="progress-bar" max="3" value="0"' in page
    assert client.post(url, {"item": first.item_id, "value": 1, "rationale": "slur"})["Location"] == url
    page = client.get(url).content.decode()
    assert shown_item(page) == second.item_id and 'value="1"' in page
    back = re.search(r'id="label-back" href="([^"]+)"', page).group(1)
    assert back == f"{url}?at={first.position}"

    review = client.get(back).content.decode()
    assert shown_item(review) == first.item_id
    assert 'name="revise" value="1"' in review and ">slur</textarea>" in review
    assert 'id="progress-bar" max="3" value="1"' in review  # one of three done, wherever the page is
    assert re.search(r'value="1"[^>]*class="chosen" aria-pressed="true"', review)
    given = Label.objects.get(participant=participant, item_id=first.item_id)
    # The change: the page moves on to the sentence after it, here the next one to do.
    answer = client.post(back, {"item": first.item_id, "value": 0, "rationale": "a quote", "revise": "1"})
    assert answer["Location"] == url
    label = Label.objects.get(pk=given.pk)
    assert (label.value, label.rationale) == (0, "a quote") and label.created_at == given.created_at
    (change,) = LabelChange.objects.filter(label=label)
    assert (change.previous_value, change.previous_rationale, change.previous_at) == (1, "slur", given.updated_at)
    assert change.changed_at >= change.previous_at and label.updated_at >= change.changed_at

    # The same answer again changes nothing more; a first-pass post of another value never changes a label.
    client.post(back, {"item": first.item_id, "value": 0, "rationale": "a quote", "revise": "1"})
    client.post(url, {"item": first.item_id, "value": 1})
    assert LabelChange.objects.count() == 1 and Label.objects.get(pk=given.pk).value == 0

    row = api_client.get(f"/api/studies/{study.id}/labels/").json()["results"][0]
    assert (row["item"], row["value"], row["first_value"], row["n_changes"]) == ("i" + str(
        first.item.position), 0, 1, 1)
    (exported,) = api_client.get(f"/api/studies/{study.id}/label-changes/").json()["results"]
    assert (exported["participant"], exported["previous_value"], exported["previous_rationale"]) == (
        participant.pseudonym, 1, "slur")


def test_a_change_further_back_moves_on_to_the_next_done_sentence():
    client, participant, url = start_labelling(labelling_study())
    first, second, third = in_order(participant)
    client.post(url, {"item": first.item_id, "value": 1})
    client.post(url, {"item": second.item_id, "value": 1})
    review = client.get(f"{url}?at={first.position}").content.decode()
    assert re.search(r'id="label-forward" href="([^"]+)"', review).group(1) == f"{url}?at={second.position}"
    answer = client.post(f"{url}?at={first.position}", {"item": first.item_id, "value": 0, "revise": "1"})
    assert answer["Location"] == f"{url}?at={second.position}"
    assert client.get(f"{url}?at={third.position}")["Location"] == url  # not done yet: the next to do
    for odd in ("x", "²", "-1", "9" * 30):  # none a position: the next sentence to do, never an error
        assert client.get(url, {"at": odd})["Location"] == url


def test_skipping_needs_a_reason_counts_as_done_and_labelling_it_later_unskips_it(api_client):
    study = labelling_study()
    client, participant, url = start_labelling(study)
    first, second, _third = in_order(participant)
    refused = client.post(url, {"item": first.item_id, "action": "skip", "skip_reason": "  "})
    assert refused.status_code == 400 and "say why" in refused.content.decode()
    assert not Assignment.objects.filter(skipped_at__isnull=False).exists()

    assert client.post(url, {"item": first.item_id, "action": "skip", "skip_reason": "I cannot judge it",
                             "flag_reason": "The text is broken"})["Location"] == url
    skipped = Assignment.objects.get(pk=first.pk)
    assert skipped.skip_reason == "I cannot judge it" and skipped.flag_reason == "The text is broken"
    assert skipped.skipped_at is not None and skipped.flagged_at is not None
    page = client.get(url).content.decode()
    assert shown_item(page) == second.item_id and 'value="1"' in page  # one of three done

    (row,) = api_client.get(f"/api/studies/{study.id}/skips-and-flags/").json()["results"]
    assert (row["skip_reason"], row["flag_reason"]) == ("I cannot judge it", "The text is broken")

    review = client.get(f"{url}?at={first.position}").content.decode()
    assert "you skipped it" in review and 'value="I cannot judge it"' in review
    client.post(f"{url}?at={first.position}", {"item": first.item_id, "value": 1, "revise": "1",
                                                "flag_reason": ""})
    unskipped = Assignment.objects.get(pk=first.pk)
    assert unskipped.skipped_at is None and unskipped.flagged_at is None and unskipped.flag_reason == ""
    assert Label.objects.get(participant=participant, item_id=first.item_id).value == 1
    assert not LabelChange.objects.exists()  # a first label, not a change

    # A labelled sentence cannot be skipped (its label stays).
    refused = client.post(f"{url}?at={first.position}", {"item": first.item_id, "action": "skip",
                                                         "skip_reason": "changed my mind"})
    assert refused.status_code == 400 and Label.objects.filter(item_id=first.item_id).exists()


def test_a_study_that_allows_no_skipping_offers_none_and_refuses_a_posted_skip():
    client, participant, url = start_labelling(labelling_study(skipping=Study.Skipping.OFF))
    first = in_order(participant)[0]
    assert 'id="skip-button"' not in client.get(url).content.decode()
    refused = client.post(url, {"item": first.item_id, "action": "skip", "skip_reason": "no"})
    assert refused.status_code == 400 and "every sentence" in refused.content.decode()
    assert Assignment.objects.get(pk=first.pk).skipped_at is None


def test_the_last_sentence_skipped_completes_the_participant_and_a_skipped_check_counts_as_missed():
    study = labelling_study(n_items=1, per_annotator=1, check=True)
    study.attention_check_pass_threshold = 1.0
    study.save()
    client, participant, url = start_labelling(study)
    for assignment in in_order(participant):
        if assignment.item.attention_check_answer is None:
            answer = client.post(url, {"item": assignment.item_id, "value": 1})
        else:
            answer = client.post(url, {"item": assignment.item_id, "action": "skip", "skip_reason": "unsure"})
    participant.refresh_from_db()
    assert participant.status == Participant.Status.COMPLETED and answer["Location"].endswith("/done/")
    # One check, skipped: 0 of 1 right.
    assert (participant.attention_check_score, participant.attention_checks_passed) == (0.0, False)


@pytest.mark.parametrize(("skipping", "second_gets_it"), [(Study.Skipping.REASSIGN, True),
                                                          (Study.Skipping.KEEP, False)])
def test_a_skipped_sentence_goes_to_the_next_annotator_only_when_the_study_reassigns(skipping, second_gets_it):
    study = labelling_study(n_items=1, per_annotator=1, per_item=1, skipping=skipping)
    client, first_annotator, url = start_labelling(study)
    (taken,) = in_order(first_annotator)
    client.post(url, {"item": taken.item_id, "action": "skip", "skip_reason": "I cannot judge it"})
    # A skip holds (or frees) its place whether or not its assignment has expired.
    Assignment.objects.filter(participant=first_annotator).update(expires_at=timezone.now() + timedelta(1))
    _, second_annotator, _ = start_labelling(study)
    given = {assignment.item_id for assignment in in_order(second_annotator)}
    assert (taken.item_id in given) == second_gets_it


def test_a_flag_goes_with_a_label_and_can_be_removed_on_going_back(api_client):
    study = labelling_study()
    client, participant, url = start_labelling(study)
    first = in_order(participant)[0]
    client.post(url, {"item": first.item_id, "value": 0, "flag_reason": "It names a real person"})
    assert Assignment.objects.get(pk=first.pk).flag_reason == "It names a real person"
    (row,) = api_client.get(f"/api/studies/{study.id}/skips-and-flags/").json()["results"]
    assert row["skipped_at"] is None and row["flagged_at"] is not None
    review = client.get(f"{url}?at={first.position}").content.decode()
    assert 'id="flag-box" open' in review and 'value="It names a real person"' in review
    client.post(f"{url}?at={first.position}", {"item": first.item_id, "value": 0, "revise": "1", "flag_reason": ""})
    assert Assignment.objects.get(pk=first.pk).flagged_at is None
    assert api_client.get(f"/api/studies/{study.id}/skips-and-flags/").json()["count"] == 0
    assert not LabelChange.objects.exists()  # the label itself did not change


def test_nothing_changes_after_the_last_label_and_others_sentences_are_refused():
    client, participant, url = start_labelling(labelling_study(n_items=3, per_annotator=2, per_item=1))
    other_client, other, other_url = start_labelling(Study.objects.get())
    for assignment in in_order(participant):
        client.post(url, {"item": assignment.item_id, "value": 1})
    participant.refresh_from_db()
    assert participant.completed_at is not None
    first = in_order(participant)[0]
    assert client.post(url, {"item": first.item_id, "value": 0, "revise": "1"})["Location"].endswith("/done/")
    assert client.get(f"{url}?at=0")["Location"].endswith("/done/")
    assert Label.objects.get(participant=participant, item_id=first.item_id).value == 1
    foreign = other_client.post(other_url, {"item": first.item_id, "value": 0, "revise": "1"})
    assert foreign.status_code == 400 and not Label.objects.filter(participant=other).exists()


def test_the_study_dashboard_counts_skips_flags_and_changed_labels_and_links_their_exports(staff_client):
    study = labelling_study()
    client, participant, url = start_labelling(study)
    first, second, _third = in_order(participant)
    client.post(url, {"item": first.item_id, "value": 1, "flag_reason": "garbled"})
    client.post(f"{url}?at={first.position}", {"item": first.item_id, "value": 0, "revise": "1"})
    client.post(f"{url}?at={first.position}", {"item": first.item_id, "value": 1, "revise": "1"})
    client.post(url, {"item": second.item_id, "action": "skip", "skip_reason": "unsure"})
    page = staff_client.get(f"/studies/{study.id}/dashboard/").content.decode()
    notes = re.sub(r"\s+", " ", re.search(r'<p id="annotator-notes">(.*?)</p>', page, re.S).group(1))
    # Two changes of one label count as one changed label.
    assert "skipped 1 sentence " in notes and "flagged 1 for" in notes and "change 1 label " in notes
    assert f"/api/studies/{study.id}/skips-and-flags/?format=csv" in notes
    assert f"/api/studies/{study.id}/label-changes/?format=csv" in notes


def test_withdrawal_deletes_the_changes_skips_and_flags_too():
    client, participant, url = start_labelling(labelling_study())
    first, second, _third = in_order(participant)
    client.post(url, {"item": first.item_id, "value": 1, "flag_reason": "garbled"})
    client.post(f"{url}?at={first.position}", {"item": first.item_id, "value": 0, "revise": "1"})
    client.post(url, {"item": second.item_id, "action": "skip", "skip_reason": "unsure"})
    assert LabelChange.objects.exists()
    client.post(f"/p/{participant.invite_token}/withdraw/", {"confirm": "yes"})
    assert not LabelChange.objects.exists() and not Assignment.objects.filter(participant=participant).exists()
