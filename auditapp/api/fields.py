"""Serializer fields the API shares."""
from __future__ import annotations

from rest_framework import serializers


class TextOnly:
    """Text only: DRF's text fields would store the number 0 as the name "0"."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictCharField(TextOnly, serializers.CharField):
    pass


class StrictSlugField(TextOnly, serializers.SlugField):
    pass
