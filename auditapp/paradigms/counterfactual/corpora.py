"""A counterfactual paradigm's material stored as a corpus (``POST /api/corpora/`` with its paradigm and a spec):
seed 002's tasks and names with our vignettes or SAE/AAVE pairs when the spec is None, else the researcher's
spec (see :mod:`auditapp.paradigms.counterfactual.units`). A spec with problems raises CorpusError naming every
one, and nothing is stored; the same material stored twice is one corpus."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from auditapp.corpus_services import CorpusError, CorpusProblem, corpus_store
from auditapp.models import Corpus
from auditapp.paradigms.counterfactual.problems import MaterialError


def corpus_generate_function(flavour) -> Callable[..., Corpus]:
    def corpus_generate(*, spec: Mapping[str, Any] | None, name: str, created_by=None) -> Corpus:
        try:
            units, provenance = flavour.units_of(None if spec is None else dict(spec), {})
        except MaterialError as error:
            raise CorpusError([CorpusProblem(f"spec: {problem}") for problem in error.problems]) from None
        return corpus_store(paradigm=flavour.name, name=name, units=units, provenance=provenance,
                            created_by=created_by)
    return corpus_generate
