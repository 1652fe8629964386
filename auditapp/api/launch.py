"""What every paradigm's launch body shares (``POST /api/audits/``): the models to ask and the engine's settings.

A paradigm's launch serializer (its adapter's ``launch_serializer``) subclasses :class:`LaunchSerializer` and adds
its own fields; :func:`model_choices` turns the validated models into the engine's ModelChoice. The shared
``structured_output`` is applied by the launch view after the paradigm's ``launch``
(:func:`auditapp.engine.launch.audit_structured_output_set`), in the same transaction.
"""
from __future__ import annotations

from rest_framework import serializers

from auditapp.engine.launch import MAX_REPLICATES, ModelChoice
from auditapp.models import LLMEndpoint
from common.api.fields import storable_json

BIGINT_MAX = 2**63 - 1
"""The largest id or seed the database stores (a 64-bit signed integer); larger ones are a 400, not a 500."""


class ModelChoiceSerializer(serializers.Serializer):
    endpoint = serializers.PrimaryKeyRelatedField(queryset=LLMEndpoint.objects.all())
    model = serializers.CharField(max_length=200)
    params = serializers.DictField(required=False, default=dict, validators=[storable_json],
                                   help_text="Generation parameters; omit for the endpoint's own defaults.")
    label = serializers.CharField(max_length=200, required=False, default="", allow_blank=True)


class LaunchSerializer(serializers.Serializer):
    """The fields of every launch: name, models, replicates, seed, cache, structured output, error budget, parallel
    tasks."""

    name = serializers.CharField(max_length=200)
    models = ModelChoiceSerializer(many=True)
    replicates = serializers.IntegerField(default=1, min_value=1, max_value=MAX_REPLICATES)
    seed = serializers.IntegerField(default=0, min_value=-BIGINT_MAX - 1, max_value=BIGINT_MAX)
    use_cache = serializers.BooleanField(default=True)
    structured_output = serializers.BooleanField(
        default=False, help_text="Constrain chat models' replies to the paradigm's JSON answer schema, sent in each "
                                 "endpoint's structured-output form (every chat endpoint needs one). Off by default: "
                                 "the papers' prompts are free text.")
    error_budget = serializers.FloatField(default=0.2, min_value=0, max_value=1)
    parallel_tasks = serializers.IntegerField(default=1, min_value=1, max_value=32)


def model_choices(validated: list[dict]) -> list[ModelChoice]:
    return [ModelChoice(**choice) for choice in validated]
