"""OpenAPI schema post-processing: the error answers every operation can give, documented once.

drf-spectacular documents the success answers each view declares; the error answers come from the shared
machinery (authentication, permissions, the URL's object lookup, content negotiation, pagination, request
validation), so they are added here, to every operation they apply to, instead of on each view. An
operation that answers CSV (``?format=csv``) gives its errors as CSV too (see ``common.api.csv_export``).
"""
from __future__ import annotations

import copy

from drf_spectacular import openapi
from drf_spectacular.plumbing import force_instance
from rest_framework import serializers

ERROR_SCHEMA = {
    "type": "object",
    "properties": {"detail": {"type": "string", "description": "What is wrong."}},
    "required": ["detail"],
}
VALIDATION_ERROR_SCHEMA = {
    "type": "object",
    "description": "Every problem: field name → its messages (a nested body nests the same way), or `detail` "
                   "with a list of `problems` for an upload.",
    "additionalProperties": {},
}
ERROR_RESPONSES = {
    "400": ("Bad input, naming every problem; nothing is stored.", "ValidationErrors"),
    "401": ("No credentials: send `Authorization: Token <key>`.", "Error"),
    "403": ("The user is not staff.", "Error"),
    "404": ("No such object (the id in the path), or no such page.", "Error"),
    "406": ("The `format` asked for (or the Accept header) is not offered.", "Error"),
}


def _error_codes(path: str, method: str, operation: dict) -> list[str]:
    codes = ["401", "403", "406"]
    query = {p["name"] for p in operation.get("parameters", []) if p.get("in") == "query"}
    if method in ("post", "put", "patch") or "page_size" in query:
        codes.append("400")
    if "{" in path or "page" in query:
        codes.append("404")
    return codes


def document_error_responses(result: dict, generator, request, public) -> dict:
    """A POSTPROCESSING_HOOKS entry: add the shared error answers an operation does not document itself."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas.setdefault("Error", ERROR_SCHEMA)
    schemas.setdefault("ValidationErrors", VALIDATION_ERROR_SCHEMA)
    for path, operations in result.get("paths", {}).items():
        for method, operation in operations.items():
            responses = operation.setdefault("responses", {})
            media_types = ["application/json"]
            if any("text/csv" in response.get("content", {}) for response in responses.values()):
                media_types.append("text/csv")
            for code in _error_codes(path, method, operation):
                if code not in responses:
                    description, component = ERROR_RESPONSES[code]
                    schema = {"$ref": f"#/components/schemas/{component}"}
                    responses[code] = {"description": description,
                                       "content": {media_type: {"schema": schema} for media_type in media_types}}
    return result


# What DRF's text fields take, as a pattern: no NUL character and no lone surrogate (DRF's own validators, and the
# JSON parser's refusal anywhere in a body), and, where blank is refused, a character that is not whitespace (a
# text field trims its value before it checks that it is not blank).
STORABLE_TEXT = r"^[^\u0000\ud800-\udfff]*$"
NON_BLANK_STORABLE_TEXT = r"^[^\u0000\ud800-\udfff]*[^\s\u0000\ud800-\udfff][^\u0000\ud800-\udfff]*$"


def text_pattern(field: serializers.CharField) -> str:
    """The pattern of the values ``field`` accepts (besides its lengths)."""
    if field.allow_blank or not field.trim_whitespace:
        return STORABLE_TEXT
    return NON_BLANK_STORABLE_TEXT


RULES_KEY = "x-request-rules"


def state_request_rules(result: dict, generator, request, public) -> dict:
    """A POSTPROCESSING_HOOKS entry, after ``postprocess_schema_enums``: merge each component's cross-field rules
    (a serializer's ``schema_rules``) into it."""
    for component in result.get("components", {}).get("schemas", {}).values():
        component.update(component.pop(RULES_KEY, {}))
    return result


class AutoSchema(openapi.AutoSchema):
    """drf-spectacular's schema, stating the rules of a request body it leaves out:

    - a text field's pattern (:func:`text_pattern`), unless the field has its own (a RegexField's, a SlugField's);
    - the least and most items of a nested serializer's list (``Serializer(many=True, min_length=…, max_length=…)``);
    - ``additionalProperties: false`` for a serializer whose ``refuses_unknown_fields`` is true (its body is read by
      a parser that names an unknown key as a problem);
    - a serializer's ``schema_field_rules``: field name → keywords added to that field's request schema, for what
      its validators check that drf-spectacular cannot read (an exclusive bound);
    - a serializer's ``schema_rules``: a dict (or a callable giving one) merged into its request component, for what
      its ``validate`` checks across fields (``anyOf`` / ``oneOf`` over its properties); not a PATCH body's.
    """

    def _map_basic_serializer(self, serializer, direction):
        schema = super()._map_basic_serializer(serializer, direction)
        if direction != "request":
            return schema
        serializer = force_instance(serializer)
        properties = schema.get("properties", {})
        for name, field in serializer.fields.items():
            if name in properties:
                _state_field_rules(field, properties[name])
        if getattr(serializer, "refuses_unknown_fields", False):
            schema["additionalProperties"] = False
        for name, rules in getattr(serializer, "schema_field_rules", {}).items():
            properties[name].update(copy.deepcopy(rules))
        # A PATCH body holds only the fields it changes: the rules hold on the object as changed, not on the body.
        if (rules := getattr(serializer, "schema_rules", {})) and self.method != "PATCH":
            # Merged by state_request_rules, after drf-spectacular's enum hook (which would name their enums).
            schema[RULES_KEY] = copy.deepcopy(rules() if callable(rules) else rules)
        return schema


def _state_field_rules(field, schema: dict) -> None:
    if field.read_only:
        return
    if isinstance(field, serializers.ListSerializer):
        # ListSerializer's min_length and max_length (DRF 3.16) are missing from djangorestframework-stubs 3.16.9.
        min_length: int | None = field.min_length  # type: ignore[attr-defined]
        max_length: int | None = field.max_length  # type: ignore[attr-defined]
        if min_length is not None:
            schema["minItems"] = min_length
        if max_length is not None:
            schema["maxItems"] = max_length
    elif isinstance(field, serializers.ListField) and "items" in schema:
        _state_field_rules(field.child, schema["items"])
    elif isinstance(field, serializers.DictField) and isinstance(schema.get("additionalProperties"), dict):
        _state_field_rules(field.child, schema["additionalProperties"])
    elif isinstance(field, serializers.CharField) and schema.get("type") == "string":
        if not {"pattern", "format", "enum"} & set(schema):
            schema["pattern"] = text_pattern(field)
    elif isinstance(field, serializers.CharField) and {"type": "string", "maxLength": 0} in schema.get("oneOf", []):
        # A blank-allowed field with a pattern or format is one of (that, or ""): "" must match one branch only.
        for branch in schema["oneOf"]:
            if branch.get("type") == "string" and branch.get("maxLength") != 0:
                branch.setdefault("minLength", 1)
