"""The verbal rules' table (second-pass extraction): reply shapes small models give in prose, each with the outcome the
rules must give: affirmed, negated, hedged, both labels, a quoted sentence containing "ableist", label numbers, and
the replies that must stay "none"."""
from __future__ import annotations

import pytest

from auditapp.paradigms.classification.verbal_rules import (
    REASON_ATTRIBUTED,
    REASON_BOTH,
    REASON_DENIED,
    REASON_EMPTY,
    REASON_HEDGED,
    REASON_NEGATION,
    REASON_NO_VERDICT,
    REASON_QUOTED,
    read_verbal,
)

NONE = None

# (reply, expected label or None, for None: the reason it starts with)
TABLE = [
    # negated → 0
    ("The given sentences are not ableist and they highlight the challenges autistic people face.", 0, ""),
    ("The target sentence is not ableist.", 0, ""),
    ("It isn't ableist; it describes a diagnosis.", 0, ""),
    ("This statement is not considered ableist because it uses identity-first language.", 0, ""),
    ("The sentence is not an ableist statement, it reports a fact.", 0, ""),
    ("The text does not contain any ableist language.", 0, ""),
    ("The speaker doesn't use ableist terms here.", 0, ""),
    ("This sentence contains no ableist language and is respectful.", 0, ""),
    ("There is no ableism in this sentence.", 0, ""),
    ("The statement is free of ableist language.", 0, ""),
    ("A non-ableist description of an autistic child's day.", 0, ""),
    ("Although it mentions autism, the sentence is not ableist.", 0, ""),
    ("The sentences aren't ableist: they describe support needs.", 0, ""),
    ("**Not ableist.** The sentence is not ableist and the label would be 0.", 0, ""),
    # affirmed → 1
    ("The sentence is ableist because it calls autism a disease.", 1, ""),
    ("This is clearly ableist: it mocks autistic people.", 1, ""),
    ("The target sentence contains ableist language (\"retard\").", 1, ""),
    ("The speaker uses ableist stereotypes about autistic people.", 1, ""),
    ("It is an ableist statement that frames autism as a tragedy.", 1, ""),
    ("The sentence reinforces ableist ideas of a cure.", 1, ""),
    ("This sentence is considered ableist since it pathologizes autism.", 1, ""),
    # label numbers
    ("This label of 0 indicates that the speaker is describing their own experience.", 0, ""),
    ("label: 1 because of the slur", 1, ""),
    ("Based on the context I assign Label 0 to the sentence.", 0, ""),
    ("The sentence is classified as 1 since it mocks autistic people.", 1, ""),
    ("The sentence is ableist. Label: 1", 1, ""),
    ("The sentence is ableist. It mocks autistic people.", 1, ""),
    ("Label: 1.", 1, ""),
    # both labels → none
    ("The sentence is ableist, but the speaker is not ableist.", NONE, REASON_BOTH),
    ("Label 0 means not ableist and label 1 means ableist.", NONE, REASON_BOTH),
    # A lone label digit against the verdict (SmolLM2-135M-Instruct's replies) → none; one that agrees, a list
    # number, the options named and a count leave the verdict as it is.
    ("The given sentences are not ableist and 1 is the only possible answer.", NONE, REASON_BOTH),
    ("The sentences are not ableist.\nAnswer: 1", NONE, REASON_BOTH),
    ("The sentence is ableist. 0.", NONE, REASON_BOTH),
    ("The sentences are not ableist. Answer: 0", 0, ""),
    ("1. The sentence is not ableist.\n2. It describes a diagnosis.", 0, ""),
    ("The sentence is not ableist; the answer is between 0 and 1.", 0, ""),
    ("It is not ableist; the options were 0 or 1.", 0, ""),
    ("There is 1 autistic character. The sentence is not ableist.", 0, ""),
    ("The sentence is not ableist. Step 1: read the sentence.", 0, ""),
    ("It is not ableist [1].", 0, ""),
    ("This is not ableist. I give it a 0 out of 1.", 0, ""),
    ("The sentence is ableist. Confidence: 0.", 1, ""),
    ("Part of it is ableist; the rest of the sentences are not ableist.", NONE, REASON_BOTH),
    ("This label of 0 indicates respect, although the sentence is ableist in places.", NONE, REASON_BOTH),
    # hedged → none
    ("The sentence may be ableist depending on who says it.", NONE, REASON_HEDGED),
    ("It could be seen as ableist by some readers.", NONE, REASON_HEDGED),
    ("The sentence is potentially ableist.", NONE, REASON_HEDGED),
    ("This seems ableist to me.", NONE, REASON_HEDGED),
    ("It might not be ableist, but it is insensitive.", NONE, REASON_HEDGED),
    ("Perhaps the sentence is ableist.", NONE, REASON_HEDGED),
    ("If the speaker is not autistic, the sentence is ableist.", NONE, REASON_HEDGED),
    # negation around the verdict → none
    ("I don't think the sentence is ableist.", NONE, REASON_NEGATION),
    ("It is not true that this sentence is ableist.", NONE, REASON_NEGATION),
    # a negation, hedge or report anywhere in the verdict's sentence, or a denial after it → none (when in doubt)
    ("Some people say it is ableist, but it is not.", NONE, REASON_NEGATION),
    ("Many believe the sentence is ableist, however it isn't.", NONE, REASON_NEGATION),
    ("The claim that it is ableist is wrong.", NONE, REASON_ATTRIBUTED),
    ("It would be wrong to say the sentence is ableist.", NONE, REASON_ATTRIBUTED),
    ("I disagree that it is ableist.", NONE, REASON_ATTRIBUTED),
    ("Critics claim the sentence is ableist.", NONE, REASON_ATTRIBUTED),
    ("The sentence is ableist? No, it is not.", NONE, REASON_DENIED),
    ("The sentence is ableist. No.", NONE, REASON_DENIED),
    ("Is it ableist? It is ableist. It isn't.", NONE, REASON_DENIED),
    ("None of it is ableist.", NONE, REASON_NEGATION),
    ("Label 1 would be wrong.", NONE, REASON_ATTRIBUTED),
    ("It is false that the label is 1.", NONE, REASON_ATTRIBUTED),
    ("The sentence would not be considered ableist by most autistic readers.", NONE, REASON_ATTRIBUTED),
    ("The probability of label 1 is 0.1.", NONE, REASON_HEDGED),
    ("The sentence is ableist because it can hurt people.", NONE, REASON_HEDGED),
    ("The sentence is ableist because it does not respect autistic people.", NONE, REASON_NEGATION),
    # a number that is not the label digit → none
    ("Label: 0.7", NONE, REASON_NO_VERDICT),
    ("label 1.5", NONE, REASON_NO_VERDICT),
    ("Label: 0.7. The sentence is not ableist.", 0, ""),
    # quoted sentence containing "ableist" → none
    ("The sentence \"My boss is so ableist\" is not ableist.", NONE, REASON_QUOTED),
    ("“Calling people ableist is overused” is an opinion, and it is not ableist.", NONE, REASON_QUOTED),
    ("Target sentence: Ableist jokes are everywhere.\nThe sentence is ableist.", NONE, REASON_QUOTED),
    # no verdict → none
    ("The Idiot is a classic example of ableism in literature.", NONE, REASON_NO_VERDICT),
    ("Ableism is discrimination against disabled people.", NONE, REASON_NO_VERDICT),
    ("The speaker is describing their experience of an autism diagnosis and the support they received", NONE,
     REASON_NO_VERDICT),
    ("Please provide the sentences you would like me to classify.", NONE, REASON_NO_VERDICT),
    ("Label (0 or 1):", NONE, REASON_NO_VERDICT),
    ("", NONE, REASON_EMPTY),
    ("   \n", NONE, REASON_EMPTY),
    # reasoning set aside
    ("<think>Is it ableist? Maybe.</think>The sentence is not ableist.", 0, ""),
]


def test_the_table_has_at_least_forty_shapes_and_both_labels_and_none():
    assert len(TABLE) >= 40
    assert {label for _, label, _ in TABLE} == {0, 1, None}
    assert sum(label is None for _, label, _ in TABLE) >= 15


@pytest.mark.parametrize(("reply", "label", "reason"), TABLE, ids=[f"{i:02d}" for i in range(len(TABLE))])
def test_each_reply_shape_reads_as_expected(reply, label, reason):
    reading = read_verbal(reply)
    assert reading.label == label, reading.reason
    if label is None:
        assert reading.reason.startswith(reason), reading.reason
    else:
        assert reading.reason, "a label names the rule that gave it"


def test_none_is_read_as_an_empty_reply():
    assert read_verbal(None).label is None and read_verbal(None).reason == REASON_EMPTY


def test_a_label_names_the_rule_and_the_words():
    assert read_verbal("The given sentences are not ableist.").reason == "negated copula: 'are not ableist'"
    assert read_verbal("This label of 0 indicates it.").reason == "label number: 'label of 0'"
