"""Scorer kinds: HTTP JSON scorers sent to a real scoring server on 127.0.0.1 with injected faults, local
scorers run in the worker (their outputs equal the libraries'), model listing, identities in request keys, and
the per-kind validation of an endpoint's settings."""
from __future__ import annotations

import asyncio
import json
import random
import time
from dataclasses import replace

import pytest
from textblob import TextBlob
from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

from auditapp import scorer_kinds
from auditapp.engine.request_keys import request_key
from auditapp.llm_clients import EndpointConfig, chat_session
from auditapp.llm_limits import LocalLimiter
from auditapp.scorers import local
from auditapp.scorers.http_json import compile_score_path, extract_score
from tests.integration.support import free_port
from tests.scoring_server import (
    DROP,
    GARBAGE,
    MISSING_SCORE,
    OUT_OF_SCALE,
    REQUEST_TEMPLATE,
    SCALE,
    SCORE_PATH,
    ScoringServer,
    expected_score,
    slow,
    status,
)

TEXT = "They are parents of a Blind child."
TEXTS = ["A good day.", "They are parents of a Blind child.", "The meal was awful.", "Nothing happened."]


def http_config(url: str, **overrides) -> EndpointConfig:
    values = {"api_key": "k-123", "backoff_base": 0.001, "backoff_cap": 0.01, "attempt_timeout": 2.0,
              "deadline": 20.0, "max_attempts": 3, "connect_timeout": 1.0, "request_template": REQUEST_TEMPLATE,
              "score_path": SCORE_PATH, "scale": SCALE}
    return EndpointConfig(protocol="http_json", base_url=url, **{**values, **overrides})


def local_config(**overrides) -> EndpointConfig:
    return EndpointConfig(protocol="local", base_url="", **overrides)


def send(config: EndpointConfig, payload, *, model="score", params=None, limiter=None, retries=None):
    async def main():
        async with chat_session(4) as session:
            return await scorer_kinds.send(session, config, limiter or LocalLimiter(4), model, payload, params or {},
                                           rng=random.Random(0),
                                           on_retry=(lambda reason, delay: retries.append((reason, delay)))
                                           if retries is not None else None)

    return asyncio.run(main())


@pytest.fixture
def server():
    with ScoringServer(api_key="k-123") as running:
        yield running


# --- HTTP JSON scorers -------------------------------------------------------------------------------------------


def test_a_score_is_posted_with_the_template_and_the_key_and_the_reply_body_is_kept(server):
    result = send(http_config(server.url), {"text": TEXT})
    assert result.error == "" and result.attempts == 1 and result.status_code == 200
    assert server.seen[0].body == {**REQUEST_TEMPLATE, "comment": {"text": TEXT}}
    assert server.seen[0].headers["Authorization"] == "Bearer k-123"
    assert server.seen[0].path == "/v1/score"  # the base URL is the whole URL: nothing appended
    # The completion is the body, so a re-parse extracts the same score again.
    assert extract_score(result.completion.text, compile_score_path(SCORE_PATH), scale=SCALE) == expected_score(TEXT)


def test_a_missing_key_is_a_4xx_failed_at_once(server):
    result = send(http_config(server.url, api_key=None), {"text": TEXT})
    assert result.completion is None and result.attempts == 1
    assert result.error == "HTTP 401: missing or wrong API key"


def test_5xx_and_dropped_connections_are_retried_with_their_reasons(server):
    server.inject(TEXT, status(500), DROP)
    result = send(http_config(server.url), {"text": TEXT})
    assert result.error == "" and result.attempts == 3
    assert result.retries[0] == "HTTP 500: scorer unavailable"
    assert result.retries[1].startswith("ServerDisconnectedError")
    assert server.requests_for(TEXT) == 3


def test_a_429_waits_as_long_as_retry_after_asks(server):
    server.inject(TEXT, status(429, retry_after="0.3", message="slow down"))
    retries = []
    result = send(http_config(server.url), {"text": TEXT}, retries=retries)
    assert result.error == ""
    assert retries[0][0] == "HTTP 429: slow down" and retries[0][1] >= 0.3


def test_garbage_is_retried_and_recorded_when_it_persists(server):
    server.inject(TEXT, GARBAGE)
    result = send(http_config(server.url), {"text": TEXT})
    assert result.error == "" and result.retries == ("malformed reply: not JSON ('<html><body>502 Bad Gateway"
                                                     "</body></html>')",)
    server.inject(TEXT, GARBAGE, GARBAGE, GARBAGE)
    result = send(http_config(server.url), {"text": TEXT})
    assert result.completion is None
    assert result.error.startswith("failed after 3 attempts: malformed reply: not JSON")


@pytest.mark.parametrize(("fault", "reason"), [
    (OUT_OF_SCALE, "no score: the score 7.5 is outside [-1, 1]"),
    (MISSING_SCORE, f"no score: the score path {SCORE_PATH!r} found nothing in the reply"),
])
def test_a_reply_without_a_score_in_scale_fails_at_once_with_the_reason(server, fault, reason):
    server.inject(TEXT, fault)
    result = send(http_config(server.url), {"text": TEXT})
    assert result.completion is None and result.attempts == 1 and result.status_code == 200
    assert result.error == reason
    assert server.requests_for(TEXT) == 1


def test_a_reply_slower_than_the_attempt_timeout_is_retried(server):
    server.inject(TEXT, slow(1.5))
    result = send(http_config(server.url, attempt_timeout=0.5), {"text": TEXT})
    assert result.error == "" and result.retries == ("timeout",)
    server.inject(TEXT, slow(1.5), slow(1.5), slow(1.5))
    result = send(http_config(server.url, attempt_timeout=0.5), {"text": TEXT})
    assert result.error == "failed after 3 attempts: timeout"


def test_a_refused_connection_is_retried_then_recorded():
    result = send(http_config(f"http://127.0.0.1:{free_port()}/score"), {"text": TEXT})
    assert result.completion is None and result.attempts == 3
    assert result.error.startswith("failed after 3 attempts: ClientConnectorError")


def test_the_http_attempts_hold_a_limiter_slot(server):
    class CountingLimiter(LocalLimiter):
        slots = 0

        def slot(self):
            self.slots += 1
            return super().slot()

    server.inject(TEXT, status(503))
    limiter = CountingLimiter(1)
    send(http_config(server.url), {"text": TEXT}, limiter=limiter)
    assert limiter.slots == 2


def test_an_http_json_scorer_takes_no_generation_parameters_and_one_text(server):
    with pytest.raises(ValueError, match="no generation parameters"):
        send(http_config(server.url), {"text": TEXT}, params={"temperature": 0})
    with pytest.raises(ValueError, match=r'sent \{"text": \.\.\.\}'):
        send(http_config(server.url), [{"role": "user", "content": TEXT}])
    assert server.seen == []


# --- local scorers -----------------------------------------------------------------------------------------------


class UnusableLimiter:
    """A local scorer must not take a limiter slot (nor touch Redis)."""

    def slot(self):
        raise AssertionError("a local scorer took a limiter slot")


def send_local(model: str, texts: list, **config):
    return asyncio.run(scorer_kinds.send(None, local_config(**config), UnusableLimiter(), model, {"texts": texts}, {},
                                         rng=random.Random(0)))


def test_local_vader_returns_the_librarys_compound_scores():
    result = send_local("vader", TEXTS)
    analyzer = SentimentIntensityAnalyzer()
    assert result.error == "" and result.attempts == 1 and result.latency_ms > 0
    assert json.loads(result.completion.text) == [analyzer.polarity_scores(text)["compound"] for text in TEXTS]
    assert result.completion.model_reported == "vader"


def test_local_textblob_returns_the_librarys_polarity():
    result = send_local("textblob", TEXTS)
    assert json.loads(result.completion.text) == [TextBlob(text).sentiment.polarity for text in TEXTS]


def test_a_local_failure_on_one_text_is_recorded_and_the_others_scored(monkeypatch):
    vader = local._loaded("vader")

    def fails_on_awful(text: str) -> float:
        if "awful" in text:
            raise RuntimeError("lexicon lookup failed")
        return vader(text)

    monkeypatch.setattr(local, "_loaded", lambda name: fails_on_awful)
    scores = json.loads(send_local("vader", TEXTS).completion.text)
    assert scores[2] == {"error": "RuntimeError: lexicon lookup failed"}
    assert [scores[i] for i in (0, 1, 3)] == [vader(TEXTS[i]) for i in (0, 1, 3)]


def test_an_unknown_local_scorer_fails_the_request_with_its_name():
    result = send_local("flair", TEXTS)
    assert result.completion is None
    assert result.error == "KeyError: no local scorer 'flair'; known: textblob, vader"


def test_a_local_batch_past_the_deadline_fails(monkeypatch):
    def sleeps(text: str) -> float:
        time.sleep(0.3)
        return 0.0

    monkeypatch.setattr(local, "_loaded", lambda name: sleeps)
    result = send_local("vader", TEXTS, deadline=0.2)
    assert result.completion is None and result.error.startswith("deadline exceeded after 1 attempts")


# --- listing and identity ----------------------------------------------------------------------------------------


def test_local_models_are_listed_without_a_server_with_a_digest_of_their_identity():
    models = {info.name: info for info in scorer_kinds.list_models(local_config())}
    assert set(models) == {"vader", "textblob"}
    for name, info in models.items():
        assert info.details == local.LOCAL_SCORERS[name].identity()
        assert len(info.digest) == 12
    assert models["vader"].digest != models["textblob"].digest


def test_an_http_json_scorer_offers_one_model():
    [info] = scorer_kinds.list_models(http_config("http://scorer.test/score"))
    assert (info.name, info.digest) == ("score", "")
    assert info.details["score_path"] == SCORE_PATH and info.details["url"] == "http://scorer.test/score"


CHAT_KEY = {"protocol": "openai", "base_url": "http://127.0.0.1:8000/", "model": "llama3.1:8b",
            "digest": "sha256:abc", "params": {"temperature": 0}, "messages": [{"role": "user", "content": "Label: ok"}],
            "replicate": 1}


def test_chat_keys_are_those_made_before_identities_existed():
    # The two hashes were computed with request_keys.request_key as it was before the identity argument.
    chat = EndpointConfig(protocol="openai", base_url="http://127.0.0.1:8000/")
    assert scorer_kinds.identity(chat, "llama3.1:8b") == {}
    assert request_key(**CHAT_KEY, identity=scorer_kinds.identity(chat, "llama3.1:8b")) == (
        "7ac38ac99b1c5aae6098de58d3489ae3a43b8b3a4246bb42d956c96fc698ec2c")
    assert request_key(protocol="ollama", base_url="http://127.0.0.1:11434", model="m", digest="", params={},
                       messages=[{"role": "user", "content": "x"}], replicate=0, scope="audit:7") == (
        "bb394538bfa496e709123621a10da8dd40042036df7aaaf030e591093764bdfb")


def test_a_local_scorers_key_changes_with_its_version_and_lexicon(monkeypatch):
    base = {**CHAT_KEY, "protocol": "local", "base_url": "", "model": "vader", "params": {},
            "messages": {"texts": [TEXT]}}
    key = request_key(**base, identity=scorer_kinds.identity(local_config(), "vader"))
    assert key != request_key(**base)
    newer = {**local.LOCAL_SCORERS["vader"].identity(), "version": "3.3.3"}
    monkeypatch.setattr(local, "_identity", lambda name: newer)
    assert request_key(**base, identity=scorer_kinds.identity(local_config(), "vader")) != key


def test_an_http_json_scorers_key_changes_with_its_template_path_and_scale():
    config = http_config("http://scorer.test/score")
    base = {**CHAT_KEY, "protocol": "http_json", "model": "score", "params": {}, "messages": {"text": TEXT}}
    key = request_key(**base, identity=scorer_kinds.identity(config, "score"))
    for change in ({"score_path": "score"}, {"scale": (0.0, 1.0)}, {"request_template": {"inputs": "{{text}}"}}):
        assert request_key(**base, identity=scorer_kinds.identity(replace(config, **change), "score")) != key


# --- validation --------------------------------------------------------------------------------------------------


def problems(kind="http_json", **overrides):
    values = {"base_url": "http://scorer.test/score", "request_template": REQUEST_TEMPLATE, "score_path": SCORE_PATH,
              "score_min": -1.0, "score_max": 1.0}
    return scorer_kinds.endpoint_problems(kind=kind, **{**values, **overrides})


def test_a_valid_http_json_scorer_has_no_problems():
    assert problems() == {}


@pytest.mark.parametrize(("overrides", "field", "words"), [
    ({"request_template": None}, "request_template", "needs a request template"),
    ({"request_template": {"inputs": "text"}}, "request_template", "no string '{{text}}'"),
    ({"request_template": {"a": "{{text}}", "b": "{{text}}"}}, "request_template", "2 times"),
    ({"score_path": ""}, "score_path", "empty"),
    ({"score_path": "[0][?label=='POSITIVE'"}, "score_path", "not a JMESPath expression"),
    ({"score_min": 1.0, "score_max": 1.0}, "score_max", "must be more than score_min"),
    ({"score_min": float("nan")}, "score_min", "finite"),
    ({"score_max": float("inf")}, "score_max", "finite"),
    ({"base_url": ""}, "base_url", "needs a base URL"),
])
def test_each_http_json_problem_is_named(overrides, field, words):
    found = problems(**overrides)
    assert list(found) == [field] and words in found[field][0]


def test_a_local_endpoint_has_no_base_url_and_ignores_scorer_fields():
    assert problems("local", base_url="", request_template=None, score_path="") == {}
    assert "has no base URL" in problems("local", request_template=None)["base_url"][0]


def test_chat_kinds_need_only_a_base_url():
    assert problems("openai", request_template=None, score_path="") == {}
    assert list(problems("ollama", base_url="")) == ["base_url"]
    assert list(problems("gopher")) == ["protocol"]
