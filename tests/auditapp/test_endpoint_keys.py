"""An endpoint's API key is read only from a variable named LLM_KEY_*: no researcher can have the server send one
of its own settings (SECRET_KEY, DATABASE_URL, …) to a URL they chose, nor learn whether a variable exists."""
from __future__ import annotations

import socket
import threading

import pytest

from auditapp.endpoint_keys import key_variable_problem, read_key
from auditapp.engine import endpoints as engine_endpoints
from auditapp.engine import launch, preparation
from auditapp.models import Audit, AuditRequest, LLMEndpoint
from auditapp.paradigms.classification import services as classification_services
from tests.factories import make_audit_study

pytestmark = pytest.mark.django_db

SERVER_SETTINGS = ("SECRET_KEY", "DATABASE_URL", "UNLISTED_VARIABLE", "llm_key_lower", "LLM_KEY_", "LLM_KEY_A-B",
                   "LLM_KEY_X\nSECRET_KEY")


class Listener:
    """A TCP server on 127.0.0.1 that keeps every byte any client sends it (and answers nothing)."""

    def __init__(self):
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.socket.settimeout(0.2)
        self.received = bytearray()
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.socket.getsockname()[1]}"

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self.socket.accept()
            except TimeoutError:
                continue
            self.connections += 1
            connection.settimeout(0.5)
            try:
                while chunk := connection.recv(65536):
                    self.received += chunk
            except TimeoutError:
                pass
            connection.close()

    def __enter__(self) -> Listener:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.socket.close()


@pytest.fixture
def listener():
    with Listener() as running:
        yield running


@pytest.fixture
def server_secrets(monkeypatch):
    secrets = {name: f"value-of-{index}-never-sent" for index, name in enumerate(SERVER_SETTINGS)
               if "\n" not in name and name.isascii()}
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    return secrets


@pytest.mark.parametrize("name", SERVER_SETTINGS)
def test_registering_an_endpoint_that_names_a_server_setting_is_refused(api_client, listener, server_secrets, name):
    response = api_client.post("/api/endpoints/", {"name": "mine", "base_url": listener.url, "api_key_env": name},
                               format="json")
    assert response.status_code == 400
    assert "LLM_KEY_" in response.json()["api_key_env"][0]
    assert not LLMEndpoint.objects.exists()
    assert listener.connections == 0


def test_the_admin_refuses_a_server_setting_as_the_key_variable(client, researcher, listener, server_secrets):
    client.force_login(researcher[0])
    form = {"name": "mine", "protocol": "openai", "base_url": listener.url, "api_key_env": "SECRET_KEY",
            "max_concurrency": 4, "attempt_timeout_s": 60, "deadline_s": 300, "max_attempts": 3,
            "requests_per_minute": "", "score_min": -1, "score_max": 1}
    response = client.post("/admin/auditapp/llmendpoint/add/", form)
    assert response.status_code == 200 and "LLM_KEY_" in response.content.decode()
    assert not LLMEndpoint.objects.exists()
    form["api_key_env"] = "LLM_KEY_OPENAI"
    assert client.post("/admin/auditapp/llmendpoint/add/", form).status_code == 302


def test_a_key_in_an_llm_key_variable_is_sent_and_never_shown(api_client, monkeypatch):
    monkeypatch.setenv("LLM_KEY_HOSTED", "sk-secret")
    response = api_client.post("/api/endpoints/", {"name": "hosted", "base_url": "https://example.org",
                                                   "api_key_env": "LLM_KEY_HOSTED"}, format="json")
    assert response.status_code == 201, response.json()
    endpoint = LLMEndpoint.objects.get()
    assert endpoint.api_key() == "sk-secret"
    assert engine_endpoints.endpoint_config(endpoint).api_key == "sk-secret"
    listed = api_client.get("/api/endpoints/").json()["results"]
    assert listed[0]["api_key_set"] is True and "sk-secret" not in str(listed)
    monkeypatch.delenv("LLM_KEY_HOSTED")
    assert api_client.get("/api/endpoints/").json()["results"][0]["api_key_set"] is False


def test_an_endpoint_stored_before_names_were_restricted_is_never_asked(api_client, client, researcher, listener,
                                                                       server_secrets):
    """A row written before the rule (or by a script bypassing validation) names SECRET_KEY: the server neither
    reads it, nor says whether it is set, nor sends anything to the endpoint."""
    endpoint = LLMEndpoint.objects.create(name="old", base_url=listener.url, api_key_env="SECRET_KEY")
    assert endpoint.api_key() is None
    assert engine_endpoints.endpoint_config(endpoint).api_key is None

    listed = api_client.get("/api/endpoints/").json()["results"]
    assert listed[0]["api_key_set"] is False
    response = api_client.get(f"/api/endpoints/{endpoint.id}/models/")
    assert response.status_code == 400
    assert "key variable SECRET_KEY is refused" in response.json()["detail"]

    client.force_login(researcher[0])
    page = client.get("/admin/auditapp/llmendpoint/").content.decode()
    assert "REFUSED" in page and server_secrets["SECRET_KEY"] not in page

    study = make_audit_study(4, n_examples=2)
    audit = classification_services.audit_create(study=study, name="old key", conditions=["zs"],
                                                 models=[launch.ModelChoice(endpoint=endpoint, model="m")])
    preparation.audit_prepare(audit_id=audit.id)
    audit.refresh_from_db()
    assert audit.status == Audit.Status.FAILED
    assert "key variable SECRET_KEY is refused" in audit.status_reason
    assert not AuditRequest.objects.filter(audit=audit).exists()
    assert listener.connections == 0 and not listener.received


def test_the_rule_reads_only_llm_key_names():
    environment = {"SECRET_KEY": "s", "LLM_KEY_OPENAI": "k"}
    assert read_key("SECRET_KEY", environment) is None
    assert read_key("LLM_KEY_OPENAI", environment) == "k"
    assert read_key("LLM_KEY_MISSING", environment) is None
    assert read_key("", environment) is None
    assert key_variable_problem("") == "" and key_variable_problem("LLM_KEY_OPENAI_2") == ""
    for name in SERVER_SETTINGS:
        assert key_variable_problem(name), name
