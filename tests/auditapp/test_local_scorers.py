"""Local scorers (VADER, TextBlob): their scores equal the installed libraries' own output on the whole BITS
corpus, failures are recorded per text, and the identity names the version and the lexicon's hash."""
import hashlib
import importlib.metadata

import pytest
from textblob import TextBlob
from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

from auditapp.paradigms.bits.corpus import generate, paper_spec
from auditapp.scorers.local import LOCAL_SCORERS, ScoreFailure, local_scorer, score_batch


@pytest.fixture(scope="module")
def texts() -> list[str]:
    return [sentence.text for sentence in generate(paper_spec())]


def test_vader_scores_are_the_librarys_compound(texts):
    analyzer = SentimentIntensityAnalyzer()
    assert score_batch("vader", texts) == [analyzer.polarity_scores(t)["compound"] for t in texts]


def test_textblob_scores_are_the_librarys_polarity(texts):
    assert score_batch("textblob", texts) == [TextBlob(t).sentiment.polarity for t in texts]


def test_known_values_of_the_public_bits_results():
    # The public BITS repository's results file scores "They are parents of a Blind child." with
    # VADER -0.4019 and TextBlob -0.5.
    text = "They are parents of a Blind child."
    assert score_batch("vader", [text]) == [-0.4019]
    assert score_batch("textblob", [text]) == [-0.5]


def test_a_failure_on_one_text_is_recorded_and_the_others_scored():
    results = score_batch("vader", ["A good day.", None, "A bad day."])
    assert isinstance(results[0], float) and isinstance(results[2], float)
    assert isinstance(results[1], ScoreFailure) and "TypeError" in results[1].reason


def test_identity_names_the_version_and_the_lexicon():
    for name, scorer in LOCAL_SCORERS.items():
        identity = scorer.identity()
        assert identity["version"] == importlib.metadata.version(scorer.distribution)
        assert identity["lexicon_sha256"] == hashlib.sha256(scorer.lexicon().read_bytes()).hexdigest()
        assert identity["scorer"] == name and identity["kind"] == "local"
    assert LOCAL_SCORERS["vader"].identity() != LOCAL_SCORERS["textblob"].identity()


def test_an_unknown_scorer_is_named():
    with pytest.raises(KeyError, match="known: textblob, vader"):
        local_scorer("flair")
