"""The key of an LLM request (ARCHITECTURE.md, "The audit engine"). Pure.

A key is the sha256 of a canonical JSON document holding everything that decides the reply: the
endpoint's protocol (its kind) and base URL, the model name and the version/digest the endpoint reported, every
generation parameter, the messages (or what else the kind sends: a scorer's texts), the replicate index (so
replicates are distinct requests that a cache never merges), and the kind's ``identity``
(:func:`auditapp.scorer_kinds.identity`: a local scorer's package version and lexicon hash, an HTTP JSON
scorer's request template, score path and scale), so a cache never mixes scorer versions. Chat kinds have no
identity beyond the rest: an empty one is left out of the document, so their keys are those made before
identities existed. Two requests with the same key are the same request.

A request whose reply is constrained by structured output carries its ``answer_format`` (the server's form and
the JSON schema): a constrained reply and a free one to the same messages are different requests, and the
cache never gives one for the other. Unconstrained requests leave it out, so their keys are unchanged.

An audit that turns the cache off passes a ``scope`` (its own id): its keys are then its own, so it asks
every model afresh and stores its own replies, while each key is still stored once.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping


def request_key(*, protocol: str, base_url: str, model: str, digest: str, params: dict, messages: list[dict],
                replicate: int, scope: str = "", identity: dict | None = None,
                answer_format: Mapping[str, object] | None = None) -> str:
    document = {
        "protocol": protocol,
        "base_url": base_url.rstrip("/"),
        "model": model,
        "digest": digest,
        "params": params,
        "messages": messages,
        "replicate": replicate,
    }
    if scope:
        document["scope"] = scope
    if identity:
        document["identity"] = identity
    if answer_format:
        document["answer_format"] = answer_format
    canonical = json.dumps(document, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()
