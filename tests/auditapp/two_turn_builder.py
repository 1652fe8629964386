"""A test-only two-turn paradigm for the engine's conversations (multi-turn requests): each text is described (turn 0),
then, with the model's own description in the conversation, classified as comedy or tragedy (turn 1), as seed 003's
affective attribution test asks. Injected in-process by :func:`install` (the registry lookup the engine uses is
monkeypatched); no production code names it."""
from __future__ import annotations

import dataclasses
from types import SimpleNamespace

from auditapp.engine import registry
from auditapp.engine.planning import PlannedRequest, audit_request_key
from auditapp.engine.protocol import Judgment, NoFollowUp, Outcome, ParsedReply
from auditapp.models import Audit
from tests.llm_server import REFUSAL

NAME = "two_turn_test"
CONDITION = "talk"
LABELS = {"comedy": 1, "tragedy": 0}


def describe(text: str) -> list[dict]:
    return [{"role": "user", "content": f"Describe this in one sentence.\n{text}"}]


def ask(turn: int) -> dict:
    return {"role": "user", "content": f"Question {turn + 1}: is what you described a comedy or a tragedy?"}


class TwoTurnRequests:
    """``design``: ``texts`` (one conversation per text, model and replicate) and ``turns`` (2 unless given)."""

    def __init__(self, audit: Audit):
        self.audit = audit
        self.models = {m.id: m for m in audit.models.select_related("endpoint")}
        self.texts = audit.design["texts"]
        self.turns = audit.design.get("turns", 2)
        self.multi_turn = self.turns > 1

    def requests(self):
        for audit_model in self.models.values():
            for index in range(len(self.texts)):
                for replicate in range(self.audit.replicates):
                    first = PlannedRequest(audit_model, CONDITION, None, f"text:{index}", replicate, index, "")
                    yield dataclasses.replace(first, key=self.key(audit_model, self.payload(first), replicate))
                    for turn in range(1, self.turns):
                        yield dataclasses.replace(first, turn=turn)

    def payload(self, request) -> list[dict]:
        return describe(self.texts[int(request.unit.split(":")[1])])

    def follow_up(self, request, previous_payload, previous_reply_text: str) -> list[dict]:
        if not previous_reply_text.strip():
            raise NoFollowUp("an empty reply")
        if previous_reply_text == REFUSAL:
            raise NoFollowUp("a refusal")
        return [*previous_payload, {"role": "assistant", "content": previous_reply_text}, ask(request.turn)]

    def key(self, audit_model, payload, replicate: int) -> str:
        return audit_request_key(self.audit, audit_model, payload, replicate)

    def parse(self, request, text: str, finish_reason: str) -> ParsedReply:
        if text == REFUSAL:
            return ParsedReply(Outcome.REFUSAL, reason="a refusal")
        if request.turn == 0:
            # The description only prepares the question: no judgment.
            return ParsedReply(Outcome.LABEL if text.strip() else Outcome.UNPARSEABLE,
                               reason="" if text.strip() else "an empty reply")
        word = text.rstrip(".").rsplit(" ", 1)[-1].lower()
        if word not in LABELS:
            return ParsedReply(Outcome.UNPARSEABLE, reason=f"no comedy or tragedy in {text[-40:]!r}",
                               judgments=(Judgment(request.unit, Outcome.UNPARSEABLE, reason="no answer"),))
        label = LABELS[word]
        return ParsedReply(Outcome.LABEL, label=label, judgments=(Judgment(request.unit, Outcome.LABEL, label=label),))

    def manifest(self) -> dict:
        return {"paradigm": NAME, "texts": self.texts, "turns": self.turns}


def _analyse(audit: Audit) -> None:
    Audit.objects.filter(pk=audit.pk, status=Audit.Status.ANALYSING).update(status=Audit.Status.COMPLETED)


PARADIGM = SimpleNamespace(name=NAME, label="Two turns (tests)", builder=TwoTurnRequests,
                           cells=lambda audit: [(CONDITION, "Conversation")], analyse=_analyse,
                           answer_schema=lambda audit: None)


def _lookup(real):
    return lambda name: PARADIGM if name == NAME else real(name)


def install(monkeypatch) -> None:
    """Make ``registry.get`` answer :data:`NAME` with this paradigm (every other name as before)."""
    monkeypatch.setattr(registry, "get", _lookup(registry.get))
