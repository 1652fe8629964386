"""The material of a counterfactual audit (seed 002), as plain records. Pure: no Django.

- A :class:`Task` is one binary annotation task: its slug (the paper's name in Supplementary Table 3's spelling,
  ``self_disciplined``), the name the paper lists ("self-disciplined"), its domain (SI Appendix "Annotation
  tasks"), the description put in the prompt in place of "[Task description.]" and, for the dialect paradigm,
  which texts it is asked about (``introduction`` or ``message``).
- A :class:`PersonName` is one name of Table 2 (or a researcher's list) with its group and gender.
- A :class:`Vignette` is a biographical text with ``{NAME}`` once ("Hi, I'm {NAME}. …", SI Appendix "vignette
  structure").
- A :class:`DialectPair` is one matched SAE/AAVE pair with identical propositional content; the AAVE side carries
  the features it applies inline (``[HB]``, ``[CD]``, …; SI Appendix "Text construction").

``source`` says where an entry comes from: ``paper`` (printed in seed 002), ``ours`` (written for this app
because the paper does not print it) or ``researcher`` (uploaded or typed by the audit's researcher).
"""
from __future__ import annotations

from dataclasses import dataclass

NAME_PLACEHOLDER = "{NAME}"
SOURCES = ("paper", "ours", "researcher")
TEXT_SETS = ("introduction", "message")
DIALECTS = ("SAE", "AAVE")


@dataclass(frozen=True)
class Task:
    slug: str
    name: str
    domain: str
    description: str
    text_set: str = "introduction"
    source: str = "ours"


@dataclass(frozen=True)
class PersonName:
    name: str
    group: str
    gender: str
    source: str = "paper"


@dataclass(frozen=True)
class Vignette:
    key: str
    template: str
    source: str = "ours"

    def text(self, name: str) -> str:
        return self.template.replace(NAME_PLACEHOLDER, name)


@dataclass(frozen=True)
class DialectPair:
    key: str
    text_set: str
    sae: str
    aave_annotated: str
    source: str = "ours"
