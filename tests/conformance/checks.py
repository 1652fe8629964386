"""The conformance checks: plain functions over a registered paradigm (a :class:`registry.Paradigm`), each raising
AssertionError naming what does not conform. ``test_conformance.py`` runs them over every registered paradigm, and
over a broken one to show that they can fail.
"""
from __future__ import annotations

import csv
import dataclasses
import io
import json
import re
from collections import Counter

from django import forms
from django.core.exceptions import ValidationError
from django.test import override_settings
from rest_framework import serializers

from auditapp.engine import conversations
from auditapp.engine.launch_settings import Setting
from auditapp.engine.protocol import Outcome, ParsedReply
from auditapp.engine.registry import Paradigm
from auditapp.launch_forms import ChoiceMappingField
from auditapp.models import Audit, AuditCondition, AuditItem, AuditModel, AuditRequest
from common.api.csv_export import csv_cell
from tests.conformance.minimal_launches import MINIMAL_LAUNCHES, World, minimal_body, minimal_launch

REFUSAL = "I can't help with that."
INVALID = "@@INVALID TEMPLATE VARIABLE %s@@"
"""Rendered for a template variable that does not resolve (``string_if_invalid``) while a dashboard is checked."""


# --------------------------------------------------------------------------------------------- 1. launch schema

def check_minimal_launches(names) -> None:
    """Every registered paradigm has a minimal launch, and every minimal launch a registered paradigm."""
    for name in names:
        minimal_launch(name)
    stale = sorted(set(MINIMAL_LAUNCHES) - set(names))
    assert not stale, f"minimal launches of paradigms no longer registered: {stale}"


def check_launch_schema(paradigm: Paradigm, client, world: World) -> Audit:
    """``POST /api/audits/`` takes the paradigm's minimal body (201, a queued audit of the paradigm) and refuses a
    bad one with a 400 naming exactly the bad fields, recording nothing. Returns the queued audit."""
    entry = minimal_launch(paradigm.name)
    body = minimal_body(paradigm.name, world)
    response = client.post("/api/audits/", body, format="json")
    assert response.status_code == 201, f"{paradigm.name}: the minimal body was refused: {response.content!r}"
    audit = Audit.objects.get(pk=response.json()["id"])
    assert audit.paradigm == paradigm.name and audit.status == Audit.Status.QUEUED, (audit.paradigm, audit.status)

    n_audits = Audit.objects.count()
    for bad, fields in (({**body, **entry.bad}, entry.bad_fields),
                        ({key: value for key, value in body.items() if key != "name"}, frozenset({"name"}))):
        response = client.post("/api/audits/", bad, format="json")
        assert response.status_code == 400, (f"{paradigm.name}: a bad body was taken ({response.status_code}): "
                                             f"{sorted(set(bad) - set(body)) or 'no name'}")
        problems = response.json()
        assert set(problems) == set(fields), (f"{paradigm.name}: the 400 names {sorted(problems)}, not the bad "
                                              f"fields {sorted(fields)}: {problems}")
        assert all(problems[name] for name in fields), problems
    assert Audit.objects.count() == n_audits, f"{paradigm.name}: a refused launch recorded an audit"
    return audit


# ------------------------------------------------------------------------------------------- 2. request builder

def stored_requests(audit: Audit) -> list[conversations.ClaimedRequest]:
    """The audit's keyed requests as a worker claims them: a later turn with its earlier turns."""
    rows = [conversations.ClaimedRequest(*row) for row in AuditRequest.objects.filter(audit=audit).exclude(key="")
            .order_by("order", "id").values_list(*conversations.CONVERSATION_FIELDS)]
    later = {row.previous_id for row in rows if row.previous_id is not None}
    chains = conversations.conversations_before(later) if later else {}
    return [dataclasses.replace(row, earlier=chains[row.previous_id]) if row.previous_id else row
            for row in rows]


def _json(value, what: str) -> str:
    try:
        return json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise AssertionError(f"{what} is not JSON: {error}") from error


def check_request_builder(paradigm: Paradigm, audit: Audit) -> int:
    """The builder plans the requests that were stored (model, condition, item or unit, replicate, turn and key);
    every stored request's payload, rebuilt as a worker rebuilds it and keyed with ``key()``, gives the key stored
    on it; every payload and the manifest are JSON. Returns how many keys were checked."""
    builder = paradigm.builder(audit)
    _json(builder.manifest(), f"{paradigm.name}: manifest()")

    identity = ("audit_model_id", "condition", "item_id", "unit", "replicate", "turn")
    planned = Counter((p.audit_model.id, p.condition, p.item_id, p.unit, p.replicate, p.turn, p.key)
                      for p in builder.requests())
    stored = Counter((*row[:-1], row[-1] if row[5] == 0 else "")
                     for row in AuditRequest.objects.filter(audit=audit).values_list(*identity, "key"))
    assert planned == stored, (f"{paradigm.name}: requests() plans {sum(planned.values())} requests, "
                               f"{sum(stored.values())} are stored; first differences: "
                               f"{list((planned - stored).items())[:2]} / {list((stored - planned).items())[:2]}")

    requests = stored_requests(audit)
    assert requests, f"{paradigm.name}: the audit has no keyed request to check"
    mismatched = []
    for request in requests:
        payload = conversations.request_payload(builder, request)
        _json(payload, f"{paradigm.name}: the payload of request {request.id}")
        key = builder.key(builder.models[request.audit_model_id], payload, request.replicate)
        if key != request.key:
            mismatched.append((request.id, request.turn, request.replicate))
    assert not mismatched, (f"{paradigm.name}: {len(mismatched)} of {len(requests)} requests' payloads key to "
                            f"another key than the stored one, e.g. (id, turn, replicate) {mismatched[:3]}")
    return len(requests)


# ------------------------------------------------------------------------------- 3. refusals are never answers

def sample_requests(audit: Audit) -> list[AuditRequest]:
    """One request of each model × condition × turn (what a parser may tell apart)."""
    first: dict[tuple, AuditRequest] = {}
    for request in AuditRequest.objects.filter(audit=audit).order_by("order", "id"):
        first.setdefault((request.audit_model_id, request.condition, request.turn), request)
    return list(first.values())


def check_refusals_are_not_answers(paradigm: Paradigm, audit: Audit) -> int:
    """A refusal ("I can't help with that.") parses, for every kind of request, to a refusal or an unparseable
    reply with its reason, and an empty reply to no answer; neither gives any judgment an answer. Returns how
    many requests were tried."""
    builder = paradigm.builder(audit)
    requests = sample_requests(audit)
    assert requests, f"{paradigm.name}: the audit has no request to parse a reply for"
    for request in requests:
        where = (f"{paradigm.name}: request {request.id} (model {request.audit_model_id}, condition "
                 f"{request.condition!r}, turn {request.turn})")
        for text in (REFUSAL, ""):
            parsed = builder.parse(request, text, "stop")
            assert isinstance(parsed, ParsedReply), f"{where}: parse() returned {type(parsed).__name__}"
            answered = [j for j in parsed.judgments if j.outcome in Outcome.ANSWERED
                        or j.value is not None or j.label is not None]
            assert parsed.outcome not in Outcome.ANSWERED and parsed.label is None, (
                f"{where}: the reply {text!r} parses as an answer ({parsed.outcome}, label {parsed.label})")
            assert not answered, f"{where}: the reply {text!r} gives answered judgments {answered[:2]}"
            if text:
                assert parsed.outcome in (Outcome.REFUSAL, Outcome.UNPARSEABLE), (
                    f"{where}: a refusal parses to outcome {parsed.outcome!r}")
                assert parsed.reason, f"{where}: a refusal parses to {parsed.outcome} without a reason"
                assert all(j.reason for j in parsed.judgments), (
                    f"{where}: a refusal's judgments lack a reason: {parsed.judgments[:2]}")
    return len(requests)


# ---------------------------------------------------------------------------------------------- 4. dashboard

def check_dashboard(paradigm: Paradigm, client, audit: Audit) -> None:
    """The dashboard page renders: 200, the paradigm's template, every variable resolved (but one the template
    gives a ``|default``)."""
    from django.conf import settings

    templates = [{**engine, "OPTIONS": {**engine.get("OPTIONS", {}), "string_if_invalid": INVALID}}
                 for engine in settings.TEMPLATES]
    with override_settings(TEMPLATES=templates):
        response = client.get(f"/audits/{audit.id}/dashboard/")
    where = f"{paradigm.name}: the dashboard of a {audit.status} audit"
    assert response.status_code == 200, f"{where} answers {response.status_code}"
    used = [template.name for template in response.templates]
    assert paradigm.dashboard_template in used, f"{where} is not drawn from {paradigm.dashboard_template}: {used}"
    html = response.content.decode()
    sources = "\n".join(template.source for template in response.templates)
    unresolved = []
    for match in re.finditer(re.escape(INVALID).replace(re.escape("%s"), r"([^@]*)"), html):
        variable = match[1]
        if not re.search(r"{{\s*" + re.escape(variable) + r"\s*\|\s*default", sources):
            unresolved.append(f"{variable} (…{html[max(0, match.start() - 60):match.start()]!s}…)")
    assert not unresolved, f"{where} has unresolved variables: {unresolved}"
    check_dashboard_shell(paradigm, html, where)


SHARED_SCRIPT = "auditapp/audit_dashboard.js"
"""Progress, controls, worker status, parse quality and the drill-down: every dashboard loads it, once."""
CLASSIFICATION_TEMPLATE = "auditapp/audit_dashboard.html"
CLASSIFICATION_CHARTS = ("table.heatmap", '"chart-scatter"', '"figure-1"')
"""What only classification's chart script refers to: its heatmap tables, its scatter and its Figure 1."""


def check_dashboard_shell(paradigm: Paradigm, html: str, where: str) -> None:
    """The page has the shared shell once (one header, one progress section, one drill-down) and loads, from this
    site only, the shared script once and no script that draws classification's charts unless it is
    classification's dashboard."""
    from django.conf import settings
    from django.contrib.staticfiles import finders

    for pattern, what in ((r"<header[\s>]", "<header>"), (r'id="audit-name"', "#audit-name"),
                          (r'id="progress-section"', "#progress-section"), (r'id="drilldown"', "#drilldown"),
                          (r'id="audit-data"', "#audit-data")):
        count = len(re.findall(pattern, html))
        assert count == 1, f"{where} has {count} {what}, not one"
    sources = re.findall(r'<script\b[^>]*\bsrc="([^"]*)"', html)
    inline = [tag for tag in re.findall(r"<script\b[^>]*>", html)
              if "src=" not in tag and 'type="application/json"' not in tag]
    assert not inline, f"{where} has an inline script: {inline}"
    static_url = "/" + settings.STATIC_URL.strip("/") + "/"
    outside = [source for source in sources if not source.startswith(static_url)]
    assert not outside, f"{where} loads scripts from elsewhere: {outside}"
    paths = [source.removeprefix(static_url) for source in sources]
    assert paths.count(SHARED_SCRIPT) == 1, f"{where} loads {SHARED_SCRIPT} {paths.count(SHARED_SCRIPT)} times: {paths}"
    assert len(set(paths)) == len(paths), f"{where} loads a script twice: {paths}"
    if paradigm.dashboard_template == CLASSIFICATION_TEMPLATE:
        return
    for path in paths:
        if path.startswith("vendor/"):
            continue
        found = finders.find(path)
        assert found, f"{where} loads {path}, which is not a static file"
        with open(found, encoding="utf-8") as handle:
            text = handle.read()
        drawn = [marker for marker in CLASSIFICATION_CHARTS if marker in text]
        assert not drawn, f"{where} loads {path}, which draws classification's charts ({', '.join(drawn)})"


# ---------------------------------------------------------------------------------------------- 5. tables

def _json_rows(client, url: str) -> list[dict]:
    rows, page = [], 1
    while True:
        response = client.get(url, {"page_size": 10000, "page": page})
        assert response.status_code == 200, f"{url}: {response.status_code} {response.content[:300]!r}"
        body = response.json()
        rows += body["results"]
        if not body.get("next"):
            return rows
        page += 1


def _csv_text(response) -> str:
    content = b"".join(response.streaming_content) if response.streaming else response.content
    return content.decode("utf-8-sig")


def _as_cell(value) -> str:
    """A JSON value as the CSV export writes it, read back as text."""
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n", quoting=csv.QUOTE_NONNUMERIC).writerow([csv_cell(value)])
    return next(csv.reader(io.StringIO(buffer.getvalue())))[0]


def check_tables(paradigm: Paradigm, client, audit: Audit) -> dict[str, int]:
    """Every named table is listed, answers JSON (every page) and CSV (``?format=csv`` and ``Accept: text/csv``
    alike) with the same columns and the same rows in the same order. Returns the rows of each table."""
    listed = client.get(f"/api/audits/{audit.id}/tables/").json()
    assert [entry["name"] for entry in listed] == list(paradigm.tables), (
        f"{paradigm.name}: the tables listed {[entry['name'] for entry in listed]} are not the paradigm's "
        f"{list(paradigm.tables)}")
    counts = {}
    for name in paradigm.tables:
        url = f"/api/audits/{audit.id}/tables/{name}/"
        records = _json_rows(client, url)
        response = client.get(url, {"format": "csv"})
        assert response.status_code == 200 and response["Content-Type"].startswith("text/csv"), (
            f"{paradigm.name}: table {name} as CSV: {response.status_code} {response['Content-Type']}")
        text = _csv_text(response)
        accepted = client.get(url, HTTP_ACCEPT="text/csv")
        assert accepted.status_code == 200 and _csv_text(accepted) == text, (
            f"{paradigm.name}: table {name}: Accept: text/csv gives other CSV than ?format=csv")
        header, *rows = list(csv.reader(io.StringIO(text)))
        if records:
            assert header == list(records[0]), f"{paradigm.name}: table {name}: CSV columns {header} ≠ JSON's"
        assert len(rows) == len(records), (f"{paradigm.name}: table {name}: {len(rows)} CSV rows, "
                                           f"{len(records)} JSON rows")
        for number, (row, record) in enumerate(zip(rows, records, strict=True), start=1):
            expected = [_as_cell(record[column]) for column in header]
            assert row == expected, f"{paradigm.name}: table {name}, row {number}: CSV {row} ≠ JSON {expected}"
        counts[name] = len(rows)
    return counts


# ------------------------------------------------------------------------------- 6. admin form and serializer

class FormDiffers(AssertionError):
    """The admin launch form does not take, or takes otherwise, what the API serializer takes."""

    def __init__(self, paradigm: str, differences: list[str]):
        self.differences = differences
        super().__init__(f"{paradigm}: the admin launch form and the API differ: " + "; ".join(differences))


def _flat(values: dict, prefix: str = "") -> dict:
    flat = {}
    for key, value in values.items():
        if isinstance(value, dict) and value and key not in ("score_kinds", "material"):
            flat.update(_flat(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def _form_value(value):
    if isinstance(value, bool):
        return "on" if value else None
    if isinstance(value, (list, tuple)):
        return [str(getattr(v, "pk", v)) for v in value]
    if isinstance(value, dict):
        return json.dumps(value)
    return str(getattr(value, "pk", value))


def form_data(paradigm: Paradigm, body: dict) -> tuple[dict, list[str]]:
    """The admin form's data for the settings of an API body: each setting in its form field (by name, under the
    form name its declaration gives, or as ``form_names`` renames it), the models as the form lists them, every other
    field at the value the admin page shows first (its initial); and the body's settings the form has no field for."""
    form = paradigm.launch_form()
    declared = {setting.name: setting.in_form for setting in paradigm.settings}
    renames = minimal_launch(paradigm.name).form_names
    data, unplaced = {}, []
    models = body.get("models", [])
    data["models"] = [f"{choice['endpoint']}:{choice['model']}" for choice in models]
    params = {json.dumps(choice.get("params", {}), sort_keys=True) for choice in models}
    if len(params) > 1:
        unplaced.append("models.params (the form gives every model the same parameters)")
    data["params"] = next(iter(params), "{}")
    if any(choice.get("label") for choice in models):
        unplaced.append("models.label")
    for path, value in _flat({k: v for k, v in body.items() if k not in ("paradigm", "models")}).items():
        # A declared setting the API nests in an object (validity.action) is flat in the form, under its form name.
        name = renames.get(path) or declared.get(path.rpartition(".")[2], path)
        if name not in form.fields:
            unplaced.append(f"{path} (no form field)")
            continue
        data[name] = _form_value(value)
    for name, form_field in form.fields.items():
        if name in data:
            continue
        initial = form.get_initial_for_field(form_field, name)
        if initial is not None:
            data[name] = _form_value(initial)
    return {name: value for name, value in data.items() if value is not None}, unplaced


def launch_settings(audit: Audit) -> dict:
    """What a launch decided, beside the audit's name and who launched it when."""
    return {
        **{name: getattr(audit, name) for name in ("paradigm", "study_id", "replicates", "seed", "use_cache",
                                                   "structured_output", "error_budget", "unparsed", "n_resamples",
                                                   "parallel_tasks", "status")},
        "corpus": audit.corpus.content_hash if audit.corpus_id else None,
        "design": audit.design,
        "models": list(AuditModel.objects.filter(audit=audit).order_by("position").values_list(
            "endpoint_id", "model", "params", "label")),
        "conditions": list(AuditCondition.objects.filter(audit=audit).order_by("position").values_list(
            "condition", "template_id", "example_set", "examples")),
        "items": sorted(AuditItem.objects.filter(audit=audit).values_list("item_id", "weighted_label",
                                                                          "majority_label")),
    }


def _differences(api: dict, form: dict, prefix: str = "") -> list[str]:
    differences = []
    for key in sorted(set(api) | set(form), key=str):
        missing = object()
        a, f = api.get(key, missing), form.get(key, missing)
        if isinstance(a, dict) and isinstance(f, dict):
            differences += _differences(a, f, f"{prefix}{key}.")
        elif a != f:
            differences.append(f"{prefix}{key}: API {'(absent)' if a is missing else repr(a)}, "
                               f"admin form {'(absent)' if f is missing else repr(f)}")
    return differences


def check_form_agrees_with_serializer(paradigm: Paradigm, world: World, user) -> None:
    """The settings of the minimal body that the API serializer takes, given to the admin launch form (renamed as
    ``form_names`` says, every other field left at what the page shows), are taken by the form too, and launch the
    same audit (same settings, design, corpus, models, conditions and items). Raises FormDiffers naming each
    difference."""
    body = minimal_body(paradigm.name, world)
    serializer = paradigm.launch_serializer(data=body)
    assert serializer.is_valid(), f"{paradigm.name}: the serializer refuses the minimal body: {serializer.errors}"
    data, differences = form_data(paradigm, body)
    form = paradigm.launch_form(data=data)
    if not form.is_valid():
        raise FormDiffers(paradigm.name, [*differences, *(f"the form refuses {name}: {' '.join(errors)}"
                                                         for name, errors in form.errors.items())])
    values = dict(serializer.validated_data)
    values.pop("structured_output")
    by_api = launch_settings(paradigm.launch(values, created_by=user))
    by_form = launch_settings(paradigm.launch_from_form(form, user))
    differences += _differences(by_api, by_form)
    if differences:
        raise FormDiffers(paradigm.name, differences)


# ------------------------------------------------------------------------------- 7. declared settings, read alike

def api_field_of(serializer: serializers.Serializer, name: str) -> serializers.Field | None:
    """The serializer's field of that name, at the top of the body or in an object nested in it."""
    if name in serializer.fields:
        return serializer.fields[name]
    nested = [field.fields[name] for field in serializer.fields.values()
              if isinstance(field, serializers.Serializer) and name in field.fields]
    return nested[0] if nested else None


def api_rule(field: serializers.Field) -> dict:
    """What an API field states, read from DRF's own attributes: bounds, longest text, choices with their labels,
    default, help."""
    chooser = field.child if isinstance(field, (serializers.ListField, serializers.DictField)) else field
    default = field.default() if callable(field.default) else field.default
    return {"minimum": getattr(field, "min_value", None), "maximum": getattr(field, "max_value", None),
            "max_length": field.max_length if isinstance(field, serializers.CharField) else None,
            "choices": list(chooser.choices.items()) if isinstance(chooser, serializers.ChoiceField) else [],
            "default": default, "help": field.help_text}


def form_rule(field: forms.Field) -> dict:
    """What an admin form field states, read from Django's own attributes (as :func:`api_rule`); a choice's blank
    entry is how the form leaves it unset, not a choice."""
    if isinstance(field, ChoiceMappingField | forms.ChoiceField):
        choices = [(value, str(label)) for value, label in field.choices if value != ""]
    else:
        choices = []
    return {"minimum": getattr(field, "min_value", None), "maximum": getattr(field, "max_value", None),
            "max_length": field.max_length if isinstance(field, forms.CharField) else None,
            "choices": choices, "default": field.initial, "help": field.help_text}


def declared_rule(setting: Setting) -> dict:
    """What a declaration says, in the terms of :func:`api_rule` and :func:`form_rule`."""
    return {"minimum": setting.minimum, "maximum": setting.maximum, "max_length": setting.max_length,
            "choices": [(value, label) for value, label in setting.choices if value is not None],
            "default": list(setting.default) if isinstance(setting.default, tuple) else setting.default,
            "help": setting.help}


def trial_values(setting: Setting) -> list:
    """Values to give a setting as the API body would: each bound and one past it, a text at and past its longest,
    each choice and one that is not, an empty text or null where the setting is optional, a value of the wrong
    type."""
    if setting.kind in ("integer", "number"):
        values = [setting.default, "many"]
        if setting.minimum is not None:
            values += [setting.minimum, setting.minimum - 1]
        if setting.maximum is not None:
            values += [setting.maximum, setting.maximum + 1]
        return values
    if setting.kind == "text":
        longest = setting.max_length or 20
        return ["x" * longest, "x" * (longest + 1), setting.default]
    if setting.kind == "boolean":
        return [True, False]
    if setting.kind == "choice":
        return [*setting.values, "not-a-choice"]
    if setting.kind == "choices":
        return [[value] for value in setting.values] + [list(setting.values), [], ["not-a-choice"]]
    return [{"name": value} for value in setting.values] + [{}, {"name": "not-a-choice"}, ["not", "an object"]]


def form_input(setting: Setting, value):
    """A body's value as the admin page posts it: unset or false blank, true "on" (a ticked box), a mapping as the
    JSON typed into its box, the ticked choices as a list, anything else as text."""
    if value is None or value is False:
        return ""
    if value is True:
        return "on"
    if setting.kind == "mapping":
        return json.dumps(value)
    return value if isinstance(value, list) else str(value)


def _read_by_api(field: serializers.Field, value) -> str:
    """How the API reads a value, in words: the repr tells 3 from 3.0 and a list from a tuple."""
    try:
        return f"taken as {field.run_validation(value)!r}"
    except serializers.ValidationError:
        return "refused"


def _read_by_form(field: forms.Field, value) -> str:
    try:
        return f"taken as {field.clean(value)!r}"
    except ValidationError:
        return "refused"


def setting_differences(setting: Setting, api: serializers.Field, admin: forms.Field) -> list[str]:
    """How a setting's API field and admin form field differ from its declaration or from each other: in what they
    state (bounds, longest text, choices, default, help), or in how they read a trial value (:func:`trial_values`:
    taken as another value, or taken by one and refused by the other)."""
    declared, by_api, by_form = declared_rule(setting), api_rule(api), form_rule(admin)
    differences = [f"{setting.name}: {key} declared {declared[key]!r}, API {by_api[key]!r}, admin form {by_form[key]!r}"
                   for key in declared if not declared[key] == by_api[key] == by_form[key]]
    for value in trial_values(setting):
        api_reads, form_reads = _read_by_api(api, value), _read_by_form(admin, form_input(setting, value))
        if api_reads != form_reads:
            differences.append(f"{setting.name}: {value!r} is {api_reads} by the API, {form_reads} by the admin "
                               "form")
    return differences


def check_settings_agree(paradigm: Paradigm) -> int:
    """Every setting the paradigm declares is a field of its launch serializer (in the body or an object nested in
    it) and of its admin form (under its form name), and neither differs from the declaration or the other
    (:func:`setting_differences`). Raises FormDiffers naming each difference; returns how many settings were
    checked."""
    serializer, form = paradigm.launch_serializer(), paradigm.launch_form.base_fields
    differences = []
    for setting in paradigm.settings:
        api, admin = api_field_of(serializer, setting.name), form.get(setting.in_form)
        if api is None or admin is None:
            differences.append(f"{setting.name}: no field in the {'API body' if api is None else 'admin form'}")
        else:
            differences += setting_differences(setting, api, admin)
    if differences:
        raise FormDiffers(paradigm.name, differences)
    return len(paradigm.settings)
