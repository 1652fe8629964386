"""OpenAPI schema post-processing: the error answers every operation can give, documented once.

drf-spectacular documents the success answers each view declares; the error answers come from the shared
machinery (authentication, permissions, the URL's object lookup, content negotiation, pagination, request
validation), so they are added here, to every operation they apply to, instead of on each view. An
operation that answers CSV (``?format=csv``) gives its errors as CSV too (see ``common.api.csv_export``).
"""
from __future__ import annotations

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
