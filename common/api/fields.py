"""Serializer fields and validators the API shares."""
from __future__ import annotations

from rest_framework import serializers

from common.participant_input import json_problems


class TextOnly(serializers.CharField):
    """Text only: DRF's text fields would store the number 0 as the name "0"."""

    def to_internal_value(self, data: object) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictCharField(TextOnly, serializers.CharField):
    pass


class StrictSlugField(TextOnly, serializers.SlugField):
    pass


def storable_json(value: object) -> None:
    """A free-form value (a DictField's, a JSONField's) holds only what the database can store: the JSON parser
    refuses the rest in a JSON body, but a form's fields reach these fields as text (DRF reads a JSONField's text
    with Python's json, so ``1e400`` is infinity; a DictField's values stay text, NUL characters included)."""
    if problem := next(json_problems(value), None):
        raise serializers.ValidationError(str(problem) if problem.field else problem.problem)
