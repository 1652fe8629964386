"""An endpoint as the engine uses it: its client configuration, whether it may be asked (its key variable, its
address), and the models it offers."""
from __future__ import annotations

from typing import cast

from django.utils import timezone

from auditapp import llm_clients, scorer_kinds
from auditapp.endpoint_addresses import check_endpoint_url
from auditapp.endpoint_keys import check_key_variable
from auditapp.models import (
    LLMEndpoint,
    endpoint_address_policy,
)


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
