"""Whether a BITS corpus's figures can be set beside seed 001's Table 7 (auditapp.paradigms.bits.comparability),
from the provenance each way of making a corpus stores, and as the dashboard says it."""
from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from auditapp.paradigms.bits.comparability import PUBLIC_DISABILITY_FACET, comparability
from auditapp.paradigms.bits.corpora import bits_corpus_generate
from tests.auditapp.bits_upload_files import CONTROL_HEADER, CONTROL_ROWS, PERTURBED_HEADER, PERTURBED_ROWS, csv_bytes
from tests.auditapp.test_bits_dashboard_page import render, toy_analysis, toy_audit
from tests.auditapp.test_self_report_dashboard_view import page_text


def upload_provenance(perturbed_sha: str, control_sha: str) -> dict:
    return {"generator": "upload", "files": {"perturbed": {"file": "p.csv", "sha256": perturbed_sha},
                                             "control": {"file": "c.csv", "sha256": control_sha}}}


def test_each_origin_says_what_may_be_compared():
    printed = comparability({"generator": "bits", "paper_tables": True})
    assert printed.comparable is False and "printed Tables 3–5" in printed.source
    assert "Ordinary, Presentable, Tall, Stout, Muscular" in printed.statement
    assert comparability({"generator": "bits", "spec_hash": "ab"}).comparable is False
    public = comparability(upload_provenance(PUBLIC_DISABILITY_FACET["perturbed"], PUBLIC_DISABILITY_FACET["control"]))
    assert public.comparable is True and "762bc00" in public.source
    # One file re-saved (another hash): no longer known to be the authors' corpus.
    assert comparability(upload_provenance(PUBLIC_DISABILITY_FACET["perturbed"], "0" * 64)).comparable is None
    assert comparability({"generator": "tests"}).comparable is None


@pytest.mark.django_db
def test_the_dashboard_states_it_above_table_7():
    audit = toy_audit(status="completed", analysis=toy_analysis())
    page = page_text(render(audit))
    assert page.text("comparability").startswith("Comparability with the paper's Table 7 unknown.")
    printed = bits_corpus_generate(spec=None, name="printed tables", created_by=None)
    audit.corpus = printed
    audit.save(update_fields=["corpus"])
    page = page_text(render(audit))
    assert page.text("comparability").startswith("Not comparable with the paper's Table 7's values.")


@pytest.mark.django_db
def test_an_upload_of_other_files_cannot_be_told_comparable(api_client):
    response = api_client.post("/api/corpora/upload/", {
        "perturbed_file": SimpleUploadedFile("perturbed.csv", csv_bytes(PERTURBED_HEADER, PERTURBED_ROWS)),
        "control_file": SimpleUploadedFile("controls.csv", csv_bytes(CONTROL_HEADER, CONTROL_ROWS)),
        "name": "ours"}, format="multipart")
    assert response.status_code == 201, response.content
    assert comparability(response.json()["provenance"]).comparable is None
