"""coding.coding_services: a coder's save (full code set + memo, idempotent), confirm, progress, started/completed
times, refusals (a code of another codebook named, a memo too long, an excerpt of another round, a closed round),
and two threads saving for one coder at once on PostgreSQL."""
from __future__ import annotations

import os
import threading

import pytest
from django.db import connection
from django.utils import timezone

from coding.coding_services import (
    MAX_MEMO_LENGTH,
    CodingConflict,
    CodingInputError,
    RoundClosed,
    coder_progress,
    coding_confirm,
    coding_save,
)
from coding.models import ExcerptCoding
from tests.coding.coder_rounds import add_coder, code_ids, make_codebook, make_round

pytestmark = pytest.mark.django_db


def _stored(coder, excerpt) -> tuple[list[str], str, bool]:
    coding = ExcerptCoding.objects.get(coder=coder, excerpt=excerpt)
    return sorted(coding.codes.values_list("name", flat=True)), coding.memo, coding.confirmed_at is not None


def test_a_save_stores_the_full_code_set_and_is_idempotent():
    round_ = make_round(3)
    coder = add_coder(round_, "Coder A")
    first = round_.excerpts.get(position=0)
    wording, tone = code_ids(round_, "WORDING", "TONE")
    coding_save(coder=coder, excerpt_id=first.id, code_ids=[wording, tone, wording], memo="keyword only")
    coding_save(coder=coder, excerpt_id=first.id, code_ids=[wording, tone], memo="keyword only")
    assert ExcerptCoding.objects.filter(coder=coder).count() == 1
    assert _stored(coder, first) == (["TONE", "WORDING"], "keyword only", False)
    # The next save replaces the set: TONE taken away.
    coding_save(coder=coder, excerpt_id=first.id, code_ids=[wording], memo="")
    assert _stored(coder, first) == (["WORDING"], "", False)
    coder.refresh_from_db()
    assert coder.started_at is not None and coder.completed_at is None


def test_confirm_keeps_the_codes_and_an_excerpt_without_codes_is_a_valid_answer():
    round_ = make_round(2)
    coder = add_coder(round_, "Coder A")
    first, second = round_.excerpts.order_by("position")
    (focus,) = code_ids(round_, "FOCUS")
    coding_save(coder=coder, excerpt_id=first.id, code_ids=[focus], memo="sidesteps")
    assert coder_progress(coder=coder).first_unconfirmed == first
    coding_confirm(coder=coder, excerpt_id=first.id)
    assert _stored(coder, first) == (["FOCUS"], "sidesteps", True)
    progress = coder_progress(coder=coder)
    assert (progress.confirmed, progress.total, progress.first_unconfirmed, progress.complete) == (1, 2, second, False)
    coder.refresh_from_db()
    assert coder.completed_at is None
    coding_confirm(coder=coder, excerpt_id=second.id)  # never saved before: no code is an answer
    assert _stored(coder, second) == ([], "", True)
    coder.refresh_from_db()
    assert coder.completed_at is not None
    progress = coder_progress(coder=coder)
    assert (progress.confirmed, progress.first_unconfirmed, progress.complete) == (2, None, True)
    # Revisiting and changing a confirmed excerpt keeps it confirmed and the completion time.
    completed_at = coder.completed_at
    coding_save(coder=coder, excerpt_id=first.id, code_ids=[], memo="on second thought")
    coder.refresh_from_db()
    assert _stored(coder, first) == ([], "on second thought", True) and coder.completed_at == completed_at


def test_progress_counts_only_this_coders_confirmations():
    round_ = make_round(4)
    coder, other = add_coder(round_, "Coder A"), add_coder(round_, "Coder B")
    for excerpt in round_.excerpts.order_by("position")[:3]:
        coding_confirm(coder=other, excerpt_id=excerpt.id)
    coding_confirm(coder=coder, excerpt_id=round_.excerpts.get(position=1).id)
    progress = coder_progress(coder=coder)
    assert (progress.confirmed, progress.total, progress.first_unconfirmed.position) == (1, 4, 0)


def test_a_code_of_another_codebook_is_refused_by_id_and_nothing_is_stored():
    """Named by id only: an invite-link holder learns nothing of the other codebooks."""
    round_ = make_round(1)
    coder = add_coder(round_, "Coder A")
    excerpt = round_.excerpts.get()
    other_book = make_codebook("Reasoning structure", codes=(("no categorization", "c"),))
    foreign = other_book.codes.get().id
    (wording,) = code_ids(round_, "WORDING")
    with pytest.raises(CodingInputError) as refused:
        coding_save(coder=coder, excerpt_id=excerpt.id, code_ids=[wording, foreign], memo="x")
    assert str(refused.value) == (f"code {foreign} is not in this coder's codebook, "
                                  "Thematic content and error type (v1).")
    with pytest.raises(CodingInputError, match="code 999999 is not in"):
        coding_save(coder=coder, excerpt_id=excerpt.id, code_ids=[999_999], memo="x")
    assert not ExcerptCoding.objects.exists()
    coder.refresh_from_db()
    assert coder.started_at is None


def test_a_long_memo_an_unstorable_memo_and_another_rounds_excerpt_are_refused():
    round_, other_round = make_round(1), make_round(1)
    coder = add_coder(round_, "Coder A")
    excerpt = round_.excerpts.get()
    coding_save(coder=coder, excerpt_id=excerpt.id, code_ids=[], memo="m" * MAX_MEMO_LENGTH)  # the limit is kept
    with pytest.raises(CodingInputError, match="The memo has 10,001 characters; at most 10,000 are kept"):
        coding_save(coder=coder, excerpt_id=excerpt.id, code_ids=[], memo="m" * (MAX_MEMO_LENGTH + 1))
    with pytest.raises(CodingInputError, match="memo: contains a NUL character"):
        coding_save(coder=coder, excerpt_id=excerpt.id, code_ids=[], memo="a\x00b")
    with pytest.raises(CodingInputError, match=r"Excerpt \d+ is not in this coder's round"):
        coding_save(coder=coder, excerpt_id=other_round.excerpts.get().id, code_ids=[], memo="")
    assert ExcerptCoding.objects.get().memo == "m" * MAX_MEMO_LENGTH


def test_a_save_on_an_older_revision_raises_a_conflict_and_changes_nothing():
    round_ = make_round(1)
    coder = add_coder(round_, "Coder A")
    (excerpt,) = round_.excerpts.all()
    wording, tone = code_ids(round_, "WORDING", "TONE")
    first = coding_save(coder=coder, excerpt_id=excerpt.id, code_ids=[wording], memo="one", base_revision=0)
    assert first.revision == 1
    with pytest.raises(CodingConflict) as conflict:
        coding_save(coder=coder, excerpt_id=excerpt.id, code_ids=[tone], memo="stale", base_revision=0)
    assert conflict.value.stored.revision == 1 and conflict.value.stored.memo == "one"
    stored = ExcerptCoding.objects.get()
    assert (stored.revision, stored.memo, list(stored.codes.values_list("id", flat=True))) == (1, "one", [wording])
    # No base revision (a confirmation, an older page): applied on top, and counted.
    assert coding_save(coder=coder, excerpt_id=excerpt.id, code_ids=None, memo=None, confirm=True).revision == 2


def test_one_pages_later_save_is_kept_whatever_order_its_saves_arrive_in():
    """A page's keepalive (seq 2) overtakes its own save in flight (seq 1): the later state is kept, with no conflict
    although it was based on the revision before seq 1; seq 1 arriving last changes nothing. Another page's save
    on the old revision is still a conflict."""
    round_ = make_round(1)
    coder = add_coder(round_, "Coder A")
    (excerpt,) = round_.excerpts.all()
    wording, tone = code_ids(round_, "WORDING", "TONE")
    page = {"coder": coder, "excerpt_id": excerpt.id, "writer": "page-1"}
    coding_save(**page, code_ids=[wording], memo="partial", base_revision=0, writer_seq=1)
    later = coding_save(**page, code_ids=[wording, tone], memo="partial, then the whole memo", base_revision=0,
                        writer_seq=2)
    assert later.revision == 2
    late = coding_save(**page, code_ids=[wording], memo="partial", base_revision=0, writer_seq=1)
    assert (late.revision, late.memo) == (2, "partial, then the whole memo")
    with pytest.raises(CodingConflict):
        coding_save(coder=coder, excerpt_id=excerpt.id, code_ids=[], memo="", base_revision=1, writer="page-2",
                    writer_seq=1)
    stored = ExcerptCoding.objects.get()
    assert (stored.memo, sorted(stored.codes.values_list("id", flat=True))) == (
        "partial, then the whole memo", sorted([wording, tone]))


def test_a_confirmation_overtaken_by_the_same_pages_keepalive_is_kept():
    """Enter (confirm, seq 1) and the tab closed at once: the keepalive (seq 2, the same state, no confirm) arrives
    first. The confirmation arriving last is kept, and the codes and memo stay as seq 2 stored them; the coder's
    only excerpt confirmed, their completion time is set."""
    round_ = make_round(1)
    coder = add_coder(round_, "Coder A")
    (excerpt,) = round_.excerpts.all()
    (wording,) = code_ids(round_, "WORDING")
    page = {"coder": coder, "excerpt_id": excerpt.id, "writer": "page-1", "base_revision": 0}
    keepalive = coding_save(**page, code_ids=[wording], memo="whole memo", writer_seq=2)
    assert keepalive.confirmed_at is None and not keepalive.superseded
    confirmation = coding_save(**page, code_ids=[wording], memo="whole mem", confirm=True, writer_seq=1)
    assert confirmation.superseded
    assert _stored(coder, excerpt) == (["WORDING"], "whole memo", True)
    assert confirmation.revision == 1
    coder.refresh_from_db()
    assert coder.completed_at is not None
    # A save numbered like the one stored is not stored either, and says so (two tabs that took over one page's
    # pending change number their saves alike): the page compares what is stored with what it shows.
    again = coding_save(**page, code_ids=[], memo="another tab", writer_seq=2)
    assert again.superseded and _stored(coder, excerpt) == (["WORDING"], "whole memo", True)
    # Another page's save is never superseded: it is stored, or refused as a conflict on an older revision.
    other = coding_save(coder=coder, excerpt_id=excerpt.id, code_ids=[], memo="", writer="page-2", writer_seq=1,
                        base_revision=1)
    assert not other.superseded and other.revision == 2


def test_a_closed_round_refuses_saves_and_confirmations():
    round_ = make_round(1)
    coder = add_coder(round_, "Coder A")
    excerpt = round_.excerpts.get()
    round_.closed_at = timezone.now()
    round_.save()
    with pytest.raises(RoundClosed):
        coding_save(coder=coder, excerpt_id=excerpt.id, code_ids=code_ids(round_, "TONE"), memo="late")
    with pytest.raises(RoundClosed):
        coding_confirm(coder=coder, excerpt_id=excerpt.id)
    assert not ExcerptCoding.objects.exists()


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(not os.environ.get("DATABASE_URL", "").startswith("postgres"),
                    reason="row locks need PostgreSQL (DATABASE_URL=postgres://...)")
def test_two_tabs_saving_at_once_leave_one_coding_and_one_start_time():
    """Two threads (two tabs) save and confirm the same coder's excerpts at once, 20 rounds each: the coder's row
    lock applies them one after the other, so there is one ExcerptCoding per excerpt (no IntegrityError from two
    get_or_create), the last full set wins, and completed_at is set once both excerpts are confirmed."""
    assert connection.vendor == "postgresql"
    round_ = make_round(2)
    coder = add_coder(round_, "Coder A")
    first, second = round_.excerpts.order_by("position")
    wording, tone = code_ids(round_, "WORDING", "TONE")
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def tab(codes: list[int], excerpt_id: int) -> None:
        try:
            barrier.wait()
            for n in range(20):
                coding_save(coder=coder, excerpt_id=excerpt_id, code_ids=codes, memo=f"save {n}", confirm=n == 19)
                coding_save(coder=coder, excerpt_id=first.id, code_ids=codes, memo="shared")
        except BaseException as error:  # noqa: BLE001 (reported in the main thread)
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=tab, args=([wording], first.id)),
               threading.Thread(target=tab, args=([wording, tone], second.id))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert ExcerptCoding.objects.filter(coder=coder).count() == 2
    assert _stored(coder, second) == (["TONE", "WORDING"], "save 19", True)
    codes, memo, confirmed = _stored(coder, first)
    assert memo == "shared" and confirmed and codes in (["WORDING"], ["TONE", "WORDING"])
    coder.refresh_from_db()
    assert coder.started_at is not None and coder.completed_at is not None
