"""A small finished classification round for the coders' tests, built through the ORM: an audit of two models ×
two conditions whose parsed requests are snapshotted into ``n_excerpts`` excerpts, one lens with a codebook of
named codes and shortcuts, and coders on it (standing in for the round and codebook services of the coding
app's other tests)."""
from __future__ import annotations

import hashlib
import itertools

from django.utils import timezone

from annotation.models import Item
from auditapp.models import Audit, AuditModel, AuditRequest, LLMEndpoint
from coding.models import Code, Codebook, Coder, CodingRound, Excerpt, RoundLens
from tests.factories import make_study

_counter = itertools.count(1)

# (name, shortcut): the keys a coder types in the browser test.
CODES = (("WORDING", "w"), ("STEREOTYPES", "s"), ("TONE", "t"), ("INTENT", "i"), ("FOCUS", "f"))


def make_codebook(name: str = "Thematic content and error type", codes=CODES) -> Codebook:
    codebook = Codebook.objects.create(name=name, description=f"What {name.lower()} looks at.")
    for position, (code_name, shortcut) in enumerate(codes):
        Code.objects.create(codebook=codebook, name=code_name, shortcut=shortcut, position=position,
                            definition=f"The explanation turns on {code_name.lower()}.",
                            examples=[f"an example of {code_name.lower()}"], definition_is_ours=True)
    return codebook


def make_round(n_excerpts: int = 12, *, codebook: Codebook | None = None, **fields) -> CodingRound:
    """A round of ``n_excerpts`` excerpts (positions 0..n-1) over a finished audit, with one lens."""
    n = next(_counter)
    study = make_study()
    endpoint = LLMEndpoint.objects.create(name=f"coding endpoint {n}", base_url="http://127.0.0.1:9")
    audit = Audit.objects.create(name=f"Coded audit {n}", study=study, status=Audit.Status.COMPLETED,
                                 finished_at=timezone.now())
    models = [AuditModel.objects.create(audit=audit, endpoint=endpoint, model=name, position=k)
              for k, name in enumerate(("model-a", "model-b"))]
    round_ = CodingRound.objects.create(audit=audit, name=fields.pop("name", f"Round {n}"),
                                        sample_size=n_excerpts, **fields)
    for position in range(n_excerpts):
        item = Item.objects.create(study=study, external_id=f"c{position:03d}", position=position,
                                   target=f"Target sentence {position}.", preceding=f"Before {position}.",
                                   following=f"After {position}.")
        model = models[position % 2]
        condition = ("zero_shot", "cot")[(position // 2) % 2]
        request = AuditRequest.objects.create(
            audit=audit, audit_model=model, condition=condition, item=item, order=position,
            key=hashlib.sha256(f"coding:{n}:{position}".encode()).hexdigest(), state=AuditRequest.State.ANSWERED, outcome=AuditRequest.Outcome.LABEL,
            label=position % 2, explanation=f"Explanation {position}: the words decide.")
        Excerpt.objects.create(round=round_, request=request, position=position, model_name=model.model,
                               condition=condition, target=item.target, preceding=item.preceding,
                               following=item.following, label=request.label, explanation=request.explanation,
                               reference_label=1 - request.label, majority_label=request.label)
    RoundLens.objects.create(round=round_, codebook=codebook or make_codebook(), position=0)
    return round_


def add_coder(round_: CodingRound, name: str, *, user=None, lens: RoundLens | None = None) -> Coder:
    return Coder.objects.create(round=round_, lens=lens or round_.lenses.first(), name=name, user=user)


def code_ids(round_: CodingRound, *names: str) -> list[int]:
    codes = {code.name: code.id for code in Code.objects.filter(codebook=round_.lenses.first().codebook)}
    return [codes[name] for name in names]
