"""Endpoint addresses (no requests to cloud metadata): link-local and cloud metadata addresses are refused, private ones
only when the settings say so; at registration, model listing, audit preparation and every audit connection."""
from __future__ import annotations

import asyncio
import ipaddress
import random
import socket

import pytest

from auditapp.endpoint_addresses import AddressPolicy, EndpointAddressRefused, check_endpoint_url
from auditapp.engine import launch
from auditapp.engine import preparation as engine_preparation
from auditapp.llm_clients import EndpointConfig, chat_session, send_chat
from auditapp.llm_limits import LocalLimiter
from auditapp.models import Audit, LLMEndpoint
from auditapp.paradigms.classification import services as classification_services
from tests.factories import make_audit_study
from tests.integration.support import free_port
from tests.llm_server import LLMServer

REFUSED_BY_DEFAULT = [
    "http://169.254.169.254/latest/meta-data/",
    "http://169.254.170.2/v2/credentials",
    "http://[fe80::1]:8000",
    "http://100.100.100.200/latest/meta-data/",
    "http://[fd00:ec2::254]/",
    "http://[::ffff:169.254.169.254]/",
    "http://metadata.google.internal/computeMetadata/v1/",
    "http://METADATA.google.internal./",
]
PRIVATE = ["http://127.0.0.1:8000", "http://localhost:11434", "http://10.1.2.3:8000", "http://192.168.0.5",
           "http://[::1]:8000", "http://0.0.0.0:8000"]


def resolver(table: dict[str, list[str]]):
    def resolve(host: str, port: int):
        if host not in table:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [ipaddress.ip_address(address) for address in table[host]]
    return resolve


NAMES = resolver({"localhost": ["127.0.0.1", "::1"], "api.example.org": ["93.184.215.14"],
                  "sneaky.example.org": ["93.184.215.14", "169.254.169.254"]})


@pytest.mark.parametrize("url", REFUSED_BY_DEFAULT)
def test_link_local_and_metadata_addresses_are_refused_even_when_private_ones_are_allowed(url):
    with pytest.raises(EndpointAddressRefused):
        check_endpoint_url(url, AddressPolicy(allow_private=True), resolve=NAMES)


@pytest.mark.parametrize("url", PRIVATE)
def test_private_addresses_are_allowed_by_default_and_refused_when_asked(url):
    check_endpoint_url(url, AddressPolicy(), resolve=NAMES)
    with pytest.raises(EndpointAddressRefused, match="private"):
        check_endpoint_url(url, AddressPolicy(allow_private=False), resolve=NAMES)


def test_every_address_a_name_resolves_to_is_checked():
    check_endpoint_url("https://api.example.org/v1", AddressPolicy(allow_private=False), resolve=NAMES)
    with pytest.raises(EndpointAddressRefused, match=r"sneaky\.example\.org resolves to 169\.254\.169\.254"):
        check_endpoint_url("https://sneaky.example.org/v1", AddressPolicy(), resolve=NAMES)


def test_link_local_can_be_allowed_but_metadata_never():
    policy = AddressPolicy(allow_link_local=True)
    check_endpoint_url("http://169.254.10.10:8000", policy, resolve=NAMES)
    with pytest.raises(EndpointAddressRefused, match="metadata"):
        check_endpoint_url("http://169.254.169.254/", policy, resolve=NAMES)


def test_a_name_that_does_not_resolve_is_let_through_to_fail_at_connection():
    check_endpoint_url("http://not-yet-up.internal:8000", AddressPolicy(), resolve=NAMES)


@pytest.fixture
def fake_dns(monkeypatch):
    """Host names ending in .metadata-alias.test resolve to 169.254.169.254; every other name as usual."""
    real = socket.getaddrinfo

    def getaddrinfo(host, port, *args, **kwargs):
        if isinstance(host, str) and host.endswith(".metadata-alias.test"):
            return real("169.254.169.254", port, *args, **kwargs)
        return real(host, port, *args, **kwargs)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


@pytest.mark.django_db
@pytest.mark.parametrize("url", ["http://169.254.169.254/", "http://metadata.google.internal/",
                                 "http://x.metadata-alias.test:8000"])
def test_registering_an_endpoint_on_a_refused_address_is_a_400_naming_base_url(api_client, fake_dns, url):
    response = api_client.post("/api/endpoints/", {"name": "meta", "base_url": url}, format="json")
    assert response.status_code == 400
    assert "refused" in response.json()["base_url"][0]
    assert not LLMEndpoint.objects.exists()


@pytest.mark.django_db
def test_the_admin_refuses_a_refused_address(client, researcher):
    client.force_login(researcher[0])
    response = client.post("/admin/auditapp/llmendpoint/add/", {
        "name": "meta", "protocol": "openai", "base_url": "http://169.254.169.254/", "api_key_env": "",
        "max_concurrency": 8, "requests_per_minute": "", "attempt_timeout_s": 120, "deadline_s": 600,
        "max_attempts": 5})
    assert response.status_code == 200 and "this address is refused" in response.content.decode()
    assert not LLMEndpoint.objects.exists()


@pytest.mark.django_db
def test_private_addresses_are_registered_by_default_and_refused_by_the_setting(api_client, settings):
    assert api_client.post("/api/endpoints/", {"name": "a", "base_url": "http://127.0.0.1:8000"},
                           format="json").status_code == 201
    settings.LLM_ENDPOINTS_ALLOW_PRIVATE = False
    response = api_client.post("/api/endpoints/", {"name": "b", "base_url": "http://127.0.0.1:8000"}, format="json")
    assert response.status_code == 400 and "private" in response.json()["base_url"][0]


@pytest.fixture(scope="module")
def server():
    with LLMServer(models=("model-a",)) as running:
        yield running


@pytest.mark.django_db
@pytest.mark.integration
def test_listing_models_refuses_an_address_refused_since_registration(api_client, settings, server):
    endpoint = LLMEndpoint.objects.create(name="local", base_url=server.base_url)
    assert api_client.get(f"/api/endpoints/{endpoint.id}/models/").status_code == 200
    settings.LLM_ENDPOINTS_ALLOW_PRIVATE = False
    response = api_client.get(f"/api/endpoints/{endpoint.id}/models/")
    assert response.status_code == 400
    assert "is not asked" in response.json()["detail"] and "private" in response.json()["detail"]


@pytest.mark.django_db
@pytest.mark.integration
def test_an_audit_on_a_refused_address_fails_at_preparation_with_the_reason(settings, server, monkeypatch):
    monkeypatch.setattr("tasks.audits.audit_work_task.delay", lambda audit_id: None)
    study = make_audit_study(3)
    endpoint = LLMEndpoint.objects.create(name="local", base_url=server.base_url)
    audit = classification_services.audit_create(study=study, name="a", models=[launch.ModelChoice(endpoint, "model-a")],
                                  conditions=["zs"])
    settings.LLM_ENDPOINTS_ALLOW_PRIVATE = False
    engine_preparation.audit_prepare(audit_id=audit.id)
    audit.refresh_from_db()
    assert audit.status == Audit.Status.FAILED
    assert "is not asked" in audit.status_reason and "private" in audit.status_reason


def test_an_audit_connection_to_a_name_resolving_to_metadata_fails_at_once_without_retry(fake_dns):
    port = free_port()
    config = EndpointConfig(protocol="openai", base_url=f"http://llm.metadata-alias.test:{port}", max_attempts=5,
                            attempt_timeout=5, deadline=10)

    async def send():
        async with chat_session(4, address_policy=AddressPolicy()) as session:
            return await send_chat(session, config, LocalLimiter(4), "m", [{"role": "user", "content": "hi"}], {},
                                   rng=random.Random(0))

    result = asyncio.run(send())
    assert result.completion is None and result.attempts == 1
    assert result.error.startswith("address refused: llm.metadata-alias.test resolves to 169.254.169.254")
