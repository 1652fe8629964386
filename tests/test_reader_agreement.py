"""The answer readers' agreement with a person's reading of real model replies (tests/data/real_replies/), and the
table docs/audits/index.md prints of it: recomputed here, so a change to a reader that changes a figure fails until
the docs say so."""
from __future__ import annotations

import re
from pathlib import Path

from tests.reader_cases import CASES, agreements, case_rows

DOCS = Path(__file__).resolve().parents[1] / "docs" / "audits" / "index.md"
TABLE = re.compile(r"<!-- reader-agreement -->\n(.*?)<!-- /reader-agreement -->", re.S)


def test_the_docs_table_is_the_readers_agreement_over_the_case_tables():
    rows = [row for path in sorted(CASES.glob("*.csv")) for row in case_rows(path)]
    assert len(rows) >= 120
    computed = ["| reader | readings | agree with the person | wrong labels |", "|---|---|---|---|"] + [
        f"| {a.reader} | {a.n} | {a.agreed} ({100 * a.share:.1f}%) | {a.wrong_labels} |" for a in agreements(rows)]
    printed = TABLE.search(DOCS.read_text(encoding="utf-8")).group(1).strip().splitlines()
    assert printed == computed


def test_the_classification_and_names_readers_never_give_a_label_the_person_does_not_read():
    rows = [row for path in sorted(CASES.glob("*.csv")) for row in case_rows(path)]
    wrong = {a.reader: a.wrong_labels for a in agreements(rows)}
    assert wrong["Classification, strict parser"] == wrong["Classification, rules extraction"] == 0
    assert wrong["Names batch (per text)"] == 0
