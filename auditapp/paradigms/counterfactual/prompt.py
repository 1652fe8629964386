"""The prompt of a counterfactual request: one user message asking one binary task about a numbered batch of texts
(seed 002, SI Appendix Experiment 1 "Experimental procedure"). Pure: no Django.

The default template has three parts:

1. the paper's instruction, quoted exactly, with "[Task description.]" replaced by the task's description
   (:data:`PAPER_INSTRUCTION`);
2. **ours**: how to answer, in JSON Lines, one ``{"i": <number>, "y": 0 or 1}`` per text and nothing else
   (:data:`OUR_ANSWER_INSTRUCTION`). The paper says its models "returned binary responses (0/1) in JSON Lines
   format" but does not print the words that asked for it;
3. the texts, one per line as ``Text {index}: {text}`` (a newline inside a text becomes a space, so each text is
   one line and its number begins the line).

With structured output (keyed answers, ``replies.ANSWER_FORM_KEYED``) the default's second part is
:data:`OUR_KEYED_ANSWER_INSTRUCTION` instead (:data:`DEFAULT_KEYED_TEMPLATE`): the prompt asks for the object the
server enforces, not for lines it cannot produce.

A researcher may give their own template with the placeholders ``{description}`` and ``{texts}``, each exactly
once; ``{texts}`` must begin a line. A :class:`BatchPrompt`'s ``version`` is the sha256 of its template, so an
edited prompt is a new identity and never shares cached replies with the old one.
"""
from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from auditapp.paradigms.counterfactual.plan import PlannedText

DESCRIPTION = "{description}"
TEXTS = "{texts}"
MAX_TEMPLATE_CHARS = 20_000

PAPER_INSTRUCTION = ("Based on the following text, is the following true of the person? {description} "
                     "If more likely than not (≥51%), output 1; otherwise output 0.")
"""Seed 002, SI Appendix Experiment 1 "Experimental procedure", verbatim; ``{description}`` stands for the paper's
"[Task description.]"."""

OUR_ANSWER_INSTRUCTION = ('Answer in JSON Lines: one line {"i": <number>, "y": 0 or 1} per text, where <number> is '
                          "the text's number, and nothing else.")
"""Ours (the paper does not print its format instruction)."""

OUR_KEYED_ANSWER_INSTRUCTION = ('Answer with one JSON object {"answers": {"<number>": 0 or 1, ...}}: one entry per '
                                "text, keyed by the text's number, and nothing else.")
"""Ours: the answer instruction of a constrained audit, naming the object its server enforces."""

DEFAULT_TEMPLATE = f"{PAPER_INSTRUCTION}\n\n{OUR_ANSWER_INSTRUCTION}\n\n{TEXTS}"
DEFAULT_KEYED_TEMPLATE = f"{PAPER_INSTRUCTION}\n\n{OUR_KEYED_ANSWER_INSTRUCTION}\n\n{TEXTS}"
_ANSWER_INSTRUCTIONS = {DEFAULT_TEMPLATE: OUR_ANSWER_INSTRUCTION, DEFAULT_KEYED_TEMPLATE: OUR_KEYED_ANSWER_INSTRUCTION}


def template_for(template: str, *, keyed: bool) -> str:
    """The template sent: the default asks for keyed answers when the replies are constrained to them (the
    researcher's own template is sent as written)."""
    return DEFAULT_KEYED_TEMPLATE if keyed and template == DEFAULT_TEMPLATE else template

_PLACEHOLDER = re.compile(re.escape(DESCRIPTION) + "|" + re.escape(TEXTS))
_LINE_BREAK = re.compile(r"\r\n|[\r\n\u2028\u2029\x0b\x0c\x1c\x1d\x1e\x85]")


@dataclass(frozen=True)
class BatchPrompt:
    """A versioned template asking one task about a numbered batch of texts."""

    template: str = DEFAULT_TEMPLATE

    @property
    def version(self) -> str:
        return hashlib.sha256(self.template.encode()).hexdigest()[:16]

    @property
    def is_default(self) -> bool:
        return self.template in _ANSWER_INSTRUCTIONS

    def problems(self) -> list[str]:
        """Every problem of the template; empty when it can be used."""
        problems = []
        if len(self.template) > MAX_TEMPLATE_CHARS:
            problems.append(f"the template has {len(self.template)} characters; at most {MAX_TEMPLATE_CHARS}")
        for placeholder in (DESCRIPTION, TEXTS):
            count = self.template.count(placeholder)
            if count != 1:
                problems.append(f"the template needs {placeholder} exactly once, has it {count} times")
        if self.template.count(TEXTS) == 1 and not re.search(r"(?:^|\n)" + re.escape(TEXTS), self.template):
            problems.append(f"{TEXTS} must begin a line (the texts are listed one per line, each line beginning "
                            f"'Text <number>:')")
        return problems

    def content(self, task_description: str, texts: Sequence[PlannedText]) -> str:
        """The message: the template with the description and the numbered texts in their places (in one pass, so
        a placeholder inside a description or a text is left as it is)."""
        listed = "\n".join(f"Text {text.index}: {_LINE_BREAK.sub(' ', text.text)}" for text in texts)
        filled = {DESCRIPTION: task_description.strip(), TEXTS: listed}
        return _PLACEHOLDER.sub(lambda match: filled[match.group()], self.template)

    def messages(self, task_description: str, texts: Sequence[PlannedText]) -> list[dict[str, str]]:
        """One user message (no system prompt)."""
        return [{"role": "user", "content": self.content(task_description, texts)}]

    def manifest(self) -> dict:
        """What the audit's manifest records of the prompt, with which words are the paper's and which ours."""
        return {
            "version": self.version,
            "template": self.template,
            "source": "paper and ours" if self.is_default else "researcher",
            "paper_instruction": PAPER_INSTRUCTION,
            "paper_instruction_source": "seed 002, SI Appendix Experiment 1 'Experimental procedure'",
            "answer_instruction": _ANSWER_INSTRUCTIONS.get(self.template, OUR_ANSWER_INSTRUCTION),
            "answer_instruction_source": "ours",
            "text_line": "Text {index}: {text}",
        }
