"""A launch setting declared once (auditapp/engine/launch_settings.py) and the two fields derived from it: the API
body's (auditapp.api.launch.setting_field) and the admin form's (auditapp.launch_forms.setting_form_field). Both
state the declared bounds, choices, default and help and read a value alike; a field that diverged from its
declaration is named; a declaration that contradicts itself fails when it is made."""
from __future__ import annotations

import pytest
from django import forms
from django.core.exceptions import ValidationError
from rest_framework import serializers

from auditapp.api.launch import LaunchSerializer, setting_field, settings_serializer
from auditapp.engine.launch_settings import Setting
from auditapp.launch_forms import launch_form_base, setting_form_field
from auditapp.models import Audit
from tests.conformance.checks import setting_differences

LEVEL = Setting("level", "integer", default=3, minimum=1, maximum=5, help="How loud.")
SETTINGS = (
    LEVEL,
    Setting("share", "number", default=0.5, minimum=0, maximum=1, help="The share refused."),
    Setting("group", "text", default="White", max_length=10, help="The reference group."),
    Setting("note", "text", default="", max_length=10, help="A note, if any."),
    Setting("strict", "boolean", default=False, help="Refuse more."),
    Setting("order", "choice", default="a", choices=(("a", "A first"), ("b", "B first")), help="Which first."),
    Setting("labels", "choice", default=None, choices=((None, "as the mode says"), ("numbers", "numbers")),
            help="How options are labelled."),
    Setting("kinds", "choices", default=("x", "y"), choices=(("x", "X"), ("y", "Y"), ("z", "Z")), help="Which kinds."),
    Setting("rules", "mapping", default={}, choices=(("up", "up"), ("down", "down")), help="A rule by name."),
    Setting("sample", "integer", default=None, minimum=1, help="How many, if not all."),
    Setting("action", "choice", default="flag", choices=(("flag", "flag"), ("exclude", "exclude")),
            form_name="validity_action", help="What a flag does."),
)


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda setting: setting.name)
def test_one_declaration_gives_both_fields_the_same_rule_and_reading(setting):
    assert setting_differences(setting, setting_field(setting), setting_form_field(setting)) == []


def test_an_integer_gives_both_fields_its_bounds_default_and_help():
    api, form = setting_field(LEVEL), setting_form_field(LEVEL)
    assert (api.min_value, api.max_value, api.default, api.help_text) == (1, 5, 3, "How loud.")
    assert (form.min_value, form.max_value, form.initial, form.help_text) == (1, 5, 3, "How loud.")
    assert api.run_validation(5) == form.clean("5") == 5
    for beyond in (0, 6):
        with pytest.raises(serializers.ValidationError):
            api.run_validation(beyond)
        with pytest.raises(ValidationError):
            form.clean(str(beyond))


def test_an_optional_choice_is_null_in_the_api_and_the_blank_choice_in_the_form():
    labels = SETTINGS[6]
    api, form = setting_field(labels), setting_form_field(labels)
    assert api.allow_null and list(api.choices) == ["numbers"]
    assert form.choices == [("", "as the mode says"), ("numbers", "numbers")]
    assert api.run_validation(None) is None and form.clean("") is None
    # A choice with a default takes it when the form leaves it blank, as the API does when the body leaves it out.
    assert setting_form_field(SETTINGS[5]).clean("") == "a"


def test_a_mapping_takes_an_object_of_names_to_its_choices():
    rules = SETTINGS[8]
    form = setting_form_field(rules)
    assert form.clean('{"vader": "up"}') == {"vader": "up"} and form.clean("") == {}
    with pytest.raises(ValidationError, match=r'one of up, down, e\.g\. \{"name": "up"\}'):
        form.clean('{"vader": "sideways"}')
    assert setting_field(rules).run_validation({}) == {}
    # Each body gets its own copy of the default.
    assert setting_field(rules).get_default() is not setting_field(rules).get_default()


@pytest.mark.parametrize(("diverged", "difference"), [
    (forms.IntegerField(initial=3, min_value=1, max_value=6, help_text="How loud."),
     "level: maximum declared 5, API 5, admin form 6"),
    (forms.IntegerField(initial=2, min_value=1, max_value=5, help_text="How loud."),
     "level: default declared 3, API 3, admin form 2"),
    (forms.IntegerField(initial=3, min_value=1, max_value=5, help_text="Loudness."),
     "level: help declared 'How loud.', API 'How loud.', admin form 'Loudness.'"),
    (forms.FloatField(initial=3, min_value=1, max_value=5, help_text="How loud."),
     "level: 3 is taken as 3 by the API, taken as 3.0 by the admin form"),
])
def test_a_form_field_that_diverged_from_the_declaration_is_named(diverged, difference):
    assert difference in setting_differences(LEVEL, setting_field(LEVEL), diverged)


@pytest.mark.parametrize(("arguments", "problem"), [
    ({"kind": "integer", "default": 9, "maximum": 5}, "its default 9 is outside None–5"),
    ({"kind": "integer", "default": True}, "its default True is not an integer"),
    ({"kind": "text", "default": "x", "minimum": 1}, "a text has no minimum or maximum"),
    ({"kind": "choice", "default": "c", "choices": (("a", "A"),)}, "its default 'c' is not one of its choices"),
    ({"kind": "choice", "default": None}, "a choice needs choices"),
    ({"kind": "choices", "default": ["a"], "choices": (("a", "A"),)}, "its default ['a'] is not a tuple"),
    ({"kind": "date", "default": None}, "unknown kind 'date'"),
    ({"kind": "boolean", "default": False, "help": " "}, "it needs a help text"),
    ({"kind": "boolean", "default": False, "form_name": "validity action"}, "must be identifiers"),
])
def test_a_declaration_that_contradicts_itself_fails_when_made(arguments, problem):
    with pytest.raises(ValueError, match=f"setting 'level': .*{problem}".replace("(", r"\(").replace("[", r"\[")):
        Setting(**{"name": "level", "help": "How loud.", **arguments})


def test_the_serializer_holds_the_settings_after_the_shared_fields():
    fields = list(settings_serializer(SETTINGS)().fields)
    assert fields == [*LaunchSerializer().fields, *(setting.name for setting in SETTINGS)]


@pytest.mark.django_db
def test_the_form_holds_each_setting_under_its_form_name_and_reads_them_back_by_their_api_names():
    class LaunchForm(launch_form_base(SETTINGS)):
        class Meta:
            model = Audit
            fields = ("name",)

    assert [name for name in LaunchForm.declared_fields if name not in ("models", "params", "structured_output")] == [
        setting.in_form for setting in SETTINGS]
    form = LaunchForm(data={"name": "n", "level": "4", "share": "0.25", "group": "Black", "rules": '{"a": "down"}',
                            "kinds": ["z"], "validity_action": "exclude", "strict": "on"})
    assert not form.is_valid() and list(form.errors) == ["models"]  # no endpoint lists a model: the rest is read
    assert form.setting_values() == {"level": 4, "share": 0.25, "group": "Black", "note": "", "strict": True,
                                     "order": "a", "labels": None, "kinds": ["z"], "rules": {"a": "down"},
                                     "sample": None, "action": "exclude"}
