"""Team A's world for the walks over the API: one of everything, each name marked ``ALPHA`` so a response that
shows any of it to another team is caught by its text."""
from __future__ import annotations

from annotation.services import items_import_file
from auditapp.corpus_services import corpus_store
from auditapp.engine.protocol import Unit
from auditapp.models import Audit, AuditRequest, LLMEndpoint
from coding import round_services
from psychometrics.models import AnnotatorImport
from teams.scoping import new_objects_in
from tests.coding.round_support import make_codebook, make_completed_audit
from tests.factories import autalic_like_csv, make_study

MARK = "ALPHA"


def build_world_of_a(two_teams) -> dict:
    """A study with items, participants and labels (and an annotator import), another study with an item import, an
    audit of the first with its requests, its endpoint, a corpus, a codebook and a coding round with a coder: all
    team A's. Needs the ``queued`` fixture (the item import's task is not run)."""
    alice = two_teams["alice"][0]
    with new_objects_in(two_teams["a"]):
        audit = make_completed_audit(12)
        study = audit.study
        import_study = make_study(name=f"{MARK} import study")
        item_import = items_import_file(study=import_study, filename="f.csv", content=autalic_like_csv(3))
        codebook = make_codebook(f"{MARK} codebook")
        corpus = corpus_store(paradigm="bits", name=f"{MARK} corpus", provenance={"generator": "test"},
                              units=[Unit(key=f"u{k}", text=f"Sentence {k}.", factors={"group": "g"})
                                     for k in range(3)])
    study.name = f"{MARK} study"
    study.save()
    Audit.objects.filter(pk=audit.pk).update(name=f"{MARK} audit")
    endpoint = audit.models.first().endpoint
    LLMEndpoint.objects.filter(pk=endpoint.pk).update(name=f"{MARK} endpoint")
    annotator_import = AnnotatorImport.objects.create(study=study, kind="scores", filename="a.csv", file_format="csv",
                                                      content=b"", sha256="0" * 64)
    coding_round = round_services.round_create(audit=audit, codebooks=[codebook.id], name=f"{MARK} round",
                                               sample_size=5, seed=1, created_by=alice)
    coder = round_services.coder_add(coding_round=coding_round, lens_id=coding_round.lenses.get().id,
                                     name="Outside coder")
    for obj in (study, import_study, audit, corpus, codebook, coding_round):
        obj.refresh_from_db()
        assert obj.team_id == two_teams["a"].id, obj
    return {"study": study, "import": item_import, "annotator_import": annotator_import, "audit": audit,
            "request": AuditRequest.objects.filter(audit=audit).first(), "corpus": corpus, "endpoint": endpoint,
            "codebook": codebook, "round": coding_round, "coder": coder}
