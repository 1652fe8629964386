"""What every paradigm's admin launch form shares: the models to ask (from the endpoints' last listing) and their
generation parameters, whether their output is constrained (structured output), a field for each of the paradigm's
declared settings (:class:`auditapp.engine.launch_settings.Setting`) and the order the admin shows them in.

A paradigm's form (its adapter's ``launch_form``) subclasses :func:`launch_form_base` of its settings, a ModelForm of
Audit with :class:`ModelsFieldsMixin`, and adds its Meta and the fields that are the admin's alone (a stored corpus,
a file of ids); the admin shows the fields in :func:`launch_field_order` and applies ``structured_output`` after the
paradigm's launch.

A launch form offers only the models its paradigm can ask (``accepts``, the registry entry's: a classification audit
is not offered VADER). Its *Preview* button (:data:`PREVIEW`) validates it in full and never saves it: the admin
shows the requests the launch would plan instead (:mod:`auditapp.engine.launch_preview`); the preview's page carries
the digest of the data it was computed from (:data:`PREVIEWED`), so a launch of changed data is previewed again
rather than launched with a count the researcher has not seen."""
from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence

from django import forms
from django.core.validators import MaxValueValidator, MinValueValidator

from auditapp import llm_clients, scorer_kinds
from auditapp.engine.launch import ENGINE_BOUNDS, ModelChoice
from auditapp.engine.launch_settings import Setting
from auditapp.engine.registry import CHAT
from auditapp.models import LLMEndpoint

PREVIEW = "_preview"
"""The name of the launch form's Preview button."""
PREVIEWED = "_previewed"
"""The hidden field holding the digest of the data a preview was computed from (:meth:`LaunchForm.data_digest`)."""
KIND_WORDS = {"messages": "chat LLMs", "text": "HTTP JSON scorers", "texts": "local scorers (VADER, TextBlob)"}


class ModelsFieldsMixin(forms.Form):
    """The listed models to audit and their generation parameters (use the endpoint action to list them): only
    those of endpoints whose kind takes what the paradigm sends (``accepts``)."""

    accepts: tuple[str, ...] = CHAT

    models = forms.MultipleChoiceField(widget=forms.CheckboxSelectMultiple, choices=())
    params = forms.JSONField(
        required=False, initial=dict, widget=forms.Textarea(attrs={"rows": 2}),
        help_text='Generation parameters for every chosen model, e.g. {"temperature": 0}; leave {} for each '
                  "endpoint's own defaults (as in seed 000 §3.4).")

    structured_output = forms.BooleanField(
        required=False, initial=False,
        help_text="Constrain the chat models' replies to the paradigm's JSON answer schema, sent in each endpoint's "
                  "structured-output form (set it on the endpoint). Off: the papers' free-text prompts.")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        endpoints = [endpoint for endpoint in LLMEndpoint.objects.order_by("name")
                     if scorer_kinds.takes(endpoint.protocol) in self.accepts]
        self.fields["models"].choices = [
            (f"{endpoint.id}:{model['name']}",
             f"{endpoint.name} — {model['name']}" + ("" if self.accepts == CHAT else
                                                     f" ({KIND_WORDS[scorer_kinds.takes(endpoint.protocol)]})"))
            for endpoint in endpoints for model in endpoint.listed_models]
        self.fields["models"].help_text = (
            f"This paradigm asks {' and '.join(KIND_WORDS[kind] for kind in self.accepts)}: the models of such "
            "endpoints, from their last listing. Other endpoints' models are not offered.")

    def clean_params(self):
        params = self.cleaned_data.get("params") or {}
        if not isinstance(params, dict):
            raise forms.ValidationError('Give the parameters as a JSON object, e.g. {"temperature": 0}.')
        return params

    def clean(self):
        data = super().clean()
        if data.get("structured_output") and data.get("models"):
            endpoints = LLMEndpoint.objects.in_bulk([int(value.partition(":")[0]) for value in data["models"]])
            for endpoint in sorted(endpoints.values(), key=lambda endpoint: endpoint.name):
                problem = llm_clients.structured_output_problem(endpoint.protocol, endpoint.structured_output)
                if problem and endpoint.protocol in llm_clients.STRUCTURED_OUTPUT_FORMS.values():
                    self.add_error("structured_output", f"endpoint {endpoint.name} cannot constrain output: {problem}")
        return data

    def model_choices(self) -> list[ModelChoice]:
        endpoints = LLMEndpoint.objects.in_bulk()
        choices = []
        for value in self.cleaned_data["models"]:
            endpoint_id, _, model = value.partition(":")
            choices.append(ModelChoice(endpoint=endpoints[int(endpoint_id)], model=model,
                                       params=self.cleaned_data.get("params") or {}))
        return choices


class ChoiceMappingField(forms.JSONField):
    """A JSON object of names to the value of one of ``choices`` (a mapping setting, such as a scorer's kind by
    scorer name); left blank, the setting's default."""

    def __init__(self, *, choices: Sequence[tuple[str, str]], default: dict, **kwargs):
        self.choices, self.default = list(choices), default
        super().__init__(**kwargs)

    def to_python(self, value):
        value = super().to_python(value)
        return dict(self.default) if value is None else value

    def validate(self, value):
        super().validate(value)
        allowed = [choice for choice, _ in self.choices]
        if not isinstance(value, dict) or not all(entry in allowed for entry in value.values()):
            raise forms.ValidationError(f"Give an object of names to one of {', '.join(allowed)}, e.g. "
                                        f'{{"name": "{allowed[0]}"}}.')


def setting_form_field(setting: Setting) -> forms.Field:
    """The admin form's field of a setting: its bounds, choices (with their labels), default (the initial value) and
    help as declared. A number or a text is required unless the setting is optional (its default None, or "" for a
    text); a choice or a mapping left blank takes the default, as the API does when the body leaves it out; an
    unticked box is false; a list of choices may be left empty, as in the API, for the paradigm's own check to
    refuse. The API's field of the same setting is :func:`auditapp.api.launch.setting_field`."""
    if setting.kind in ("integer", "number"):
        number = forms.IntegerField if setting.kind == "integer" else forms.FloatField
        return number(required=setting.default is not None, initial=setting.default, min_value=setting.minimum,
                      max_value=setting.maximum, help_text=setting.help)
    if setting.kind == "text":
        return forms.CharField(required=setting.default not in (None, ""), initial=setting.default,
                               max_length=setting.max_length, empty_value=None if setting.default is None else "",
                               help_text=setting.help)
    if setting.kind == "boolean":
        return forms.BooleanField(required=False, initial=setting.default, help_text=setting.help)
    if setting.kind == "choice":
        return forms.TypedChoiceField(choices=[("" if value is None else value, label)
                                               for value, label in setting.choices],
                                      required=False, empty_value=setting.default, initial=setting.default,
                                      help_text=setting.help)
    if setting.kind == "choices":
        return forms.MultipleChoiceField(choices=list(setting.choices), required=False, initial=list(setting.default),
                                         widget=forms.CheckboxSelectMultiple, help_text=setting.help)
    return ChoiceMappingField(choices=setting.choices, default=setting.default, required=False,
                              initial=dict(setting.default), widget=forms.Textarea(attrs={"rows": 2}),
                              help_text=setting.help)


class UnavailableChoicesWidget(forms.CheckboxSelectMultiple):
    """Checkboxes of which some cannot be chosen now (``unavailable()``: value → why, asked once when the widget is
    drawn): those are disabled, never ticked, and say why beside their label."""

    def __init__(self, *args, unavailable: Callable[[], Mapping[str, str]] = dict, **kwargs):
        super().__init__(*args, **kwargs)
        self.unavailable = unavailable

    def get_context(self, name, value, attrs):
        self._reasons = self.unavailable()
        return super().get_context(name, value, attrs)

    def create_option(self, name, value, label, selected, index, subindex=None, attrs=None):
        reason = getattr(self, "_reasons", {}).get(str(value))
        if reason:
            label, selected = f"{label} — cannot run: {reason}", False
        option = super().create_option(name, value, label, selected, index, subindex=subindex, attrs=attrs)
        if reason:
            option["attrs"]["disabled"] = True
        return option


def mark_unavailable(field: forms.MultipleChoiceField, unavailable: Callable[[], Mapping[str, str]]) -> None:
    """Show the choices of a multiple-choice field that cannot run (``unavailable()``: value → why, asked when the
    field is drawn, after the admin has narrowed the form's choices to the user's) disabled with the reason, and
    leave them out of its initial value."""
    ticked = list(field.initial or ())
    field.widget = UnavailableChoicesWidget(choices=field.choices, unavailable=unavailable)
    field.initial = lambda: [value for value in ticked if value not in unavailable()]


class LaunchForm(ModelsFieldsMixin, forms.ModelForm):
    """A launch form (a ModelForm of Audit once a paradigm's form gives its Meta) with the fields of its
    ``settings``; :meth:`setting_values` reads them back under the names the API body gives them. A preview
    (:attr:`previewing`) is validated in full and is never valid, so the admin never saves it."""

    settings: tuple[Setting, ...] = ()

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # The model's columns allow more than a launch does (a negative seed, no parallel task): the form states
        # the bounds the API states.
        for name, (low, high) in ENGINE_BOUNDS.items():
            field = self.fields.get(name)
            if field is None:
                continue
            field.validators = [*field.validators, MinValueValidator(low), MaxValueValidator(high)]
            field.widget.attrs.update(min=low, max=high)

    def setting_values(self) -> dict:
        return {setting.name: self.cleaned_data[setting.in_form] for setting in self.settings}

    def data_digest(self) -> str:
        """The sha256 of the submitted data (and files), leaving out the buttons and the CSRF token: what a preview
        was computed from."""
        data = {key: sorted(self.data.getlist(key)) if hasattr(self.data, "getlist") else self.data[key]
                for key in sorted(self.data) if key not in (PREVIEW, PREVIEWED, "_save", "csrfmiddlewaretoken")}
        files = {}
        for key in sorted(self.files):
            upload = self.files[key]
            digest = hashlib.sha256()
            for chunk in upload.chunks():
                digest.update(chunk)
            upload.seek(0)
            files[key] = digest.hexdigest()
        return hashlib.sha256(json.dumps([data, files], sort_keys=True, default=str).encode()).hexdigest()

    @property
    def previewing(self) -> bool:
        """Whether this submission asks for a preview: the Preview button, or a launch of data other than the data
        the page's preview was computed from."""
        if not self.is_bound:
            return False
        return PREVIEW in self.data or (PREVIEWED in self.data and self.data[PREVIEWED] != self.data_digest())

    def is_valid(self) -> bool:
        return super().is_valid() and not self.previewing


def launch_form_base(settings: Sequence[Setting], *, accepts: tuple[str, ...] = CHAT) -> type[LaunchForm]:
    """What a paradigm's launch form subclasses: a :class:`LaunchForm` with a field for each setting, in their
    order, offering the models of the endpoints that take what the paradigm sends (``accepts``, its registry
    entry's)."""
    return type("LaunchFormWithSettings", (LaunchForm,),
                {"settings": tuple(settings), "accepts": tuple(accepts),
                 **{setting.in_form: setting_form_field(setting) for setting in settings}})


SHARED_FIELDS = ("name", "models", "params", "structured_output")


def launch_field_order(form: type[forms.BaseForm]) -> list[str]:
    """The order the admin shows a launch form's fields in: the audit's name; what it audits (the stored records the
    form picks: a study, a corpus, instruments, recorded scores); the models and their parameters; the paradigm's own
    fields as the form declares them (its settings first, then the fields that are the admin's alone); the engine's
    settings its Meta takes from Audit (replicates, seed, …); structured output last."""
    fields = form.base_fields
    picked = [name for name, field in fields.items()
              if isinstance(field, forms.ModelChoiceField) and name not in SHARED_FIELDS]
    own = [name for name in form.declared_fields if name not in (*SHARED_FIELDS, *picked)]
    engine = [name for name in fields if name not in (*SHARED_FIELDS, *picked, *own)]
    return ["name", *picked, "models", "params", *own, *engine, "structured_output"]
