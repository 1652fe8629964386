r"""Prompt templates for the ableism classification audit: the seven conditions of seed 000 (§3.4, Appendix A.4).

Pure Python. Each condition is a :class:`PromptTemplate` whose ``text`` is the paper's prompt with the
placeholders ``{preceding_sentence}``, ``{target_sentence}``, ``{following_sentence}`` and, for the ICL
conditions, ``{examples}`` (the paper's ``[EXAMPLES INSERTED HERE]``). :func:`render` fills them.

Conditions (in the order of the paper's tables)::

    zs           Condition 1, Appendix A.4.1 "Prompt A1: Definition-Based (Zero-Shot)"
    cot          Condition 2, Appendix A.4.2 "Prompt A2: Chain-of-Thought (CoT)"
    icl_a        Condition 3, Appendix A.4.3 "Prompt A3: In-Context Learning (ICL)", File A
    icl_b        Condition 3, Appendix A.4.3, File B
    persona_sic  Condition 4, §3.4 only (no appendix text; see "Persona-SIC" below)
    persona_ifl  Condition 4, Appendix A.4.4 "A4a — Identity-Centered, Identity-First Language (IFL)"
    persona_pfl  Condition 4, Appendix A.4.4 "A4b — Identity-Centered, Person-First Language (PFL)"

Transcription
-------------
The seed text is a PDF extraction of a two-column page: most rows of Appendix A.4 hold a left-column
line and a right-column line separated by tabs, framed by the left line number (992–1036) and the right
line number (1037–1082), e.g. ``1005\t({preceding_sentence}, etc.) were filled at\texplain your
reasoning.\t1049``. Reading order is the left column 992–1036, then the right column 1037–1082 (which
continues the CoT prompt begun at the bottom of the left column), then 1083–1118 (A.4.4, single column).

- Words split by a line-break hyphen are joined: rea-/soning, dis-/abled, re-/claimed, other-/wise,
  dis-/cussed, in-/direct, correspond-/ing, differ-/ent, struc-/ture, lan-/guage ("reclaimed" and
  "indirect" are confirmed by the §3.4 summary of Condition 2).
- The authors' typographic quotes and apostrophes (“ ” ’) are kept. PDF bold/italic markup
  (``<b>target</b>``, ``*preceding*``) and Markdown escapes (``{preceding\_sentence}``) are dropped.
- Line layout is ours (the PDF does not preserve it): paragraphs are separated by a blank line, the
  "Instructions:" heading is followed by its numbered steps, and "Sentences:" by the three sentence lines.
- Each appendix prompt ends its label paragraph with an instruction to save outputs to a spreadsheet
  ("Save the sentences and your corresponding reasoning and labels in a file titled …"). That is not
  part of a chat request: it is removed from ``text`` and quoted verbatim in the template's ``note``.

Ambiguous spots (best reading kept; raw lines quoted)
----------------------------------------------------
1. Line-break hyphen kept in a true compound. Raw (left column 1019–1020)::

       1019  which assumes people with Asperger’s or “low-
       1020  functioning autism” are intellectually superior

   Read as "“low-functioning autism”": the hyphen belongs to the compound, so it is not joined away.
2. ICL File labels. Raw (right column 1069, 1074)::

       1069  <i>For File A:</i> Assign a label of 0 to sentences that
       1074  <i>For File B:</i> Assign a label of 0 to sentences that

   Read as editorial (italic, like the note at 1058–1061) marking which paragraph belongs to which
   example set, so "For File A:" / "For File B:" are not in the prompt. With the file-saving sentence
   removed, the ICL-A and ICL-B texts are identical (so are their hashes), as the paper states: "The base
   prompt structure was identical but examples were inserted at the placeholder shown below." The two
   conditions differ only in the example set passed to :func:`render`.
3. ICL label paragraph says "sentences", not "target sentences" as in A1/A2. Raw (1069–1070)::

       1069  <i>For File A:</i> Assign a label of 0 to sentences that
       1070  are not anti-autistic and 1 to those that are. Briefly

   Kept verbatim ("sentences").
4. Persona-SIC has no appendix text. Appendix A.4.4 gives only A4a (IFL) and A4b (PFL); §3.4 quotes SIC
   only as "“*You are an autistic person asked to identify any ableism...*”" and calls it "identity-centered,
   no language marker". Raw (A.4.4)::

       1084 *Sub-conditions A4a and A4b vary the identity lan-*
       1085 *guage framing of the persona prompt while holding*
       1086 *the classification task constant.*

   Best reading: SIC is the persona prompt that A4a/A4b vary, i.e. A4a with its identity-language marker
   removed from the label paragraph ("not ableist toward autistic people" → "not ableist"). Its opening is
   verbatim (§3.4 and A4a agree); the label paragraph is DERIVED, not transcribed.
5. §3.4 quotes for IFL/PFL differ from the appendix. §3.4: "“*...identify any ableism toward autistic
   people...*”" and "“*...identify any ableism toward people with autism...*”"; the appendix (1089–1095,
   1105–1111) puts the marker in the persona ("You are a person with autism") and in the label paragraph
   ("not ableist toward autistic people" / "not ableist toward people with autism"). The appendix is kept.
6. §3.4's "base prompt structure" (:data:`BASE_PROMPT_STRUCTURE`: "Classify the sentence with 1 if it is
   ableist . . . or 0 if it is not, and explain your decision in under five words.") is elided and worded
   differently from every appendix prompt ("Assign a label of 0 to … and 1 to those that are. Briefly
   explain your reasoning."). It is kept for reference only; no template uses it.
7. CoT heading and body are split across columns and rows: the heading and first paragraph are left column
   1031–1036 (rows 1031–1036), the steps are right column 1037–1045 but sit on rows 992–1000, above the
   heading in the raw file; right 1046 (row 1001) is empty (paragraph break). Read in column order.

ICL examples
------------
The paper does not show how examples were laid out ("[EXAMPLES INSERTED HERE]"). :func:`format_examples`
uses a plain layout that mirrors the prompt's own "Sentences:" block, numbered, one blank line apart::

    Example 1:
    Preceding sentence: …
    Target sentence: …
    Following sentence: …
    Label: 1
"""
from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

PRECEDING = "{preceding_sentence}"
TARGET = "{target_sentence}"
FOLLOWING = "{following_sentence}"
EXAMPLES = "{examples}"
SENTENCE_PLACEHOLDERS = (PRECEDING, TARGET, FOLLOWING)
PLACEHOLDERS = (*SENTENCE_PLACEHOLDERS, EXAMPLES)


CONDITIONS: tuple[str, ...] = ("zs", "cot", "icl_a", "icl_b", "persona_sic", "persona_ifl", "persona_pfl")

# §3.4 Experimental Setup, verbatim (the ". . ." elision is the paper's). Reference only: the appendix
# prompts below are the source of truth for what was sent.
BASE_PROMPT_STRUCTURE = (
    "Classify the sentence with 1 if it is ableist . . . or 0 if it is not, and explain your decision in "
    "under five words."
)

_SAVE_NOTE = "Removed from the paper's text (a file-saving instruction, not part of a chat request): "

_TASK = (
    "Your task is to detect anti-autistic ableism in the target sentence. Use the preceding and following "
    "sentences that are optionally provided for more context."
)
_SENTENCES = (
    "Sentences:\n"
    "Preceding sentence: {preceding_sentence}\n"
    "Target sentence: {target_sentence}\n"
    "Following sentence: {following_sentence}"
)
_LABEL_TARGET = (
    "Assign a label of 0 to target sentences that are not anti-autistic and 1 to those that are. Briefly "
    "explain your reasoning."
)
_LABEL_ICL = (
    "Assign a label of 0 to sentences that are not anti-autistic and 1 to those that are. Briefly explain "
    "your reasoning."
)

_ZS_TEXT = "\n\n".join((
    _TASK,
    "Instructions:\n"
    "1. View autism as a valid difference in neurotype.\n"
    "2. Avoid viewing autism as a tragedy, disease, or deficit to be cured.\n"
    "3. Be aware of biases from within the disabled community (e.g., “Aspie supremacy”, which assumes "
    "people with Asperger’s or “low-functioning autism” are intellectually superior to other autistic "
    "people).",
    _LABEL_TARGET,
    _SENTENCES,
))

_COT_TEXT = "\n\n".join((
    _TASK,
    "Instructions:\n"
    "1. Determine the speaker’s identity (Insider vs. Outsider) and tone. Look for sarcasm or “reclaimed” "
    "terms (e.g., “Aspie”) that might otherwise be mislabeled.\n"
    "2. Check for keywords (e.g., “retard”) and analyze whether they are used to attack or merely "
    "discussed in a meta-context.\n"
    "3. Assess whether the sentence causes direct or indirect harm, violence, or dehumanization to the "
    "target group, regardless of the speaker’s intent.",
    _LABEL_TARGET,
    _SENTENCES,
))

_ICL_TEXT = "\n\n".join((
    _TASK,
    "Here are some examples of sentences and their desired labels:\n{examples}",
    _LABEL_ICL,
    _SENTENCES,
))

_PERSONA_OPENING_AUTISTIC = (
    "You are an autistic person asked to identify any ableism in the target sentences provided. Refer to the "
    "preceding and following sentences for context if needed."
)
_PERSONA_OPENING_WITH_AUTISM = (
    "You are a person with autism asked to identify any ableism in the target sentences provided. Refer to "
    "the preceding and following sentences for context if needed."
)


def _persona_text(opening: str, label_paragraph: str) -> str:
    return "\n\n".join((opening, label_paragraph, _SENTENCES))


_SIC_TEXT = _persona_text(
    _PERSONA_OPENING_AUTISTIC,
    "Assign a label of 0 to sentences that are not ableist and 1 to those that are. Briefly explain your "
    "reasoning.",
)
_IFL_TEXT = _persona_text(
    _PERSONA_OPENING_AUTISTIC,
    "Assign a label of 0 to sentences that are not ableist toward autistic people and 1 to those that are. "
    "Briefly explain your reasoning.",
)
_PFL_TEXT = _persona_text(
    _PERSONA_OPENING_WITH_AUTISM,
    "Assign a label of 0 to sentences that are not ableist toward people with autism and 1 to those that "
    "are. Briefly explain your reasoning.",
)


@dataclass(frozen=True)
class PromptTemplate:
    """One prompting condition: the prompt ``text`` with placeholders, where it comes from, and what was changed."""

    code: str
    name: str
    text: str
    note: str
    source: str

    @property
    def content_hash(self) -> str:
        """sha256 (hex) of ``text`` encoded as UTF-8: identifies the exact wording sent."""
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    @property
    def placeholders(self) -> tuple[str, ...]:
        """The placeholders that occur in ``text``, in :data:`PLACEHOLDERS` order."""
        return tuple(placeholder for placeholder in PLACEHOLDERS if placeholder in self.text)

    @property
    def needs_examples(self) -> bool:
        return EXAMPLES in self.text


DEFAULT_TEMPLATES: dict[str, PromptTemplate] = {
    template.code: template
    for template in (
        PromptTemplate(
            code="zs",
            name="Zero-Shot Definition-Based (ZS)",
            text=_ZS_TEXT,
            note=_SAVE_NOTE + "“Save the sentences and your corresponding reasoning and labels in a file titled "
            "no_eg.xlsx.”",
            source="seed 000 Appendix A.4.1 (Prompt A1: Definition-Based (Zero-Shot)), Condition 1 (ZS)",
        ),
        PromptTemplate(
            code="cot",
            name="Chain-of-Thought (CoT)",
            text=_COT_TEXT,
            note=_SAVE_NOTE + "“Save the sentences and your corresponding reasoning and labels in a file titled "
            "[model]-cot.xlsx.”",
            source="seed 000 Appendix A.4.2 (Prompt A2: Chain-of-Thought (CoT)), Condition 2 (CoT)",
        ),
        PromptTemplate(
            code="icl_a",
            name="In-Context Learning, example set A (ICL-A)",
            text=_ICL_TEXT,
            note=_SAVE_NOTE + "“Save the sentences and your corresponding reasoning and labels in a file titled "
            "[model]-A.xlsx.” Also dropped: the editorial label “For File A:” before the label paragraph. "
            "Text identical to ICL-B; the conditions differ only in the examples (annotators with AQ ≥ 32).",
            source="seed 000 Appendix A.4.3 (Prompt A3: In-Context Learning (ICL), File A), Condition 3 (ICL-A)",
        ),
        PromptTemplate(
            code="icl_b",
            name="In-Context Learning, example set B (ICL-B)",
            text=_ICL_TEXT,
            note=_SAVE_NOTE + "“Save the sentences and your corresponding reasoning and labels in a file titled "
            "[model]-B.xlsx.” Also dropped: the editorial label “For File B:” before the label paragraph. "
            "Text identical to ICL-A; the conditions differ only in the examples (annotators with AQ < 26).",
            source="seed 000 Appendix A.4.3 (Prompt A3: In-Context Learning (ICL), File B), Condition 3 (ICL-B)",
        ),
        PromptTemplate(
            code="persona_sic",
            name="Persona, identity-centered, no language marker (Persona-SIC)",
            text=_SIC_TEXT,
            note="Not given in Appendix A.4: §3.4 quotes only its opening (“You are an autistic person asked to "
            "identify any ableism...”). Derived from A4a (IFL) by removing the identity-language marker "
            "“toward autistic people” from the label paragraph; the opening is A4a's, verbatim. No file-saving "
            "sentence to remove (A4a's was “Save the sentences and your corresponding reasoning and labels in "
            "a file titled [model]-SIFL.xlsx.”).",
            source="seed 000 §3.4, Condition 4 (Persona-SIC); text derived from Appendix A.4.4 A4a",
        ),
        PromptTemplate(
            code="persona_ifl",
            name="Persona, identity-first language (Persona-IFL)",
            text=_IFL_TEXT,
            note=_SAVE_NOTE + "“Save the sentences and your corresponding reasoning and labels in a file titled "
            "[model]-SIFL.xlsx.”",
            source="seed 000 Appendix A.4.4 (A4a — Identity-Centered, Identity-First Language (IFL)), "
            "Condition 4 (Persona-IFL)",
        ),
        PromptTemplate(
            code="persona_pfl",
            name="Persona, person-first language (Persona-PFL)",
            text=_PFL_TEXT,
            note=_SAVE_NOTE + "“Save the sentences and your corresponding reasoning and labels in a file titled "
            "[model]-SPFL.xlsx.”",
            source="seed 000 Appendix A.4.4 (A4b — Identity-Centered, Person-First Language (PFL)), "
            "Condition 4 (Persona-PFL)",
        ),
    )
}


def format_examples(examples: Sequence[tuple[str, str, str, int | None]]) -> str:
    """Lay out labelled ICL examples ``(preceding, target, following, label)`` for ``{examples}``.

    The paper shows no layout, so this one mirrors the prompt's "Sentences:" block (see the module
    docstring): "Example n:", the three sentence lines, "Label: 0|1", examples one blank line apart.
    Sentences are inserted as given. An empty sequence gives "".
    """
    blocks = []
    for number, example in enumerate(examples, start=1):
        preceding, target, following, label = example
        if isinstance(label, bool) or label not in (0, 1):
            raise ValueError(f"example {number}: label must be 0 or 1, not {label!r}")
        blocks.append(
            f"Example {number}:\n"
            f"Preceding sentence: {preceding or ''}\n"
            f"Target sentence: {target}\n"
            f"Following sentence: {following or ''}\n"
            f"Label: {label}"
        )
    return "\n\n".join(blocks)


def render(
    template: PromptTemplate,
    *,
    preceding: str | None,
    target: str,
    following: str | None,
    examples: str = "",
) -> str:
    """The prompt for one target sentence: each exact placeholder replaced by its value.

    No ``str.format``: nothing is escaped or interpreted, so braces in sentences are safe. Each exact
    placeholder is replaced as by ``str.replace``, but only in the template's own text: a value is never
    scanned again, so a sentence that itself contains "{target_sentence}" is inserted as written.
    Missing context (``""`` or ``None``) renders as an empty string. ``examples`` (see
    :func:`format_examples`) is required by the ICL templates and refused by the others.
    """
    if template.needs_examples and not examples:
        raise ValueError(f"template {template.code!r} needs examples")
    if examples and not template.needs_examples:
        raise ValueError(f"template {template.code!r} takes no examples")
    values = ((PRECEDING, preceding or ""), (TARGET, target), (FOLLOWING, following or ""), (EXAMPLES, examples))
    return _replace_exact(template.text, values)


def _replace_exact(text: str, values: Sequence[tuple[str, str]]) -> str:
    """``str.replace`` of each placeholder, except that inserted values are never scanned again: the
    template is split on the placeholders first and the values are joined in afterwards."""
    inserted = [value for _, value in values]
    return "".join(inserted[part] if isinstance(part, int) else part
                   for part in _template_parts(text, tuple(placeholder for placeholder, _ in values)))


@functools.lru_cache(maxsize=1024)
def _template_parts(text: str, placeholders: tuple[str, ...], first: int = 0) -> tuple[str | int, ...]:
    """The template as its literal pieces and the indexes of the placeholders between them: split on the first
    placeholder, each piece then on the next, and so on. An audit renders the same few templates for every one of
    its requests, so the split is made once per template (it was a twentieth of a worker's CPU)."""
    if not placeholders:
        return (text,) if text else ()
    parts: list[str | int] = []
    for number, piece in enumerate(text.split(placeholders[0])):
        if number:
            parts.append(first)
        parts.extend(_template_parts(piece, placeholders[1:], first + 1))
    return tuple(parts)
