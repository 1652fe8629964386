"""Whether a BITS corpus's figures can be set beside the paper's Table 7 (seed 001 §4), and why. Pure: no Django.

The authors computed Table 7 on the corpus of their public repository (github.com/PranavNV/BITS), not on the
cross-product the paper prints in Tables 3–5: the repository's disability facet has 1,560 perturbed sentences
(the printed tables give 2,200), other emotion words in places, and other terms for the no-disability group
(Ordinary, Presentable, Tall, Stout, Muscular; Table 4 prints Good, New, Great, Big, High). So a corpus generated
from the printed tables measures the same design with other sentences: the sign and the marks of an effect can be
compared with Table 7, its values not (the demo audit's VADER ScoreSense for PWD:C is −0.315 against Table 7's
−0.25, NRM +0.18 against 0.04). An upload of the repository's two files as they are is the paper's corpus: its
figures are comparable, with the pairs the pairing rules found (:mod:`.pairing`). The two files are known by
their SHA-256 (:data:`PUBLIC_DISABILITY_FACET`, commit 762bc00); a file re-saved by a spreadsheet has another
hash and is then an upload like any other. This module is ours: the paper states no comparability rule.
"""
from __future__ import annotations

from dataclasses import dataclass

PUBLIC_COMMIT = "762bc00"
PUBLIC_DISABILITY_FACET = {
    "perturbed": "13c886cf99c3afabf9ebd2d6647f93dc4ed09ca3db94b1ff459fe604717788d8",
    "control": "637b1c7f894fa887c6b6b60a553ef0cc9f7a42cf0f33758ddc519100a8b3e1d1",
}
"""SHA-256 of the repository's ``Disablility_Facet_Results.csv`` and ``Standard_Corpus.csv`` at :data:`PUBLIC_COMMIT`."""


@dataclass(frozen=True)
class Comparability:
    """``comparable``: True (the paper's own corpus), False (known to differ from it) or None (cannot be told);
    ``source``: which corpus it follows; ``statement``: what may be compared with Table 7, and why."""

    comparable: bool | None
    source: str
    statement: str

    def as_dict(self) -> dict:
        return {"comparable": self.comparable, "source": self.source, "statement": self.statement}


def comparability(provenance: dict) -> Comparability:
    """The comparability of a corpus with Table 7, from its provenance (as stored on the corpus)."""
    if provenance.get("generator") == "bits":
        if provenance.get("paper_tables"):
            return Comparability(False, "seed 001's printed Tables 3–5, every combination (ours)",
                                 "Not comparable with Table 7's values: the authors computed Table 7 on their public "
                                 "repository's corpus, whose sentences, emotion words and no-disability terms differ "
                                 "from the printed tables (e.g. Ordinary, Presentable, Tall, Stout, Muscular for "
                                 "Good, New, Great, Big, High). Compare the sign and the marks of an effect, not its "
                                 "size; to reproduce Table 7, upload the repository's files.")
        return Comparability(False, "your own spec of templates, words and terms",
                             "A design of your own: comparable with seed 001 in method, not with Table 7's values.")
    if provenance.get("generator") == "posts":
        return Comparability(False, "your own texts, perturbed as seed 001 §3.1 describes (Table 6's design)",
                             "Comparable with seed 001 in method, not with its tables' values: the authors' Reddit "
                             "posts and tweets are not public, and Table 7 was computed on the BITS templates. "
                             "Table 6 below is this design's table.")
    files = provenance.get("files") or {}
    if provenance.get("generator") == "upload" and files:
        hashes = {side: (files.get(side) or {}).get("sha256") for side in PUBLIC_DISABILITY_FACET}
        if hashes == PUBLIC_DISABILITY_FACET:
            return Comparability(True, f"the public BITS repository's disability facet (commit {PUBLIC_COMMIT}), "
                                       "as its authors published it",
                                 "Comparable with Table 7: the corpus the authors computed it on. The pairs are "
                                 "those the pairing rules found; sentences without a control are left out and "
                                 "counted.")
        return Comparability(None, "an uploaded corpus",
                             "Comparable with Table 7 only if it holds the authors' sentences and controls: these "
                             "files are not the public repository's disability facet as published (other SHA-256), "
                             "so this cannot be told here.")
    return Comparability(None, "a corpus of another origin", "Its comparability with Table 7 cannot be told here.")
