"""A paradigm's own launch settings, each declared once (:class:`Setting`).

Beside what every launch shares (name, models, replicates, seed, cache, error budget…), a paradigm takes settings
of its own: the pairs per iteration of a names audit, the batch size of a BITS audit, the conditions of a
classification audit. Each is declared once, in words and numbers (this module imports no Django), and the two
places that take it are derived from that one declaration: its field in the body of ``POST /api/audits/``
(:func:`auditapp.api.launch.setting_field`) and its field in the admin's launch form
(:func:`auditapp.launch_forms.setting_form_field`). Both therefore state the same bounds, choices, default and help;
the conformance suite (``tests/conformance``) checks that every registered paradigm's two fields read a value alike.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Kind = Literal["integer", "number", "text", "boolean", "choice", "choices", "mapping"]
KINDS: tuple[Kind, ...] = ("integer", "number", "text", "boolean", "choice", "choices", "mapping")
BOUNDED: tuple[Kind, ...] = ("integer", "number")
CHOOSING: tuple[Kind, ...] = ("choice", "choices", "mapping")


@dataclass(frozen=True)
class Setting:
    """One launch setting of a paradigm.

    - ``name``: its key in the API body, and the admin form field's name unless ``form_name`` says otherwise (a
      setting the API nests in an object is flat in the form, e.g. ``validity_action`` for ``validity.action``);
    - ``kind``: ``integer``; ``number`` (a float); ``text``; ``boolean``; ``choice`` (one of ``choices``);
      ``choices`` (a list of them, ``default`` a tuple); ``mapping`` (an object of names to one of ``choices``,
      such as a scorer's kind by scorer name; ``default`` a dict);
    - ``default``: what a launch takes when the API body leaves the setting out or the admin form leaves a choice
      blank. None makes it optional (the API takes null for it, the form a blank); "" makes a text optional;
    - ``help``: one text, the API schema's description and the form's help;
    - ``minimum``, ``maximum``: inclusive bounds of an integer or a number (None: unbounded);
    - ``max_length``: the longest text;
    - ``choices``: (value, label) pairs: the API takes the values, the admin shows the labels. An optional choice
      lists (None, what leaving it unset means), which the form shows as its blank choice.

    A declaration that contradicts itself (a default outside its bounds or choices, bounds on a text) raises
    ValueError naming every problem when it is made, so it fails at import rather than in one of the two fields.
    """

    name: str
    kind: Kind
    default: Any
    help: str
    minimum: int | float | None = None
    maximum: int | float | None = None
    max_length: int | None = None
    choices: tuple[tuple[str | None, str], ...] = ()
    form_name: str = ""

    def __post_init__(self) -> None:
        problems = self.problems()
        if problems:
            raise ValueError(f"setting {self.name!r}: " + "; ".join(problems))

    @property
    def values(self) -> tuple[str | None, ...]:
        """The values of its choices."""
        return tuple(value for value, _ in self.choices)

    @property
    def in_form(self) -> str:
        """The name of its admin form field."""
        return self.form_name or self.name

    def problems(self) -> list[str]:
        problems = []
        if not self.name.isidentifier() or (self.form_name and not self.form_name.isidentifier()):
            problems.append("its name and form name must be identifiers (the form's field names)")
        if self.kind not in KINDS:
            return [*problems, f"unknown kind {self.kind!r}; one of {', '.join(KINDS)}"]
        if not self.help.strip():
            problems.append("it needs a help text: the API schema and the admin form both show it")
        if self.kind not in BOUNDED and (self.minimum is not None or self.maximum is not None):
            problems.append(f"a {self.kind} has no minimum or maximum")
        if self.kind != "text" and self.max_length is not None:
            problems.append(f"a {self.kind} has no max_length")
        if (self.kind in CHOOSING) != bool(self.choices):
            problems.append(f"a {self.kind} {'needs' if self.kind in CHOOSING else 'has no'} choices")
        return problems or self._default_problems()

    def _default_problems(self) -> list[str]:
        default = self.default
        if self.kind in BOUNDED and default is not None:
            if isinstance(default, bool) or not isinstance(default, int if self.kind == "integer" else (int, float)):
                return [f"its default {default!r} is not a{'n integer' if self.kind == 'integer' else ' number'}"]
            if (self.minimum is not None and default < self.minimum) or (
                    self.maximum is not None and default > self.maximum):
                return [f"its default {default} is outside {self.minimum}–{self.maximum}"]
        if self.kind == "text" and default is not None and (
                not isinstance(default, str) or (self.max_length is not None and len(default) > self.max_length)):
            return [f"its default {default!r} is not a text of at most {self.max_length} characters"]
        if self.kind == "boolean" and not isinstance(default, bool):
            return [f"its default {default!r} is not true or false"]
        if self.kind == "choice" and default not in self.values:
            return [f"its default {default!r} is not one of its choices (an optional choice lists None)"]
        if self.kind == "choices" and (not isinstance(default, tuple) or not set(default) <= set(self.values)):
            return [f"its default {default!r} is not a tuple of its choices"]
        if self.kind == "mapping" and (not isinstance(default, dict) or not set(default.values()) <= set(self.values)):
            return [f"its default {default!r} is not an object of names to its choices"]
        return []
