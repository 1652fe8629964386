"""What every paradigm's admin launch form shares: the models to ask (from the endpoints' last listing) and their
generation parameters, and whether their output is constrained (structured output). A paradigm's form (its adapter's
``launch_form``) mixes :class:`ModelsFieldsMixin` into a ModelForm of Audit; the admin shows ``structured_output``
below the paradigm's own fields and applies it after the paradigm's launch."""
from __future__ import annotations

from django import forms

from auditapp import llm_clients
from auditapp.engine.launch import ModelChoice
from auditapp.models import LLMEndpoint


class ModelsFieldsMixin(forms.Form):
    """The listed models to audit and their generation parameters (use the endpoint action to list them)."""

    models = forms.MultipleChoiceField(widget=forms.CheckboxSelectMultiple, choices=(),
                                       help_text="Models from the endpoints' last listing.")
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
        self.fields["models"].choices = [
            (f"{endpoint.id}:{model['name']}", f"{endpoint.name} — {model['name']}")
            for endpoint in LLMEndpoint.objects.all() for model in endpoint.listed_models]

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
