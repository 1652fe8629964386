"""What every paradigm's launch body shares (``POST /api/audits/``): the models to ask and the engine's settings.

A paradigm's launch serializer (its adapter's ``launch_serializer``) subclasses :class:`LaunchSerializer` and adds
its own fields; :func:`model_choices` turns the validated models into the engine's ModelChoice.
"""
from __future__ import annotations

from rest_framework import serializers

from auditapp.audit_services import MAX_REPLICATES, ModelChoice
from auditapp.models import LLMEndpoint

BIGINT_MAX = 2**63 - 1
"""The largest id or seed the database stores (a 64-bit signed integer); larger ones are a 400, not a 500."""


class ModelChoiceSerializer(serializers.Serializer):
    endpoint = serializers.PrimaryKeyRelatedField(queryset=LLMEndpoint.objects.all())
    model = serializers.CharField(max_length=200)
    params = serializers.DictField(required=False, default=dict,
                                   help_text="Generation parameters; omit for the endpoint's own defaults.")
    label = serializers.CharField(max_length=200, required=False, default="", allow_blank=True)


class LaunchSerializer(serializers.Serializer):
    """The fields of every launch: name, models, replicates, seed, cache, error budget, parallel tasks."""

    name = serializers.CharField(max_length=200)
    models = ModelChoiceSerializer(many=True)
    replicates = serializers.IntegerField(default=1, min_value=1, max_value=MAX_REPLICATES)
    seed = serializers.IntegerField(default=0, min_value=-BIGINT_MAX - 1, max_value=BIGINT_MAX)
    use_cache = serializers.BooleanField(default=True)
    error_budget = serializers.FloatField(default=0.2, min_value=0, max_value=1)
    parallel_tasks = serializers.IntegerField(default=1, min_value=1, max_value=32)


def model_choices(validated: list[dict]) -> list[ModelChoice]:
    return [ModelChoice(**choice) for choice in validated]
