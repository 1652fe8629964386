"""What the round tests share: a completed classification audit whose replies are written through the ORM, and
codebooks made directly (the codebook services are tested on their own)."""
from __future__ import annotations

from auditapp.engine import launch
from auditapp.models import Audit, AuditItem, AuditRequest, LLMEndpoint
from auditapp.paradigms.classification import services as classification_services
from coding.models import Code, Codebook
from tests.factories import make_audit_study

CONDITIONS = ("zs", "cot", "persona_ifl")


def model_answer(model_position: int, item_index: int) -> int:
    """Model 0 answers 1 for every third item (the study's majority rule); model 1 answers 1 for every item."""
    return 1 if model_position == 1 or item_index % 3 == 0 else 0


def weighted_truth(item_index: int) -> int:
    """tests.factories.make_audit_study's weighted label: the majority rule, flipped on every 17th item."""
    return int((item_index % 3 == 0) != (item_index % 17 == 0))


def make_completed_audit(n_items: int = 30, *, status: str = Audit.Status.COMPLETED) -> Audit:
    """A classification audit of two models × CONDITIONS over ``n_items`` items, every reply recorded: labels by
    :func:`model_answer` with an explanation, except that item 1's replies are refusals and item 2's labels carry
    no explanation (neither is an explained reply)."""
    study = make_audit_study(n_items, n_examples=4)
    endpoint = LLMEndpoint.objects.create(name="recorded", protocol="openai", base_url="http://127.0.0.1:9/v1")
    audit = classification_services.audit_create(
        study=study, name="recorded audit", conditions=list(CONDITIONS), n_resamples=100,
        models=[launch.ModelChoice(endpoint=endpoint, model="model-a", label="Model A"),
                launch.ModelChoice(endpoint=endpoint, model="model-b")])
    items = {item.item_id: int(item.item.external_id[1:])
             for item in AuditItem.objects.filter(audit=audit).select_related("item")}
    requests = []
    for position, audit_model in enumerate(audit.models.order_by("position")):
        for condition in CONDITIONS:
            for item_id, index in items.items():
                label = model_answer(position, index)
                outcome = AuditRequest.Outcome.REFUSAL if index == 1 else AuditRequest.Outcome.LABEL
                requests.append(AuditRequest(
                    audit=audit, audit_model=audit_model, condition=condition, item_id=item_id,
                    order=len(requests), key=f"k{len(requests)}", state=AuditRequest.State.ANSWERED,
                    outcome=outcome, label=None if outcome == AuditRequest.Outcome.REFUSAL else label,
                    explanation="" if index == 2 else f"{audit_model.model} on item {index}: {label}"))
    AuditRequest.objects.bulk_create(requests)
    Audit.objects.filter(pk=audit.pk).update(status=status, n_requests=len(requests))
    return Audit.objects.get(pk=audit.pk)


def make_codebook(name: str, codes: tuple[str, ...] = ("WORDING", "STEREOTYPES", "TONE")) -> Codebook:
    codebook = Codebook.objects.create(name=name)
    Code.objects.bulk_create([Code(codebook=codebook, name=code, position=k) for k, code in enumerate(codes)])
    return codebook
