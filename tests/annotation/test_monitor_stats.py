"""The study monitor's arithmetic (annotation.monitor_stats), on hand-made groups and times: no database."""
from __future__ import annotations

import pytest

from annotation.monitor_stats import (
    AttentionChecks,
    MiddleStep,
    ParticipantGroup,
    TimeBin,
    attention_checks,
    completion_times,
    duration_text,
    recruitment_funnel,
)

MIDDLE = [MiddleStep("Finished AQ", "answering AQ"), MiddleStep("Finished IAT", "taking IAT")]


def group(status, n, *, opened=True, consented=True, finished=(False, False), read=False, passed=None):
    return ParticipantGroup(status, opened, consented, tuple(finished), read, passed, n)


GROUPS = [
    group("invited", 5, opened=False, consented=False),            # not opened
    group("invited", 3, consented=False),                          # at the consent page
    group("declined", 2, consented=False),
    group("active", 4),                                            # answering AQ
    group("active", 1, finished=(False, True)),                    # IAT imported, AQ not: still answering AQ
    group("active", 2, finished=(True, False)),                    # taking the IAT
    group("active", 1, finished=(True, True)),                     # at the instructions
    group("active", 6, finished=(True, True), read=True),          # labelling
    group("completed", 3, finished=(True, True), read=True, passed=True),
    group("completed", 1, finished=(True, True), read=True, passed=False),
    group("completed", 1, opened=False, finished=(False, False)),  # completed before anything was recorded of them
    group("withdrawn", 2, read=True),                              # their answers deleted; read_instructions kept
    group("imported", 7, opened=False, consented=False),
]


def test_the_funnel_counts_each_milestone_and_who_waits_after_it():
    funnel = recruitment_funnel(groups=GROUPS, middle=MIDDLE)
    rows = {row.key: row for row in funnel.rows}
    assert [row.key for row in funnel.rows] == ["invited", "opened", "consented", "step-0", "step-1", "labelling",
                                                "completed"]
    # invited: everyone but the 7 imported = 5+3+2+4+1+2+1+6+3+1+1+2 = 31
    assert funnel.invited == rows["invited"].reached == 31
    # opened: all but the 5 who never opened; the completed one who has no record of it consented (5 others: ok)
    assert rows["opened"].reached == 31 - 5
    # consented: 31 - 5 not opened - 3 at consent - 2 declined = 21 (the 2 withdrawn included)
    assert rows["consented"].reached == 21
    # past AQ: 2 + 1 + 6 + 4 + 1 (every completed one) = 14; past IAT: 1 (imported) + 1 + 6 + 5 = 13
    assert (rows["step-0"].reached, rows["step-1"].reached) == (14, 13)
    assert (rows["labelling"].reached, rows["completed"].reached) == (11, 5)
    assert [(row.waiting, row.waiting_text) for row in funnel.rows] == [
        (5, "have not opened their link yet"), (3, "at the consent page"), (5, "answering AQ"), (2, "taking IAT"),
        (1, "at the labelling instructions"), (6, "labelling"), (5, "")]
    assert (funnel.declined, funnel.withdrawn, funnel.imported) == (2, 2, 7)
    assert funnel.accounted == funnel.invited
    assert funnel.statuses == {"invited": 8, "declined": 2, "active": 14, "completed": 5, "withdrawn": 2,
                               "imported": 7}


def test_a_study_without_instruments_or_iat_goes_from_consent_to_the_instructions():
    funnel = recruitment_funnel(groups=[group("active", 2, finished=()), group("active", 1, finished=(), read=True)],
                                middle=[])
    assert [row.key for row in funnel.rows] == ["invited", "opened", "consented", "labelling", "completed"]
    assert funnel.rows[2].waiting == 2 and funnel.rows[2].waiting_text == "at the labelling instructions"
    assert funnel.rows[3].waiting == 1 and funnel.accounted == 3


def test_an_empty_study_has_a_funnel_of_zeros():
    funnel = recruitment_funnel(groups=[], middle=MIDDLE)
    assert funnel.invited == 0 and all(row.reached == row.waiting == 0 for row in funnel.rows)


def test_groups_must_have_a_flag_per_middle_step():
    with pytest.raises(ValueError, match="1 middle-step flags for 2 steps"):
        recruitment_funnel(groups=[group("active", 1, finished=(True,))], middle=MIDDLE)


def test_attention_checks_count_the_scored_completed_participants():
    assert attention_checks(GROUPS) == AttentionChecks(scored=4, passed=3)
    assert attention_checks(GROUPS).pass_rate == 0.75 and attention_checks(GROUPS).pass_percent == 75
    assert attention_checks([]).pass_rate is None


def test_completion_times_median_and_whole_minute_bins():
    # 12.5, 20, 21 and 40 minutes: median (20 + 21) / 2 = 20.5 min; 1-minute bins would be 40 - 12 + 1 = 29 > 12,
    # 2: 20 - 6 + 1 = 15, 5: 8 - 2 + 1 = 7 ≤ 12 → 5-minute bins from 10 to 45.
    times = completion_times([750, 1200, 1260, 2400])
    assert (times.n, times.median, times.shortest, times.longest) == (4, 1230, 750, 2400)
    assert (times.median_text, times.shortest_text, times.longest_text) == ("20 min 30 s", "12 min 30 s", "40 min")
    assert times.bins == [TimeBin(10, 15, 1), TimeBin(15, 20, 0), TimeBin(20, 25, 2), TimeBin(25, 30, 0),
                          TimeBin(30, 35, 0), TimeBin(35, 40, 0), TimeBin(40, 45, 1)]
    assert times.most_in_a_bin == 2


def test_one_time_gives_one_bin_and_none_gives_none():
    assert completion_times([90]).bins == [TimeBin(1, 2, 1)]
    empty = completion_times([])
    assert (empty.n, empty.median, empty.bins, empty.most_in_a_bin) == (0, None, [], 0)


def test_a_span_of_weeks_takes_day_wide_bins():
    times = completion_times([60, 20 * 86400])
    assert times.bins[0] == TimeBin(0, 1440, 1) and times.bins[-1] == TimeBin(20 * 1440, 21 * 1440, 1)


def test_a_negative_time_is_left_out_and_counted():
    # A completion stored before its consent (a clock set back) must not take the dashboard down, nor count.
    times = completion_times([10, -1, 50])
    assert (times.n, times.median, times.shortest, times.n_negative) == (2, 30, 10, 1)
    assert completion_times([-5]).n == 0 and completion_times([-5]).n_negative == 1


@pytest.mark.parametrize(("seconds", "text"), [(44.6, "45 s"), (60, "1 min"), (1650, "27 min 30 s"),
                                               (3900, "1 h 5 min"), (7200, "2 h"), (183600, "2 d 3 h")])
def test_durations_are_written_as_people_say_them(seconds, text):
    assert duration_text(seconds) == text
