"""Parse a model's reply to a classification prompt (seed 000 §3.4) into a label 0/1, a refusal, or unparseable.

Pure Python, deterministic: every pattern is a named module constant, tried in a fixed order.

Shapes understood
-----------------
- a bare label, or a label first: ``1``, ``0.``, ``**1** – stereotypes autistic people``, ``1 - reason``,
  ``1 (ableist) - reason``, ``(0) reason`` (but not a quantity: ``1 in 5 people``, ``0 autistic people``);
- a keyed label: ``Label: 0``, ``Classification: 1``, ``**Label:** 1``, ``Answer = 0``, ``the label is 1``;
- JSON, bare, embedded in prose or in a ```json fence: ``{"label": 1, "explanation": "..."}`` (keys and
  values as in :data:`JSON_LABEL_KEYS`, :data:`JSON_EXPLANATION_KEYS`);
- a conclusion after reasoning: ``... so the answer is 0``, ``Final answer: 1``, ``\\boxed{1}``;
- a verbal label: ``I would label this as 1``, ``I'd give it a 0``;
- a label alone at the very end: ``... mocks autistic people. 1``;
- only when no digit label is found: the words ``Ableist`` / ``Not ableist`` (also ``non-ableist``,
  ``anti-autistic``, ``not anti-autistic``) at the start when punctuation, a line end or "toward" follows
  (``Not ableist – neutral``, not ``Ableist language is …``), after a key (``Label: Not ableist``) or after
  a copula (``The sentence is not ableist``, ``It isn't ableist``).

A label digit must be a token of its own: ``10 people``, ``2021``, ``1st``, ``1.5``, ``0-1``, ``1/2`` hold no
label. ``<think>…</think>`` blocks (reasoning models served by Ollama) are set aside before parsing; a
reply that is only an unclosed ``<think>`` block has no answer.

Precedence (first that applies wins)
------------------------------------
1. Empty or ``None`` → unparseable "empty reply" (or "truncated" when ``finish_reason == "length"``: the
   token budget ran out before any text).
2. A JSON object with a valid label.
3. A conclusion (``Final answer``, ``so/thus/therefore the answer is``, ``the answer is``, ``\\boxed{}``):
   the last one is the clear final label, whatever else the reply says.
4. Keyed, verbal, leading and trailing labels together: one value → that label; both values → no label
   ("both labels"). ``Label: 0 or 1`` names the options, not a label. A leading ``1.`` that opens a numbered
   list (a line starting ``2.`` follows) is a list number, not a label. A negated verbal label ("I wouldn't
   label this as 1") is no label.
5. If no digit label was found anywhere in 3–4: the ableist / not-ableist words, same agreement rule.
6. No label:
   ``finish_reason == "length"`` → unparseable "truncated";
   refusal words (:data:`REFUSAL_RE`) → refusal (reason names the phrase);
   ``finish_reason == "content_filter"`` → refusal "content filter";
   conflicting labels in 4–5, or standalone 0 and 1 both present → unparseable "both labels";
   otherwise → unparseable "no label".

So a clear label wins over refusal words ("I'm sorry, but this is ableist. Label: 1" → label 1), and a
reply that only refuses is a refusal even if it names both labels ("I cannot classify this as 0 or 1").

Structured output (an audit option): a constrained server must give ``{"explanation": "...", "label": 0 or 1}``
(:data:`EXPLANATION_FIRST_SCHEMA`, the default) or ``{"label": 0 or 1, "explanation": "..."}`` (:data:`ANSWER_SCHEMA`);
such a reply is read by rule 2. Both keys are required, because
OpenAI's strict mode requires every property it lists. A constrained model writes the fields in the schema's order,
so the order is a choice with an effect: with the label first the model commits before it explains, with the
explanation first it reasons before it labels (:data:`EXPLANATION_FIRST_SCHEMA`; an audit's ``answer_order``
setting, :func:`answer_schema`).

``explanation`` is the reply without the label and its key (JSON: the explanation field; a leading
``Explanation:`` / ``Reason:`` key is dropped), whitespace collapsed; a verbal label ("I would label this
as 1 because …") or a copula sentence ("The sentence is not ableist.") is kept whole. For refusals and
unparseable replies it is the whole reply without ``<think>`` blocks; a reply that is only reasoning
(``<think>`` without an answer after it) is unparseable "no label" with the reasoning as explanation.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

Outcome = Literal["label", "refusal", "unparseable"]

ANSWER_SCHEMA = {
    "type": "object",
    "properties": {"label": {"type": "integer", "enum": [0, 1]}, "explanation": {"type": "string"}},
    "required": ["label", "explanation"],
    "additionalProperties": False,
}
"""The JSON schema of a classification answer with the label first (the order of audits recorded before the
``answer_order`` setting)."""

EXPLANATION_FIRST_SCHEMA = {
    "type": "object",
    "properties": {"explanation": {"type": "string"}, "label": {"type": "integer", "enum": [0, 1]}},
    "required": ["explanation", "label"],
    "additionalProperties": False,
}
"""The same answer with the explanation first: the model reasons before it labels."""

LABEL_FIRST, EXPLANATION_FIRST = "label_first", "explanation_first"
ANSWER_ORDERS = {LABEL_FIRST: ANSWER_SCHEMA, EXPLANATION_FIRST: EXPLANATION_FIRST_SCHEMA}


DEFAULT_ANSWER_ORDER = EXPLANATION_FIRST
ANSWER_ORDER_MEASURED = (
    "explanation first. Measured on SmolLM2-135M-Instruct (Q4_1, llama.cpp, constrained, temperature 0) with seed "
    "000's zero-shot prompt over the 24 demo sentences: with the label first it labelled all 24 as 0; with the "
    "explanation first 22 as 0 and 1 as 1 (1 reply unparseable); agreement with the majority label 0.54 and 0.57, "
    "both near the base rate. A small sample of a small model: measure your own. With the explanation first, give "
    "max_tokens room for it: a reply cut before its label has none.")
"""Why the default is what it is (shown in the setting's help)."""


def answer_schema(answer_order: str) -> dict:
    """The schema of a constrained answer whose fields come in ``answer_order`` (a key of :data:`ANSWER_ORDERS`)."""
    return ANSWER_ORDERS[answer_order]

EXPLANATION_FIELD_RE = re.compile(r'"explanation"\s*:\s*"((?:[^"\\]|\\.)*)', re.S)
REASON_EMPTY = "empty reply"
REASON_TRUNCATED = "truncated"
REASON_NO_LABEL = "no label"
REASON_BOTH_LABELS = "both labels"
REASON_CONTENT_FILTER = "content filter"

# Characters that may wrap a label: whitespace, Markdown emphasis/code, quotes, brackets.
_OPEN = r"[\s*_`\"'“‘\[(]*"
_CLOSE = r"[*_`\"'”’\])]*"
# A label digit that is a token of its own: not part of 10, 2021, 1st, 1.5, 0-1, 1/2, 1:1, 5%.
_DIGIT = r"(?<![\w.,/-])([01])(?![\w%]|[.,/:-]\d)"
# After a label: not "0 or 1", "1/0", "0 to 1", "1, 0" (the options, not a choice).
_NOT_ALTERNATIVE = r"(?!\s*(?:or|and|to|/|,|-|–|—)\s*[01]\b)"
# A gloss after a label, cut with it: "1 (ableist)", "0 [not ableist]".
_GLOSS = r"(?:\s*[(\[](?:not\s+|non-?\s*)?(?:ableist|anti-autistic)[)\]])?"
# After a leading digit: words that make it a quantity ("1 in 5 people", "0 autistic people"), not a label.
_NOT_QUANTITY = (
    r"(?!\s+(?:in|of|out|per|percent|more|less|autistic|person|people|thing|things|time|times|year|years|day"
    r"|days|way|ways|example|examples)\b)"
)
# Keys that introduce a label.
_KEY = r"(?:label|classification|class|answer|output|prediction|rating|verdict|result|score|decision)"
# Between a key and its value: emphasis/quotes, an optional "(0 or 1)", then ":", "=", a dash, "is", "would be".
_KEY_SEPARATOR = (
    r"[\s*_`\"'“”]*(?:\((?:0\s*(?:or|/)\s*1|1\s*(?:or|/)\s*0)\))?[\s*_`\"'“”]*"
    r"(?:[:=]|[-–—]|\bis\b|\b(?:would|should)\s+be\b)?"
)

THINK_BLOCK_RE = re.compile(r"<think>(.*?)</think>", re.S | re.I)
UNCLOSED_THINK_RE = re.compile(r"<think>(.*)\Z", re.S | re.I)
CODE_FENCE_RE = re.compile(r"```[ \t]*(?:json)?[ \t]*\n?(.*?)```", re.S | re.I)
FENCE_MARKER_RE = re.compile(r"```[ \t]*(?:json)?", re.I)
JSON_OBJECT_RE = re.compile(r"\{.*\}", re.S)

FINAL_LABEL_RE = re.compile(
    r"(?:\bfinal\s+(?:answer|label|classification|verdict|decision)\b"
    r"|\b(?:so|thus|therefore|hence)\b[\s,]+(?:the\s+|my\s+)?(?:answer|label|classification)\b"
    r"|\bthe\s+answer\b)" + _KEY_SEPARATOR + _OPEN + _DIGIT + _NOT_ALTERNATIVE + _CLOSE + _GLOSS,
    re.I,
)
BOXED_LABEL_RE = re.compile(r"\\boxed\{\s*([01])\s*\}")
KEYED_LABEL_RE = re.compile(
    r"(?:\b(?:the|my|final)\s+)?\b" + _KEY + r"\b" + _KEY_SEPARATOR + _OPEN + _DIGIT + _NOT_ALTERNATIVE + _CLOSE + _GLOSS,
    re.I,
)
VERBAL_LABEL_RE = re.compile(
    r"\b(?:label(?:l?ed)?|classif(?:y|ied)|rat(?:e|ed)|mark(?:ed)?|assign(?:ed)?|give|gave)\s+"
    r"(?:it|this|that|the\s+(?:target\s+)?(?:sentence|statement|text))\s+"
    r"(?:as\s+|with\s+)?(?:an?\s+)?(?:(?:label|class|score)\s+(?:of\s+)?)?" + _OPEN + _DIGIT + _NOT_ALTERNATIVE + _CLOSE,
    re.I,
)
LEADING_LABEL_RE = re.compile(r"\A" + _OPEN + _DIGIT + _NOT_ALTERNATIVE + _NOT_QUANTITY + _CLOSE + _GLOSS, re.I)
TRAILING_LABEL_RE = re.compile(r"(?:(?<!\d)[.!?:;\n])" + _OPEN + _DIGIT + _CLOSE + r"[.!]?" + _CLOSE + r"\s*\Z")
NUMBERED_LIST_RE = re.compile(r"^[\s*_#]*2[.)]\s", re.M)
STANDALONE_DIGIT_RE = re.compile(_DIGIT)
# Just before a verbal label: "I wouldn't label this as 1" is no label.
NEGATED_VERB_RE = re.compile(r"(?:\bnot|n['’]t|\bcannot|\bnever)\s+(?:\w+\s+)?\Z", re.I)

_WORD = r"(?P<neg>(?:not|non)[\s-]*)?(?:an?\s+)?(?P<word>ableist|anti-autistic)\b"
# A leading word is a label only if punctuation, a line end or "toward(s)" follows: not "Ableist language is …".
LEADING_WORD_RE = re.compile(
    r"\A[\s*_`\"'“‘\[(#]*" + _WORD + _CLOSE + r"(?=[ \t]*(?:\Z|[\n.,;:!?()\[\]|–—-]|towards?\b))", re.I
)
KEYED_WORD_RE = re.compile(
    r"(?:\b(?:the|my|final)\s+)?\b" + _KEY + r"\b[\s*_`\"'“”]*(?:[:=]|[-–—]|\bis\b)[\s*_`\"'“‘\[(]*" + _WORD + _CLOSE, re.I
)
COPULA_WORD_RE = re.compile(
    r"\b(?:sentence|statement|text|it|this|that)\s+(?:is|was)(?P<neg>n['’]t|\s+not)?\s+"
    r"(?:(?:clearly|definitely|likely|probably|considered|inherently|explicitly|overtly)\s+)?"
    r"(?P<word>ableist|anti-autistic)\b",
    re.I,
)

REFUSAL_RE = re.compile(
    "|".join((
        r"\bI\s*(?:can['’]?t|cannot|can\s+not|won['’]t|will\s+not)\s+(?:help|assist|classify|label|comply|provide"
        r"|fulfil|fulfill|do\s+(?:that|this)|engage|participate|complete|answer|determine|make|judge|evaluate"
        r"|rate)\b",
        r"\bI(?:['’]m|\s+am)\s+(?:not\s+able|unable)\s+to\b",
        r"\bI\s+must\s+decline\b",
        r"\bI\s+(?:do\s+not|don['’]t)\s+feel\s+comfortable\b",
        r"\bas\s+an\s+AI\b",
        r"\bI(?:['’]m|\s+am)\s+sorry,?\s+but\b",
        r"\bI\s+apologi[sz]e,?\s+but\b",
    )),
    re.I,
)

EXPLANATION_KEY_RE = re.compile(
    r"^[\s*_#>-]*(?:explanation|reason(?:ing)?|rationale|justification)[\s*_]*[:\-–—][\s*_]*", re.I | re.M
)
EXPLANATION_EDGE_RE = re.compile(r"\A[\s\-–—:.,;|#*_]+|[\s\-–—:,;|#*_]+\Z")

JSON_LABEL_KEYS = ("label", "classification", "class", "answer", "final_answer", "prediction", "output",
                   "result", "verdict", "is_ableist", "ableist")
JSON_BOOLEAN_KEYS = ("is_ableist", "ableist")
JSON_EXPLANATION_KEYS = ("explanation", "reason", "reasoning", "rationale", "justification")
WORD_LABELS = {"ableist": 1, "anti-autistic": 1, "not ableist": 0, "non-ableist": 0, "non ableist": 0,
               "not anti-autistic": 0}
BOOLEAN_WORDS = {"true": 1, "yes": 1, "false": 0, "no": 0}


@dataclass(frozen=True)
class ParsedReply:
    """``outcome`` "label" (``label`` 0/1), "refusal" or "unparseable"; ``reason`` is a short phrase ("" for a label)."""

    outcome: Outcome
    label: int | None
    explanation: str
    reason: str = ""


def parse_reply(text: str | None, finish_reason: str | None = None) -> ParsedReply:
    """Parse one reply; see the module docstring for the shapes and the precedence."""
    truncated = finish_reason == "length"
    if text is None or not text.strip():
        return ParsedReply("unparseable", None, "", REASON_TRUNCATED if truncated else REASON_EMPTY)

    body, reasoning = _set_aside_thinking(text)
    if not body.strip():
        return ParsedReply("unparseable", None, _collapse(reasoning),
                           REASON_TRUNCATED if truncated else (REASON_NO_LABEL if reasoning.strip() else REASON_EMPTY))

    from_json = _json_label(body)
    if from_json is not None:
        label, explanation = from_json
        return ParsedReply("label", label, _collapse(explanation))

    plain = FENCE_MARKER_RE.sub("", body).strip()
    conflict = False

    finals = [match for regex in (FINAL_LABEL_RE, BOXED_LABEL_RE) for match in regex.finditer(plain)]
    if finals:
        match = max(finals, key=lambda match: match.start())
        return ParsedReply("label", int(match.group(1)), _explanation(plain, match, cut=True))

    # (match, whether its span is only the label and can be cut from the explanation)
    candidates = [(match, True) for regex in (KEYED_LABEL_RE, TRAILING_LABEL_RE) for match in regex.finditer(plain)]
    candidates += [(match, False) for match in VERBAL_LABEL_RE.finditer(plain)
                   if not NEGATED_VERB_RE.search(plain, 0, match.start())]
    leading = LEADING_LABEL_RE.search(plain)
    if leading and not (plain[leading.end(1):leading.end(1) + 1] in ".)" and NUMBERED_LIST_RE.search(plain)):
        candidates.append((leading, True))
    if candidates:
        if len({match.group(1) for match, _ in candidates}) == 1:
            match, cut = min(candidates, key=lambda candidate: candidate[0].start())
            explanation = (_broken_json_explanation(plain, truncated) if plain.startswith("{")
                           else _explanation(plain, match, cut=cut))
            return ParsedReply("label", int(match.group(1)), explanation)
        conflict = True
    else:
        words = [(match, True) for regex in (LEADING_WORD_RE, KEYED_WORD_RE) for match in regex.finditer(plain)]
        words += [(match, False) for match in COPULA_WORD_RE.finditer(plain)]
        values = {_word_value(match) for match, _ in words}
        if len(values) == 1:
            match, cut = min(words, key=lambda candidate: candidate[0].start())
            return ParsedReply("label", values.pop(), _explanation(plain, match, cut=cut))
        conflict = len(values) > 1

    explanation = _collapse(plain)
    if truncated:
        return ParsedReply("unparseable", None, explanation, REASON_TRUNCATED)
    refusal = REFUSAL_RE.search(plain)
    if refusal:
        return ParsedReply("refusal", None, explanation, "refusal: " + _collapse(refusal.group(0)))
    if finish_reason == "content_filter":
        return ParsedReply("refusal", None, explanation, REASON_CONTENT_FILTER)
    if conflict or len({match.group(1) for match in STANDALONE_DIGIT_RE.finditer(plain)}) == 2:
        return ParsedReply("unparseable", None, explanation, REASON_BOTH_LABELS)
    return ParsedReply("unparseable", None, explanation, REASON_NO_LABEL)


def _broken_json_explanation(plain: str, truncated: bool) -> str:
    """The explanation of a JSON answer that is not valid JSON (cut at the token limit, say): what its
    ``explanation`` field holds so far, marked when it was cut off; "" without the field. Never the broken JSON
    around it (``{" , "expl``)."""
    field = EXPLANATION_FIELD_RE.search(plain)
    if field is None:
        return ""
    try:
        text = json.loads(f'"{field.group(1)}"')
    except ValueError:
        text = field.group(1)
    text = _collapse(text)
    return f"{text} … (cut off at the token limit)" if truncated and text else text


def _set_aside_thinking(text: str) -> tuple[str, str]:
    """(the reply without reasoning blocks, the reasoning). An unclosed ``<think>`` runs to the end."""
    reasoning = [match.group(1) for match in THINK_BLOCK_RE.finditer(text)]
    body = THINK_BLOCK_RE.sub(" ", text)
    unclosed = UNCLOSED_THINK_RE.search(body)
    if unclosed:
        reasoning.append(unclosed.group(1))
        body = body[:unclosed.start()]
    return body, "\n".join(reasoning)


def _json_label(text: str) -> tuple[int, str] | None:
    """(label, explanation) from the first JSON object with a valid label: fenced, whole reply, or embedded."""
    sources = [match.group(1) for match in CODE_FENCE_RE.finditer(text)] + [text]
    embedded = JSON_OBJECT_RE.search(text)
    if embedded:
        sources.append(embedded.group(0))
    for source in sources:
        try:
            data = json.loads(source.strip())
        except ValueError:
            continue
        if not isinstance(data, dict):
            continue
        fields = {str(key).strip().lower(): value for key, value in data.items()}
        for key in JSON_LABEL_KEYS:
            if key in fields:
                label = _json_value(fields[key], boolean=key in JSON_BOOLEAN_KEYS)
                if label is not None:
                    explanation = next((fields[k] for k in JSON_EXPLANATION_KEYS if isinstance(fields.get(k), str)), "")
                    return label, explanation
    return None


def _json_value(value: Any, *, boolean: bool) -> int | None:
    if isinstance(value, bool):
        return int(value) if boolean else None
    if isinstance(value, int | float) and value in (0, 1):
        return int(value)
    if isinstance(value, str):
        word = " ".join(value.strip().strip(".").lower().split())
        if word in ("0", "1"):
            return int(word)
        if word in WORD_LABELS:
            return WORD_LABELS[word]
        if boolean and word in BOOLEAN_WORDS:
            return BOOLEAN_WORDS[word]
    return None


def _word_value(match: re.Match[str]) -> int:
    return 0 if match.group("neg") else 1


def _explanation(text: str, match: re.Match[str], *, cut: bool) -> str:
    """The reply without the label span (when ``cut``: a key and its label, not a phrase such as "I would
    label this as 1"), without an "Explanation:"-style key, edges and whitespace tidied."""
    rest = text[:match.start()] + "\n" + text[match.end():] if cut else text
    rest = EXPLANATION_KEY_RE.sub("", rest)
    return EXPLANATION_EDGE_RE.sub("", _collapse(rest))


def _collapse(text: str) -> str:
    return " ".join(text.split())
