"""Verbal rules: read a free-prose reply to a classification prompt (seed 000 §3.4) into 0, 1 or none.

A re-parse mode of the second-pass extraction (:mod:`auditapp.paradigms.classification.extraction`), offered for
replies the strict parser (:mod:`.replies`) left unparseable, such as "The given sentences are not ableist and
they highlight…". Pure, deterministic, and deliberately small: every rule is a named pattern below, and anything
the rules cannot read with confidence is "none" (the paper's rule that nothing is guessed still holds; the
extracted labels are stored beside the strict outcomes, never instead of them).

How a reply is read
-------------------
1. ``<think>`` blocks are set aside. Quoted text (``"…"``, ``“…”``) and echoed prompt lines (``Target sentence:
   …``) are the sentence being judged, not a verdict: if one of them mentions ableism ("ableist", "ableism",
   "anti-autistic") the reply is **none** ("quoted sentence mentions ableism"); otherwise they are blanked out.
   "can be labeled as such" after a verdict restates it and is blanked too (its "can" is no hedge).
2. The rest is cut into sentences at ``. ! ?`` and line ends (a full stop between two digits, "0.7", is a decimal
   point, not a sentence end). Each rule is matched inside one sentence.
3. Verdict rules (:data:`RULES`), negated ones first; a negated verdict's words are blanked before the
   affirmed rules look, so "does not contain ableist language" is never also "contains ableist language":

   - 0, ``negated copula``: "is not ableist", "are not ableist", "isn't ableist", "was not considered ableist",
     "is not an ableist statement";
   - 0, ``not considered``: "not considered ableist", "should not be seen as ableist";
   - 0, ``non-ableist``: "non-ableist", "non ableist";
   - 0, ``negated contains``: "does not contain any ableist language", "doesn't use ableist terms";
   - 0, ``no ableism``: "contains no ableist language", "there is no ableism", "free of ableist language";
   - 1, ``copula``: "is ableist", "is clearly ableist", "is an ableist statement", "is considered ableist";
   - 1, ``contains``: "contains ableist language", "uses ableist terms", "reinforces ableist stereotypes";
   - the label digit, ``label number``: "label: 1", "Label 0", "This label of 0 indicates…", "classified as 1"
     (not "label 0 or 1", which names the options, nor "label: 0.7" or "label 1.5", which are no label).
4. A verdict is void, and the reply **none**, when its sentence, with every verdict's own words blanked, still
   holds (checked in this order):

   - a negation (:data:`NEGATION_RE`: "I don't think it is ableist", "It is not true that…", "None of it is
     ableist"): "negation around the verdict";
   - a hedge (:data:`HEDGE_RE`: "may", "could", "perhaps", "seems", "likely", "if", "probability", …):
     "hedged";
   - a word that reports, weighs or judges the verdict instead of giving it (:data:`ATTRIBUTION_RE`: "say",
     "think", "believe", "claim", "argue", "would", "disagree", "wrong", "false", …: "Some people say it is
     ableist", "The claim that it is ableist is wrong", "Label 1 would be wrong"): "reported or judged";

   or when the next sentence is a bare denial (:data:`DENIAL_RE`: "No.", "No, it is not.", "It isn't."), as in
   "The sentence is ableist? No, it is not.": "denied in the next sentence". Hedged verdicts that no rule
   above takes ("may be ableist", "could be seen as ableist", "is potentially ableist", "seems ableist") and
   conditions in the sentence of a verdict ("If the speaker is not autistic, the sentence is ableist") are
   caught by :data:`HEDGED_RE` and make the reply none ("hedged") as well. The test is deliberately blunt: a
   verdict with a negation or a hedge anywhere in its sentence ("It is ableist because it does not respect…")
   is none; when in doubt, none.
5. Verdicts of both 0 and 1 → **none** ("both labels", whether or not one of them is void); a label digit standing
   alone elsewhere in the reply that contradicts the verdicts ("… are not ableist … and 1 is the only possible
   answer", "Answer: 1"; a digit at a line's end or before punctuation, "is", "was", "as" or "would", outside the
   verdicts' words, not a list number, "0 or 1", "0.5", a count such as "1 ableist term", a legend ("1: ableist"),
   a reference ("[1]") or a number of something else ("Step 1", "Confidence: 0", "0 out of 1")) → **none** ("both
   labels"); else a void verdict → **none** (its reason); else the one value of the verdicts → that label; no
   verdict → **none** ("no verdict"). Talk about ableism that is no verdict on the sentence ("The Idiot is a classic example of
   ableism…", "Ableism is discrimination…") gives no verdict.

The reading's ``reason`` names the rule and the words that decided ("negated copula: 'are not ableist'") or why
it is none. :data:`RULES_VERSION` changes whenever a rule does: a stored extraction names the version it ran.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

RULES_VERSION = "3"

REASON_EMPTY = "empty reply"
REASON_QUOTED = "quoted sentence mentions ableism"
REASON_HEDGED = "hedged"
REASON_NEGATION = "negation around the verdict"
REASON_ATTRIBUTED = "reported or judged"
REASON_DENIED = "denied in the next sentence"
REASON_BOTH = "both labels"
REASON_NO_VERDICT = "no verdict"

_ABLE = r"(?:ableis[mt]\w*|anti-autistic)"
_ABLE_ADJ = r"(?:ableist(?:ic)?|anti-autistic)\b"
_ADVERB = (r"(?:(?:clearly|definitely|certainly|explicitly|overtly|inherently|really|very|highly|particularly|also"
           r"|actually|generally|necessarily|in\s+itself|itself|strictly|directly)\s+)?")
_SEEN_AS = r"(?:(?:considered|seen\s+as|regarded\s+as|deemed|viewed\s+as|perceived\s+as)\s+)?"
_ARTICLE = r"(?:an?\s+)?"
_CONTAIN_VERBS = (r"(?:contain|use|include|express|show|exhibit|display|promote|reflect|convey|have|perpetuate"
                  r"|involve|demonstrate|employ|reinforce)")

THINK_RE = re.compile(r"<think>.*?(?:</think>|\Z)", re.S | re.I)
QUOTED_RE = re.compile(r"\"[^\"\n]*\"|“[^”]*”|^[\s*_>-]*(?:preceding|target|following)\s+sentence\s*:.*$",
                       re.I | re.M)
ABLEISM_RE = re.compile(_ABLE, re.I)
# A sentence ends at ! ? or a line end, or at a full stop that is not a decimal point between two digits.
SENTENCE_END_RE = re.compile(r"[!?\n]|\.(?!\d)|(?<!\d)\.")
HEDGE_RE = re.compile(
    r"\b(?:may|might|could|can|possibly|perhaps|potentially|arguably|somewhat|seems?|appears?|likely|probably"
    r"|unlikely|if|whether|unless|maybe|probability|probabilities|chance|likelihood|confidence|confident)\b",
    re.I)
NEGATION_RE = re.compile(r"\b(?:not|no|none|never|neither|nor|hardly|nothing)\b|n['’]t\b", re.I)
ATTRIBUTION_RE = re.compile(
    r"\b(?:says?|said|saying|claims?|claimed|claiming|argues?|argued|arguing|think|thinks|thought|believes?"
    r"|believed|feels?|felt|suggests?|suggested|assumes?|assumed|asserts?|asserted|accuses?|accused|according"
    r"|would|disagrees?|disagreed|deny|denies|denied|doubts?|doubtful|questionable|wrong|false|incorrect|untrue"
    r"|mistaken|mistake|misleading|inaccurate)\b", re.I)
DENIAL_RE = re.compile(
    r"\A[\s*_>-]*(?:(?:no|nope|not\s+really|not\s+at\s+all|it\s+is\s+not|it\s+isn['’]t|it['’]s\s+not|this\s+is\s+not"
    r"|that\s+is\s+not|it\s+was\s+not|it\s+wasn['’]t)\b[\s,;:*_]*)+(?:ableist)?[\s*_]*\Z", re.I)
HEDGED_RE = re.compile(
    r"\b(?:may|might|could|can)\s+(?:not\s+)?(?:\w+\s+){0,3}?" + _ABLE
    + r"|\b(?:is|are|was|were|be)\s+(?:potentially|possibly|arguably|somewhat|perhaps|likely|probably|borderline"
      r"|slightly|subtly|mildly)\s+(?:\w+\s+)?" + _ABLE
    + r"|\b(?:seems?|appears?)\s+(?:to\s+be\s+)?(?:\w+\s+)?" + _ABLE
    + r"|\b(?:if|unless|whether|depending\s+on)\b[^.!?\n]*?" + _ABLE, re.I)

# "… are not ableist and can be labeled as such" restates the verdict; its "can" is no hedge.
AS_SUCH_RE = re.compile(r"\b(?:and\s+)?can\s+be\s+(?:label(?:l)?ed|classified|marked|categori[sz]ed)\s+as\s+such\b",
                        re.I)
# A number opening a list item ("1. The sentence…", "2) …") is no label digit.
LIST_MARKER_RE = re.compile(r"^[\s*_>-]*\(?\d+[.)](?=\s)", re.M)
# A label digit standing alone: not inside a number or a word, not one of two options ("0 or 1", "0/1", "0-1"), and
# followed by the end of its line, punctuation, or "is", "was", "as", "would" ("1 is the only possible answer").
LONE_DIGIT_RE = re.compile(
    r"(?<![\w.,/\[-])(?<![01] or )(?<![01] and )(?<![01] to )([01])(?![\w,/]|\.\d|\s*(?:or|and|to|/|-|–)\s*[01]\b)"
    r"(?![ \t]*:[ \t]*[A-Za-z])(?=[ \t]*(?:$|[.,;:!?)\]\"'*_`]|(?:is|was|as|would)\b))", re.I | re.M)
# A digit that numbers or measures something else ("Step 1:", "Confidence: 0", "0 out of 1") is no label either.
NUMBERING_BEFORE_RE = re.compile(r"\b(?:step|reason|note|point|version|example|rule|text|item|sentence|part|option"
                                 r"|level|confidence|score|probability|rating|out\s+of)\W{0,3}$", re.I)

_NOT = r"(?:not|never)\s+"
_CONTRACTED = r"(?:isn|aren|wasn|weren)['’]t\s+"


@dataclass(frozen=True)
class Rule:
    """A verdict pattern: the label it gives (None: the label digit it captures) and its name in reasons."""

    name: str
    label: int | None
    pattern: re.Pattern[str]


NEGATED_RULES = (
    Rule("negated copula", 0, re.compile(
        r"\b(?:(?:is|are|was|were|be)\s+" + _NOT + r"|" + _CONTRACTED + r")" + _ADVERB + _SEEN_AS + _ARTICLE
        + _ABLE_ADJ, re.I)),
    Rule("not considered", 0, re.compile(
        r"\bnot\s+(?:be\s+)?(?:considered|seen\s+as|regarded\s+as|deemed|viewed\s+as|perceived\s+as)\s+" + _ARTICLE
        + _ABLE_ADJ, re.I)),
    Rule("non-ableist", 0, re.compile(r"\bnon[\s-]?ableist\b", re.I)),
    Rule("negated contains", 0, re.compile(
        r"\b(?:does|do|did)\s*(?:not\s+|n['’]t\s+)" + _CONTAIN_VERBS + r"\s+(?:any\s+)?(?:\w+\s+)?" + _ABLE, re.I)),
    Rule("no ableism", 0, re.compile(r"\b(?:no|free\s+(?:of|from)|without(?:\s+any)?)\s+(?:\w+\s+)?" + _ABLE, re.I)),
)
AFFIRMED_RULES = (
    Rule("copula", 1, re.compile(r"\b(?:is|are|was|were)\s+" + _ADVERB + _SEEN_AS + _ARTICLE + _ABLE_ADJ, re.I)),
    Rule("contains", 1, re.compile(
        r"\b(?:contains?|uses?|includes?|express(?:es)?|exhibits?|displays?|promotes?|reflects?|conveys?"
        r"|perpetuates?|reinforces?|employs?|has)\s+(?!(?:no|not|any)\b)(?:\w+\s+)?" + _ABLE, re.I)),
    Rule("label number", None, re.compile(
        r"\b(?:label(?:l?ed)?|classification|classified)\s*(?:of|:|=|-|is|as|would\s+be)?\s*[\"'*`(\[]*([01])"
        r"(?![\w.,/]\d)(?!\s*(?:or|and|to|/|-|–)\s*[01]\b)", re.I)),
)
RULES = NEGATED_RULES + AFFIRMED_RULES


@dataclass(frozen=True)
class VerbalReading:
    """``label`` 0/1, or None with the ``reason`` the rules say none; for a label, ``reason`` names the rule(s)
    and the words that decided."""

    label: int | None
    reason: str


def read_verbal(text: str | None) -> VerbalReading:
    """Read one reply by the rules of the module docstring."""
    if text is None or not text.strip():
        return VerbalReading(None, REASON_EMPTY)
    body = THINK_RE.sub(" ", text)
    for quoted in QUOTED_RE.finditer(body):
        if ABLEISM_RE.search(quoted.group(0)):
            return VerbalReading(None, f"{REASON_QUOTED}: {_excerpt(quoted.group(0))!r}")
    body = QUOTED_RE.sub(lambda match: " " * len(match.group(0)), body)
    body = AS_SUCH_RE.sub(lambda match: " " * len(match.group(0)), body)
    hedged = HEDGED_RE.search(body)
    if hedged:
        return VerbalReading(None, f"{REASON_HEDGED}: {_excerpt(hedged.group(0))!r}")

    verdicts: list[tuple[int, str, str]] = []
    void: str | None = None
    sentences = _sentences(LIST_MARKER_RE.sub(lambda match: " " * len(match.group(0)), body))
    rests = []
    for index, sentence in enumerate(sentences):
        rest = sentence
        found_in_sentence = []
        for rules in (NEGATED_RULES, AFFIRMED_RULES):
            found = [(rule, match) for rule in rules for match in rule.pattern.finditer(rest)]
            found_in_sentence += found
            # Blank what the negated rules read, so the affirmed ones cannot read the same words as a 1.
            for _, match in found:
                rest = rest[:match.start()] + " " * (match.end() - match.start()) + rest[match.end():]
        for rule, match in found_in_sentence:
            label = rule.label if rule.label is not None else int(match.group(1))
            verdicts.append((label, rule.name, _excerpt(match.group(0))))
        if found_in_sentence and void is None:
            void = _void(rest, sentences[index + 1] if index + 1 < len(sentences) else "")
        rests.append(rest)
    labels = {label for label, _, _ in verdicts}
    if not labels:
        return VerbalReading(None, REASON_NO_VERDICT)
    if len(labels) == 1:
        for rest in rests:
            digit = next((match for match in LONE_DIGIT_RE.finditer(rest) if int(match.group(1)) not in labels
                          and not NUMBERING_BEFORE_RE.search(rest, 0, match.start())), None)
            if digit is not None:
                verdicts.append((int(digit.group(1)), "label digit", _excerpt(rest)))
                labels.add(int(digit.group(1)))
                break
    if len(labels) > 1:
        return VerbalReading(None, REASON_BOTH + ": " + "; ".join(f"{name}: {words!r}" for _, name, words in verdicts))
    if void is not None:
        return VerbalReading(None, void)
    return VerbalReading(labels.pop(), "; ".join(f"{name}: {words!r}" for _, name, words in verdicts))


def _void(rest: str, next_sentence: str) -> str | None:
    """Why the verdicts of a sentence are void (``rest``: the sentence with the verdicts' words blanked), or None
    when they stand."""
    for cue_re, reason in ((NEGATION_RE, REASON_NEGATION), (HEDGE_RE, REASON_HEDGED),
                           (ATTRIBUTION_RE, REASON_ATTRIBUTED)):
        cue = cue_re.search(rest)
        if cue:
            return f"{reason}: {_excerpt(cue.group(0))!r} in {_excerpt(rest)!r}"
    if DENIAL_RE.match(next_sentence):
        return f"{REASON_DENIED}: {_excerpt(next_sentence)!r}"
    return None


def _sentences(text: str) -> list[str]:
    return [part for part in SENTENCE_END_RE.split(text) if part and part.strip()]


def _excerpt(text: str, limit: int = 80) -> str:
    return " ".join(text.split())[:limit]
