"""What an audit sends: its paradigm's request builder, the planned requests, and their keys (with the
structured-output form and schema when replies are constrained)."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, TypedDict

from auditapp import scorer_kinds
from auditapp.engine import registry
from auditapp.engine.endpoints import endpoint_config
from auditapp.engine.request_keys import request_key
from auditapp.models import (
    Audit,
    AuditModel,
)

BULK_BATCH_SIZE = 1000


class AnswerFormat(TypedDict):
    """What constrains a chat model's replies: the structured-output form its server takes, and the schema."""

    form: str
    schema: dict


def audit_answer_schema(audit: Audit) -> dict | None:
    """The JSON schema chat models' replies are constrained to: the paradigm's, when the audit asks for structured
    output; else None."""
    return registry.get(audit.paradigm).answer_schema(audit) if audit.structured_output else None


def audit_answer_format(audit: Audit, audit_model: AuditModel) -> AnswerFormat | None:
    """What constrains a reply of this model in this audit (its form and the schema), or None: structured output
    is off, or the endpoint is not a chat model (a scorer's output is its own). The form is the one recorded when
    the audit was prepared (``AuditModel.structured_output``), the endpoint's own before then: editing the endpoint
    does not change what a running audit sends."""
    schema = audit_answer_schema(audit)
    if schema is None or scorer_kinds.takes(audit_model.endpoint.protocol) != "messages":
        return None
    return {"form": audit_model.structured_output or audit_model.endpoint.structured_output, "schema": schema}


@dataclass(frozen=True)
class PlannedRequest:
    """A request an audit will send (before it has an id)."""

    audit_model: AuditModel
    condition: str
    item_id: int | None
    unit: str
    replicate: int
    order: int
    key: str
    turn: int = 0


def request_builder(audit: Audit):
    """The request builder of the audit's paradigm (:class:`auditapp.engine.protocol.RequestBuilder`): ``models``
    (id → AuditModel), ``requests()`` (every PlannedRequest), ``payload(request)`` and ``key(...)`` (a request is
    rebuilt, never stored), ``parse(request, text, finish_reason)`` (a ParsedReply) and ``manifest()``."""
    return registry.get(audit.paradigm).builder(audit)


def planned_requests(audit: Audit, builder=None) -> Iterable[PlannedRequest]:
    """Every request the audit's paradigm plans (later turns of a conversation included): what the preparation
    creates, and what a launch preview counts (:mod:`auditapp.engine.launch_preview`). ``builder``: the audit's
    request builder when the caller has one."""
    return (builder or request_builder(audit)).requests()


def audit_request_key(audit: Audit, audit_model: AuditModel, messages: Any, replicate: int) -> str:
    """The key of a request: what is sent (chat messages, or a scorer's payload) to which model, and the replicate,
    with the structured-output form and schema when the reply is constrained; scoped to the audit when it does not
    use the cache."""
    identity = scorer_kinds.identity(endpoint_config(audit_model.endpoint), audit_model.model)
    return request_key(protocol=audit_model.endpoint.protocol, base_url=audit_model.endpoint.base_url,
                       model=audit_model.model, digest=audit_model.digest, params=audit_model.params,
                       messages=messages, replicate=replicate, scope="" if audit.use_cache else f"audit:{audit.id}",
                       identity=identity, answer_format=audit_answer_format(audit, audit_model))
