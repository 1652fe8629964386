"""Local scorers: sentiment tools that run inside the worker process, with no server (seed 001 §3.2).

Pure: no Django. Each :class:`LocalScorer` names its package, scores a batch of texts and gives its
*identity*: the package's version and the sha256 of the lexicon file it scores with. The identity goes into
every request key, so a stored score is never reused across versions (a lexicon's scores drift between
releases, which is why a published table can only be reproduced from a published column or the same version).

- ``vader``: vaderSentiment's ``SentimentIntensityAnalyzer().polarity_scores(text)["compound"]``, in [-1, 1]
  (Hutto & Gilbert 2014).
- ``textblob``: TextBlob's default analyser's ``sentiment.polarity``, in [-1, 1] (Loria 2018; its
  PatternAnalyzer lexicon ``en-sentiment.xml``, which needs no NLTK data download).

:func:`score_batch` scores each text on its own: a text a scorer fails on gets a :class:`ScoreFailure` with
the exception as its reason, the rest are scored; nothing is guessed.
"""
from __future__ import annotations

import hashlib
import importlib.metadata
import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

WARM_UP_TEXT = "A good day."


@dataclass(frozen=True)
class ScoreFailure:
    """Why a text has no score."""

    reason: str


@dataclass(frozen=True)
class LocalScorer:
    """A scorer run in-process: ``load()`` returns a function from one text to a float."""

    name: str
    distribution: str
    description: str
    scale: tuple[float, float]
    load: Callable[[], Callable[[str], float]]
    lexicon: Callable[[], Path]

    def identity(self) -> dict[str, str]:
        """What the scores depend on: the package and its version, and the lexicon file's sha256."""
        return _identity(self.name)


def _vader() -> Callable[[str], float]:
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    analyzer = SentimentIntensityAnalyzer()
    return lambda text: analyzer.polarity_scores(text)["compound"]


def _vader_lexicon() -> Path:
    import vaderSentiment.vaderSentiment as module

    return Path(module.__file__).with_name("vader_lexicon.txt")


def _textblob() -> Callable[[str], float]:
    from textblob import TextBlob

    # TextBlob loads its sentiment lexicon on first use and fills it in steps with no lock; a thread that scores
    # meanwhile sees half a lexicon and returns other polarities. Scoring one text here loads it before any
    # caller can score (``_loaded`` holds a lock while loading).
    def polarity(text: str) -> float:
        return TextBlob(text).sentiment.polarity

    polarity(WARM_UP_TEXT)
    return polarity


def _textblob_lexicon() -> Path:
    import textblob

    return Path(textblob.__file__).parent / "en" / "en-sentiment.xml"


LOCAL_SCORERS: dict[str, LocalScorer] = {
    scorer.name: scorer for scorer in (
        LocalScorer("vader", "vaderSentiment", "VADER compound score", (-1.0, 1.0), _vader, _vader_lexicon),
        LocalScorer("textblob", "textblob", "TextBlob polarity", (-1.0, 1.0), _textblob, _textblob_lexicon),
    )
}


def local_scorer(name: str) -> LocalScorer:
    """The local scorer of that name; ``KeyError`` naming the known ones otherwise."""
    try:
        return LOCAL_SCORERS[name]
    except KeyError:
        raise KeyError(f"no local scorer {name!r}; known: {', '.join(sorted(LOCAL_SCORERS))}") from None


@cache
def _identity(name: str) -> dict[str, str]:
    scorer = local_scorer(name)
    digest = hashlib.sha256(scorer.lexicon().read_bytes()).hexdigest()
    return {"kind": "local", "scorer": name, "package": scorer.distribution,
            "version": importlib.metadata.version(scorer.distribution), "lexicon_sha256": digest}


_LOADING = threading.Lock()


def _loaded(name: str) -> Callable[[str], float]:
    """The scorer's function, loaded once per process; the worker scores batches in several threads at once, and
    a library that loads lazily must finish loading before any of them scores."""
    with _LOADING:
        return _load_once(name)


@cache
def _load_once(name: str) -> Callable[[str], float]:
    return local_scorer(name).load()


def score_batch(name: str, texts: Sequence[str]) -> list[float | ScoreFailure]:
    """Each text's score, or a :class:`ScoreFailure` with the reason (an exception, or a value that is not a
    finite number within the scorer's scale)."""
    scorer = local_scorer(name)
    score = _loaded(name)
    low, high = scorer.scale
    results: list[float | ScoreFailure] = []
    for text in texts:
        try:
            value = float(score(text))
        except Exception as error:  # noqa: BLE001 - any failure of a third-party scorer is recorded, not raised
            results.append(ScoreFailure(f"{type(error).__name__}: {error}"))
            continue
        if not math.isfinite(value) or not low <= value <= high:
            results.append(ScoreFailure(f"{scorer.name} returned {value!r}, outside [{low:g}, {high:g}]"))
        else:
            results.append(value)
    return results
