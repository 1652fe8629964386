"""Local scorers (VADER, TextBlob): their scores equal the installed libraries' own output on the whole BITS
corpus, failures are recorded per text, and the identity names the version and the lexicon's hash."""
import hashlib
import importlib.metadata
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from textblob import TextBlob
from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

from auditapp.paradigms.bits.corpus import generate, paper_spec
from auditapp.scorers.local import LOCAL_SCORERS, LocalScorer, ScoreFailure, local_scorer, score_batch

REPO = Path(__file__).resolve().parents[2]


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


@pytest.mark.slow  # starts a Python process that sets Django up: seconds
def test_textblob_has_its_whole_lexicon_before_any_text_is_scored():
    """TextBlob fills its sentiment lexicon on first use, in steps and with no lock; the worker scores batches in
    several threads, and a thread that scored meanwhile got other polarities (seen: 8 of 2,310 sentences of the
    default corpus differed from the library in one run of five). In a fresh process, loading the scorer must
    load the lexicon."""
    script = ("import textblob.en as en\n"
              "from auditapp.scorers import local\n"
              "local._loaded('textblob')\n"
              "print(dict.__len__(en.sentiment), len(en.sentiment.labeler))\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, check=True)
    words, labels = map(int, done.stdout.split())
    assert words > 2000 and labels > 0, done.stdout


def test_threads_that_ask_for_a_scorer_at_once_load_it_once_and_only_use_it_loaded(monkeypatch):
    loads = []

    def slow_load():
        loads.append(threading.get_ident())
        time.sleep(0.2)
        return lambda text: 0.0

    slow = LocalScorer("slow", "vaderSentiment", "test", (-1.0, 1.0), slow_load, lambda: Path(__file__))
    monkeypatch.setitem(LOCAL_SCORERS, "slow", slow)
    start = threading.Barrier(8)

    def score() -> list:
        start.wait(timeout=5)
        return score_batch("slow", ["a text"])

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda _: score(), range(8)))
    assert len(loads) == 1 and results == [[0.0]] * 8
