"""The one place that says, for every registered paradigm, how the conformance suite launches it:

- ``body(world)``: its minimal valid ``POST /api/audits/`` body (only what has no default);
- ``bad`` and ``bad_fields``: values that make the body invalid, and the fields the 400 must name;
- ``form_names``: where the admin launch form names a setting of the body otherwise than the API and than the
  paradigm's declared settings do (a dotted path into the body, such as ``analysis.alpha``, to the form field): the
  settings whose two fields are shaped differently, such as a free analysis object in the API and one of its keys in
  the form;
- ``run(world)``: what is added to the minimal body so that an audit of it runs to completion in a test, in
  seconds, against the test LLM server (``tests/llm_server.py``, whose model names pick its personas) and the
  local scorers.

A paradigm registered without an entry here makes every conformance test of it fail (:func:`minimal_launch`).
"""
from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

CHAT_MODELS = ("model-a", "persona-key", "scorer-a", "annotator-fair", "wabt-neutral", "aat-stereotyped")
"""The test LLM server's models the launches below ask (each answers its paradigm's prompts)."""


@dataclass(frozen=True)
class World:
    """The stored things a launch body refers to, by id."""

    chat_endpoint: int
    """An OpenAI-compatible endpoint (the test LLM server when an audit runs; never asked otherwise)."""
    local_endpoint: int
    """Local scorers (vader, textblob)."""
    study: int
    """A classification study with a ground truth and the ICL example sets icl_a and icl_b."""
    instrument: int
    """The shipped AQ-50."""
    bits_corpus: int | None = None
    """A small BITS corpus (four of seed 001's templates, one word per emotion), when an audit runs."""


@dataclass(frozen=True)
class MinimalLaunch:
    body: Callable[[World], dict]
    bad: Mapping[str, object]
    bad_fields: frozenset[str]
    run: Callable[[World], dict] = lambda world: {}
    form_names: Mapping[str, str] = field(default_factory=dict)


def chat(world: World, model: str) -> dict:
    return {"endpoint": world.chat_endpoint, "model": model}


def local(world: World, model: str) -> dict:
    return {"endpoint": world.local_endpoint, "model": model}


MINIMAL_LAUNCHES: dict[str, MinimalLaunch] = {
    "classification": MinimalLaunch(
        body=lambda world: {"study": world.study, "models": [chat(world, "model-a")]},
        bad={"conditions": ["astrology"], "n_resamples": 1},
        bad_fields=frozenset({"conditions", "n_resamples"}),
        run=lambda world: {"conditions": ["zs", "icl_a"], "n_resamples": 100},
    ),
    "self_report": MinimalLaunch(
        body=lambda world: {"instruments": [world.instrument], "models": [chat(world, "persona-key")]},
        bad={"mode": "sideways", "validity": {"max_refusal_share": 2}},
        bad_fields=frozenset({"mode", "validity"}),
    ),
    "bits": MinimalLaunch(
        body=lambda world: {"models": [local(world, "vader")]},
        bad={"batch_size": 0, "score_kinds": {"vader": "joy"}},
        bad_fields=frozenset({"batch_size", "score_kinds"}),
        run=lambda world: {"corpus": world.bits_corpus,
                           "models": [local(world, "vader"), chat(world, "scorer-a")]},
        form_names={"prompt.name": "prompt", "analysis.t_test": "t_test"},
    ),
    "names": MinimalLaunch(
        body=lambda world: {"models": [chat(world, "annotator-fair")]},
        bad={"iterations": 0, "pairs_per_iteration": "many"},
        bad_fields=frozenset({"iterations", "pairs_per_iteration"}),
        run=lambda world: {"material": {"tasks": ["self_disciplined"]}, "iterations": 2},
        form_names={"analysis.alpha": "alpha"},
    ),
    "dialect": MinimalLaunch(
        body=lambda world: {"models": [chat(world, "annotator-fair")]},
        bad={"batch_size": 0, "material": "all of it"},
        bad_fields=frozenset({"batch_size", "material"}),
        run=lambda world: {"material": {"tasks": ["toxic"]}, "iterations": 2},
        form_names={"analysis.alpha": "alpha"},
    ),
    "word_association": MinimalLaunch(
        body=lambda world: {"models": [chat(world, "wabt-neutral")]},
        bad={"word_order": "backwards", "samples_per_combination": 0},
        bad_fields=frozenset({"word_order", "samples_per_combination"}),
        run=lambda world: {"samples_per_combination": 1},
    ),
    "affective_attribution": MinimalLaunch(
        body=lambda world: {"models": [chat(world, "aat-stereotyped")]},
        bad={"form": "three_turn", "combinations": -1},
        bad_fields=frozenset({"form", "combinations"}),
        run=lambda world: {"combinations": 4},
    ),
}


def minimal_launch(name: str) -> MinimalLaunch:
    """The paradigm's entry; a registered paradigm without one fails loudly."""
    assert name in MINIMAL_LAUNCHES, (
        f"paradigm {name!r} is registered without a minimal launch: add it to MINIMAL_LAUNCHES in "
        "tests/conformance/minimal_launches.py")
    return MINIMAL_LAUNCHES[name]


def minimal_body(name: str, world: World) -> dict:
    return {"paradigm": name, "name": f"conformance {name}", **minimal_launch(name).body(world)}


def run_body(name: str, world: World) -> dict:
    return {**minimal_body(name, world), **minimal_launch(name).run(world)}


_PAPER = Path(__file__).resolve().parents[2] / "auditapp" / "paradigms" / "bits" / "seed001_tables.json"


def small_bits_spec() -> dict:
    """Four of seed 001's templates with one emotional and one event word per emotion, every group."""
    paper = json.loads(_PAPER.read_text())
    return {"templates": [t for t in paper["templates"] if t["id"] in ("T1", "T2", "T4", "T6")],
            "emotions": [{**e, "emotional_words": e["emotional_words"][:1], "event_words": e["event_words"][:1]}
                         for e in paper["emotions"]],
            "groups": paper["groups"], "source": "tests: four of the paper's templates, one word per emotion"}
