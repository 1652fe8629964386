"""What a label costs the database: the page and the post take a fixed few statements, whatever the participant's
place in their sentences, so the cost of the busiest pages cannot grow unnoticed (benchmarks/label_breakdown.py
shows where the time goes)."""
from __future__ import annotations

import re

import pytest

from annotation.models import Assignment, Label
from tests.participant.helpers import labelling_study, start_labelling

pytestmark = pytest.mark.django_db

# The post: the participant, their study, the savepoint of the write, the participant's row lock, the assignment with
# what the write needs to know, the label's INSERT, the savepoint's release. (On PostgreSQL outside a test, BEGIN
# and COMMIT take the savepoint's place.)
LABEL_POST_QUERIES = 7
# The page: the participant (with their place in the flow and the number of the study's steps, for the page's "Step n
# of m"), their study, the next sentence with its counts, its item.
LABEL_PAGE_QUERIES = 4


def test_each_label_page_and_post_take_a_fixed_few_queries(django_assert_num_queries):
    study = labelling_study(n_items=6, per_annotator=6)
    client, participant, url = start_labelling(study)
    for _ in range(5):  # every sentence but the last, which completes the participant
        with django_assert_num_queries(LABEL_PAGE_QUERIES):
            page = client.get(url)
        item = int(re.search(r'name="item" value="(\d+)"', page.content.decode()).group(1))
        with django_assert_num_queries(LABEL_POST_QUERIES):
            assert client.post(url, {"item": item, "value": 1, "rationale": ""}).status_code == 302
    assert Label.objects.filter(participant=participant).count() == 5


def test_a_post_sent_twice_takes_no_more_and_stores_one_label(django_assert_max_num_queries):
    study = labelling_study(n_items=3, per_annotator=3)
    client, participant, url = start_labelling(study)
    item = Assignment.objects.filter(participant=participant).order_by("position").first().item_id
    assert client.post(url, {"item": item, "value": 1}).status_code == 302
    with django_assert_max_num_queries(LABEL_POST_QUERIES - 1):  # already labelled: no INSERT
        assert client.post(url, {"item": item, "value": 0}).status_code == 302
    assert list(Label.objects.filter(participant=participant).values_list("item_id", "value")) == [(item, 1)]


def test_the_last_label_completes_the_participant_in_a_bounded_number_of_queries(django_assert_max_num_queries):
    study = labelling_study(n_items=2, per_annotator=2)
    client, participant, url = start_labelling(study)
    first, last = Assignment.objects.filter(participant=participant).order_by("position")
    client.post(url, {"item": first.item_id, "value": 1})
    # The post's 7, then the completion under the participant's lock: its savepoint, the lock, the attention checks,
    # the participant's UPDATE and the release.
    with django_assert_max_num_queries(LABEL_POST_QUERIES + 5):
        assert client.post(url, {"item": last.item_id, "value": 1})["Location"].endswith("/done/")
    participant.refresh_from_db()
    assert participant.completed_at is not None
