"""An endpoint as the engine uses it: its client configuration, whether it may be asked (its key variable, its
address), the models it offers, and the changes and deletions that would not break an audit using it."""
from __future__ import annotations

import copy
from typing import Any, cast

from django.db import transaction
from django.db.models import Q
from django.db.models.deletion import ProtectedError
from django.utils import timezone

from auditapp import llm_clients, scorer_kinds
from auditapp.endpoint_addresses import check_endpoint_url
from auditapp.endpoint_keys import check_key_variable
from auditapp.models import (
    Audit,
    AuditModel,
    AuditRequest,
    LLMEndpoint,
    endpoint_address_policy,
)
from common.errors import StateConflict

# Audits that will send no more requests: an endpoint change cannot break them.
_DONE = (Audit.Status.COMPLETED, Audit.Status.CANCELLED)


def endpoint_config(endpoint: LLMEndpoint) -> llm_clients.EndpointConfig:
    # The model's choices are the kinds; EndpointConfig refuses any other protocol when it is made.
    return llm_clients.EndpointConfig(
        protocol=cast(llm_clients.Protocol, endpoint.protocol), base_url=endpoint.base_url,
        api_key=endpoint.api_key(),
        max_concurrency=endpoint.max_concurrency, requests_per_minute=endpoint.requests_per_minute,
        attempt_timeout=endpoint.attempt_timeout_s, deadline=endpoint.deadline_s, max_attempts=endpoint.max_attempts,
        structured_output=endpoint.structured_output, request_template=endpoint.request_template, score_path=endpoint.score_path,
        scale=(endpoint.score_min, endpoint.score_max))


def endpoint_check_usable(endpoint: LLMEndpoint) -> None:
    """Raise EndpointRefused when the endpoint may not be asked: its key variable is not one a key may be read from
    (EndpointKeyRefused), or its host now is, or resolves to, a refused address (EndpointAddressRefused; checked
    before every use: a name may point elsewhere than when it was registered). A local scorer has no address."""
    check_key_variable(endpoint.api_key_env)
    if scorer_kinds.scorer_kind(endpoint.protocol).networked:
        check_endpoint_url(endpoint.base_url, endpoint_address_policy())


def endpoint_list_models(endpoint: LLMEndpoint) -> list[llm_clients.ModelInfo]:
    """Ask the endpoint for its models (a local or HTTP JSON scorer knows them without asking) and remember
    the answer on the endpoint. Raises EndpointError, or EndpointRefused (before asking anything) when
    its address is refused."""
    endpoint_check_usable(endpoint)
    models = scorer_kinds.list_models(endpoint_config(endpoint))
    endpoint.listed_models = [{"name": m.name, "digest": m.digest, "details": m.details} for m in models]
    endpoint.listed_at = timezone.now()
    endpoint.save(update_fields=["listed_models", "listed_at"])
    return models


def request_identity(endpoint: LLMEndpoint, model: str) -> dict:
    """What of the endpoint goes into the keys of its requests to ``model`` (:mod:`auditapp.engine.request_keys`):
    compared before a change (:func:`endpoint_change_refusal`), when a preparation commits
    (:mod:`auditapp.engine.preparation`, which records it in the manifest) and before sending again
    (:mod:`auditapp.engine.control`). A model its kind does not have (an endpoint whose kind changed since an old
    audit asked it) has no identity but that."""
    try:
        identity = scorer_kinds.identity(endpoint_config(endpoint), model)
    except (LookupError, ValueError) as error:
        identity = {"unknown": f"{type(error).__name__}: {error}"}
    return {"protocol": endpoint.protocol, "base_url": endpoint.base_url.rstrip("/"), "identity": identity}


def _changed(endpoint: LLMEndpoint, changes: dict[str, Any]) -> LLMEndpoint:
    changed = copy.copy(endpoint)
    for name, value in changes.items():
        setattr(changed, name, value)
    return changed


def _server_changes(endpoint: LLMEndpoint, changed: LLMEndpoint) -> bool:
    """Another kind or base URL: another server, whose models the stored listing does not describe."""
    return (changed.protocol, changed.base_url.rstrip("/")) != (endpoint.protocol, endpoint.base_url.rstrip("/"))


def _keys_change(endpoint: LLMEndpoint, changed: LLMEndpoint) -> bool:
    """Would the endpoint's requests be keyed otherwise after the change: another server, or, for the models its
    audits ask, another identity of its kind (an HTTP JSON scorer's template, score path, scale)."""
    if _server_changes(endpoint, changed):
        return True
    models = set(AuditModel.objects.filter(endpoint=endpoint).values_list("model", flat=True))
    return any(request_identity(changed, model) != request_identity(endpoint, model) for model in models)


def endpoint_change_refusal(*, endpoint: LLMEndpoint, changes: dict[str, Any]) -> str:
    """Why ``changes`` may not be made to the stored ``endpoint`` now ("" when they may): a change of what its
    requests' keys hold (its kind, base URL, or an HTTP JSON scorer's template, score path and scale) while an
    audit has requests to send through it, which were keyed with the present settings and would fail as changed."""
    if not _keys_change(endpoint, _changed(endpoint, changes)):
        return ""
    # One filter(): the pending request is the one sent through this endpoint.
    sending = list(Audit.objects.filter(
        requests__audit_model__endpoint=endpoint, requests__state=AuditRequest.State.PENDING)
        .exclude(status__in=_DONE).distinct().order_by("id").values_list("name", flat=True)[:5])
    if not sending:
        return ""
    return (f"endpoint {endpoint}: its kind, base URL and scoring settings are in the keys of the requests that "
            f"audit(s) {', '.join(repr(name) for name in sending)} still have to send, which would fail as changed; "
            "let them finish or cancel them first, or register the new settings as a new endpoint")


@transaction.atomic
def endpoint_update(*, endpoint: LLMEndpoint, changes: dict[str, Any]) -> LLMEndpoint:
    """Apply validated ``changes``, unless :func:`endpoint_change_refusal` refuses them (StateConflict). After a
    change of its kind or base URL, the stored model listing, which described the old server, is dropped (or listed
    again, for a kind that knows its models without asking)."""
    endpoint = LLMEndpoint.objects.select_for_update().get(pk=endpoint.pk)
    refusal = endpoint_change_refusal(endpoint=endpoint, changes=changes)
    if refusal:
        raise StateConflict(refusal)
    changed = _changed(endpoint, changes)
    if _server_changes(endpoint, changed):
        changed.listed_models, changed.listed_at = [], None
    changed.save()
    if not changed.listed_models and scorer_kinds.scorer_kind(changed.protocol).models_known:
        endpoint_list_models(changed)
    return changed


def endpoint_delete(*, endpoint: LLMEndpoint) -> None:
    """Delete an endpoint no audit names; one that an audit or an extraction names is refused (their records
    say which endpoint answered)."""
    try:
        with transaction.atomic():
            endpoint.delete()
    except ProtectedError:
        n = Audit.objects.filter(Q(models__endpoint=endpoint) | Q(extractions__endpoint=endpoint)).distinct().count()
        raise StateConflict(f"endpoint {endpoint} is named by {n} audit(s), whose records say which endpoint "
                            "answered: it cannot be deleted") from None
