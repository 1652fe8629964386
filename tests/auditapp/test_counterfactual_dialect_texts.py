"""Our matched SAE/AAVE pairs: tags strip to the text sent, every pair applies a feature and differs from its SAE
original, every feature of the SI's inventory is used; a researcher's pairs are read with every problem by row."""
import pytest

from auditapp.paradigms.counterfactual.dialect_texts import (
    DEFAULT_PAIRS,
    FEATURE_DESCRIPTIONS,
    FEATURES,
    INTRODUCTION_PAIRS,
    MESSAGE_PAIRS,
    features_of,
    parse_pairs,
    strip_features,
    unknown_tags,
)
from auditapp.paradigms.counterfactual.material import DialectPair
from auditapp.paradigms.counterfactual.problems import MaterialError


def test_the_inventory_is_the_sis_nine_features():
    assert FEATURES == ("HB", "CD", "NC", "AIN'T", "-IN", "DEM", "GON'", "REAL", "NSTD")
    assert set(FEATURE_DESCRIPTIONS) == set(FEATURES)
    assert FEATURE_DESCRIPTIONS["NSTD"] == "Non-standard agreement forms (e.g., you was)"


def test_strip_features_removes_tags_and_collapses_the_space_a_deleted_copula_leaves():
    assert strip_features("She [HB]be [-IN]workin' late.") == "She be workin' late."
    assert strip_features("My kitchen [CD] always full.") == "My kitchen always full."
    assert strip_features("You [CD] [GON']gon' pay me back, or we [CD] done [CD].") == \
        "You gon' pay me back, or we done."
    # The SI prints tags with a typographic apostrophe; they are tags all the same.
    assert strip_features("I [AIN’T]ain't done [NC]nothing.") == "I ain't done nothing."
    assert strip_features("No tags here.") == "No tags here."


def test_features_of_lists_each_feature_once_in_inventory_order():
    assert features_of("You don't [NC]never listen to [NC]nothing I [-IN]sayin' [AIN’T]ain't") == (
        "NC", "AIN'T", "-IN")
    assert features_of("plain") == ()
    assert unknown_tags("I [XX]be [HB]be [note]") == ["[XX]", "[note]"]


def test_default_pairs_are_ours_15_introductions_and_20_messages():
    assert len(INTRODUCTION_PAIRS) == 15 and {p.text_set for p in INTRODUCTION_PAIRS} == {"introduction"}
    assert len(MESSAGE_PAIRS) == 20 and {p.text_set for p in MESSAGE_PAIRS} == {"message"}
    assert len({p.key for p in DEFAULT_PAIRS}) == 35
    assert {p.source for p in DEFAULT_PAIRS} == {"ours"}


def test_every_pair_applies_a_feature_differs_from_its_sae_and_strips_clean():
    used = set()
    for pair in DEFAULT_PAIRS:
        sent = strip_features(pair.aave_annotated)
        assert features_of(pair.aave_annotated), pair.key
        assert sent != pair.sae, pair.key
        assert "[" not in sent and "]" not in sent and "  " not in sent
        assert unknown_tags(pair.aave_annotated) == []
        assert features_of(pair.sae) == () and strip_features(pair.sae) == pair.sae
        used |= set(features_of(pair.aave_annotated))
    assert used == set(FEATURES)


def test_parse_pairs_reads_csv_and_lists():
    csv_text = ("key,text_set,sae,aave\n"
                "p1,message,You are late.,You [CD] late.\n"
                "p2,introduction,I usually cook.,I [HB]be [-IN]cookin'.\n")
    pairs = parse_pairs(csv_text)
    assert pairs == [DialectPair("p1", "message", "You are late.", "You [CD] late.", "researcher"),
                     DialectPair("p2", "introduction", "I usually cook.", "I [HB]be [-IN]cookin'.", "researcher")]
    assert parse_pairs([{"key": "p1", "text_set": "message", "sae": "You are late.",
                         "aave": "You late."}])[0].aave_annotated == "You late."


def test_parse_pairs_names_every_problem_by_row_and_column():
    csv_text = ("key,text_set,sae,aave\n"
                "p1,message,You are late.,You [CD] late.\n"        # 2: fine
                "p1,email,You are late.,You late.\n"               # 3: repeated key, unknown text set
                "bad key,message,,You late.\n"                     # 4: key, empty SAE
                "p4,message,You are late.,You [XX] late.\n"        # 5: unknown tag
                "p5,message,You [CD] late.,You so late.\n"         # 6: tag in the SAE text
                "p6,message,You are late.,You [CD]are  late.\n")   # 7: the same text once stripped
    with pytest.raises(MaterialError) as caught:
        parse_pairs(csv_text)
    assert [(p.row, p.column) for p in caught.value.problems] == [
        (3, "key"), (3, "text_set"), (4, "key"), (4, "sae"), (5, "aave"), (6, "sae"), (7, "aave")]
    with pytest.raises(MaterialError) as caught:
        parse_pairs([{"key": "p1", "sae": "a", "aave": "b"}])
    assert [(p.row, p.column) for p in caught.value.problems] == [(None, "text_set"), (1, "text_set")]
    with pytest.raises(MaterialError, match="no pairs"):
        parse_pairs([])
