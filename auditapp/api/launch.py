"""What every paradigm's launch body shares (``POST /api/audits/``): the models to ask and the engine's settings.

A paradigm's launch serializer (its adapter's ``launch_serializer``) subclasses :class:`LaunchSerializer` and adds
its own fields: a field for each of its declared settings (:class:`auditapp.engine.launch_settings.Setting`, through
:func:`settings_serializer`), and by hand the fields whose shape is the API's alone (a stored corpus, a nested
prompt); :func:`model_choices` turns the validated models into the engine's ModelChoice. The shared
``structured_output`` is applied by the launch view after the paradigm's ``launch``
(:func:`auditapp.engine.launch.audit_structured_output_set`), in the same transaction.
"""
from __future__ import annotations

from collections.abc import Sequence
from functools import partial

from rest_framework import serializers

from auditapp.engine.launch import ENGINE_BOUNDS, ModelChoice
from auditapp.engine.launch_settings import Setting
from auditapp.models import LLMEndpoint
from common.api.fields import storable_json
from teams.api import EditableTeamField

"""The largest id or seed the database stores (a 64-bit signed integer); larger ones are a 400, not a 500."""


class ModelChoiceSerializer(serializers.Serializer):
    endpoint = serializers.PrimaryKeyRelatedField(queryset=LLMEndpoint.objects.all())
    model = serializers.CharField(max_length=200)
    params = serializers.DictField(required=False, default=dict, validators=[storable_json],
                                   help_text="Generation parameters; omit for the endpoint's own defaults.")
    label = serializers.CharField(max_length=200, required=False, default="", allow_blank=True)


def bounds(name: str) -> dict[str, int]:
    """A shared launch setting's bounds (:data:`~auditapp.engine.launch.ENGINE_BOUNDS`) as a field's arguments."""
    low, high = ENGINE_BOUNDS[name]
    return {"min_value": low, "max_value": high}


class LaunchSerializer(serializers.Serializer):
    """The fields of every launch: name, models, replicates, seed, cache, structured output, error budget, parallel
    tasks, team."""

    name = serializers.CharField(max_length=200)
    models = ModelChoiceSerializer(many=True)
    replicates = serializers.IntegerField(default=1, **bounds("replicates"))
    seed = serializers.IntegerField(default=0, **bounds("seed"))
    use_cache = serializers.BooleanField(default=True)
    structured_output = serializers.BooleanField(
        default=False, help_text="Constrain chat models' replies to the paradigm's JSON answer schema, sent in each "
                                 "endpoint's structured-output form (every chat endpoint needs one). Off by default: "
                                 "the papers' prompts are free text.")
    error_budget = serializers.FloatField(default=0.2, **bounds("error_budget"))
    parallel_tasks = serializers.IntegerField(default=1, **bounds("parallel_tasks"))
    # No default: a body without a team leaves none in the validated values a paradigm's launch takes.
    team = EditableTeamField(
        required=False, allow_null=True,
        help_text="The id of the audit's team, one where you are an editor (default: your only such team, or a new "
                  "team of your own); an audit of a study belongs to the study's team. You must be an editor of the "
                  "audit's team, and every endpoint, corpus and study the body names must be one your teams may use.")


def model_choices(validated: list[dict]) -> list[ModelChoice]:
    return [ModelChoice(**choice) for choice in validated]


def setting_field(setting: Setting) -> serializers.Field:
    """The body's field of a setting: its bounds, choices (their values), default and help as declared; None as
    the default makes it nullable. The admin form's field of the same setting is
    :func:`auditapp.launch_forms.setting_form_field`."""
    optional = setting.default is None
    chosen = [(value, label) for value, label in setting.choices if value is not None]
    if setting.kind == "integer":
        return serializers.IntegerField(default=setting.default, allow_null=optional, min_value=setting.minimum,
                                        max_value=setting.maximum, help_text=setting.help)
    if setting.kind == "number":
        return serializers.FloatField(default=setting.default, allow_null=optional, min_value=setting.minimum,
                                      max_value=setting.maximum, help_text=setting.help)
    if setting.kind == "text":
        return serializers.CharField(default=setting.default, allow_null=optional, allow_blank=setting.default == "",
                                     max_length=setting.max_length, help_text=setting.help)
    if setting.kind == "boolean":
        return serializers.BooleanField(default=setting.default, help_text=setting.help)
    if setting.kind == "choice":
        return serializers.ChoiceField(choices=chosen, default=setting.default, allow_null=optional,
                                       help_text=setting.help)
    if setting.kind == "choices":
        return serializers.ListField(child=serializers.ChoiceField(choices=chosen), default=list(setting.default),
                                     help_text=setting.help)
    # A mapping's default is copied for each body: one dict shared by every request would carry a change made
    # while launching one audit into the next.
    return serializers.DictField(child=serializers.ChoiceField(choices=chosen), default=partial(dict, setting.default),
                                 help_text=setting.help)


def settings_serializer(settings: Sequence[Setting], base: type[serializers.Serializer] = LaunchSerializer) -> type:
    """``base`` with a field for each setting, in their order: what a paradigm's launch serializer (or a nested
    object of its body) subclasses, adding by hand the fields that are the API's alone."""
    return type(f"{base.__name__}WithSettings", (base,), {setting.name: setting_field(setting) for setting in settings})
