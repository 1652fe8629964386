"""No value is a 5xx: every writable field of every write the OpenAPI schema lists, given a value no field can take.

The poisons are the numbers JSON can spell but no column stores (``1e400`` and ``-1e400``, which Python's json reads
as infinities, ``NaN``, ``Infinity``), a NUL character (which PostgreSQL cannot store in text or jsonb) and a lone
surrogate (which no encoder writes, so an error message echoing it could not be rendered). Each goes, one at a time,
into each field the schema's request body names (nested ones too, and as a key of a free-form object), on top of a
body that is otherwise valid where one is easy to build from the objects of :func:`seeded_ids`; form and multipart
bodies get the same values as text. Any answer is fine but a 5xx.
"""
from __future__ import annotations

import json
import urllib.parse
from collections.abc import Iterator
from itertools import pairwise

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import transaction
from django.test.client import BOUNDARY, MULTIPART_CONTENT, encode_multipart

from auditapp.models import LLMEndpoint
from coding.codebook_services import codebooks_sync_shipped
from coding.round_services import round_create
from psychometrics.services import instruments_sync_shipped
from tests.auditapp.test_audit_dashboard_view import COMPLETED_PLAN, build_audit
from tests.factories import autalic_like_csv, make_audit_study

pytestmark = [pytest.mark.slow, pytest.mark.django_db]

MARK = "__poison__"
JSON_POISONS = {"1e400": "1e400", "-1e400": "-1e400", "NaN": "NaN", "Infinity": "Infinity",
                "NUL": '"a\\u0000b"', "surrogate": '"a\\ud800b"'}
KEY_POISONS = ("NUL", "surrogate")  # the poisons that can be an object's key
FORM_POISONS = {"1e400": b"1e400", "-1e400": b"-1e400", "NaN": b"NaN", "Infinity": b"Infinity",
                "NUL": b"a\x00b", "surrogate": "a\ud800b".encode("utf-8", "surrogatepass"),
                # A form's text that a JSON field reads as JSON
                "NUL as JSON": b'"a\\u0000b"', "surrogate as JSON": b'"a\\ud800b"'}
FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")
WRITES = ("post", "put", "patch")


@pytest.fixture
def seeded_ids(audit_tasks_off) -> dict[str, int]:
    """A study with a ground truth, an endpoint, a completed audit, a shipped codebook and instrument, a coding round
    of that audit with one lens, and two codes of that lens: what a valid body of each write refers to."""
    study = make_audit_study(12, n_examples=3)
    endpoint = LLMEndpoint.objects.create(name="poison endpoint", base_url="http://127.0.0.1:9")
    audit = build_audit(COMPLETED_PLAN, name="poison audit")
    codebook = codebooks_sync_shipped()[0]
    coding_round = round_create(audit=audit, codebooks=[codebook.id], sample_size=4, seed=1)
    lens = coding_round.lenses.get()
    codes = list(lens.codebook.codes.values_list("id", flat=True)[:2])
    return {"study": study.id, "endpoint": endpoint.id, "audit": audit.id, "codebook": codebook.id,
            "team": study.team_id,
            "coding_round": coding_round.id, "lens": lens.id, "codes": codes,
            "instrument": instruments_sync_shipped()[0].id}


def path_id(path: str, ids: dict) -> int:
    """The seeded object a templated path's ``{id}`` names."""
    kind = {"studies": "study", "audits": "audit", "codebooks": "codebook", "coding-rounds": "coding_round",
            "teams": "team", "endpoints": "endpoint"}
    return ids[kind[path.split("/")[2]]]


def base_body(method: str, path: str, variant: str | None, ids: dict) -> dict:
    """A body that is valid, or close to it, so that a poisoned field is read past the fields before it."""
    model = {"endpoint": ids["endpoint"], "model": "model-a"}
    launch = {"paradigm": variant, "name": "poisoned", "models": [model], "study": ids["study"],
              "conditions": ["zs"], "instruments": [ids["instrument"]]}
    bodies = {
        ("post", "/api/studies/"): {"name": "Poisoned", "slug": "poisoned"},
        ("post", "/api/endpoints/"): {"name": "poisoned", "protocol": "openai", "base_url": "http://127.0.0.1:9"},
        ("put", "/api/endpoints/{id}/"): {"name": "poisoned", "protocol": "openai", "base_url": "http://127.0.0.1:9"},
        ("post", "/api/audits/"): launch,
        ("post", "/api/audits/{id}/extractions/"): {"mode": "model", "endpoint": ids["endpoint"], "model": "m"},
        ("post", "/api/codebooks/"): {"name": "poisoned", "codes": [{"name": "a", "examples": ["e"]}]},
        ("put", "/api/codebooks/{id}/"): {"name": "poisoned", "codes": [{"name": "a", "examples": ["e"]}]},
        ("post", "/api/coding-rounds/"): {"audit": ids["audit"], "codebooks": [ids["codebook"]], "sample_size": 4},
        ("post", "/api/coding-rounds/{id}/coders/"): {"lens": ids["lens"], "name": "poisoned"},
        ("put", "/api/coding-rounds/{id}/mappings/"): {"mappings": [{"name": "m", "codes": ids["codes"]}]},
        ("post", "/api/corpora/"): {"name": "poisoned", "paradigm": "names"},
        ("post", "/api/teams/"): {"name": "poisoned"},
        ("post", "/api/teams/{id}/members/"): {"username": "poisoned", "role": "viewer"},
    }
    return json.loads(json.dumps(bodies.get((method, path), {})))


def resolve(schema: dict, components: dict) -> dict:
    while "$ref" in schema or "allOf" in schema:
        schema = components[schema["$ref"].rsplit("/", 1)[1]] if "$ref" in schema else schema["allOf"][0]
    return schema


def field_paths(schema: dict, components: dict, path: tuple = ()) -> Iterator[tuple]:
    """The path of every value in a body of ``schema``: each field, each nested field, the first item of each array,
    a member ``x`` of each free-form object and (as ``(..., MARK)``) one of its keys."""
    schema = resolve(schema, components)
    if path:
        yield path
    for name, member in schema.get("properties", {}).items():
        yield from field_paths(member, components, (*path, name))
    if "items" in schema:
        yield from field_paths(schema["items"], components, (*path, 0))
    if schema.get("additionalProperties") is not None and "properties" not in schema:
        yield (*path, "x")
        yield (*path, MARK)


def with_mark(body: dict, path: tuple) -> dict:
    """``body`` with MARK at ``path`` (as the key itself when the path ends in MARK), made as needed."""
    *parents, last = path
    node = body
    for step, following in zip(parents, path[1:], strict=False):
        empty = [] if isinstance(following, int) else {}
        if isinstance(step, int):
            if not node:
                node.append(empty)
            if not isinstance(node[0], type(empty)):
                node[0] = empty
        elif not isinstance(node.get(step), type(empty)):
            node[step] = empty
        node = node[step]
    if last == MARK:
        node[MARK] = 1
    elif isinstance(last, int):
        node[:1] = [MARK]
    else:
        node[last] = MARK
    return body


def operations(schema: dict) -> Iterator[tuple[str, str, str, str | None, dict]]:
    """(method, path, media type, launch paradigm or None, body schema) of every write with a body: as JSON, and as
    a form where it takes one (urlencoded or multipart: Django reads both into the same fields)."""
    components = schema["components"]["schemas"]
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            content = operation.get("requestBody", {}).get("content", {}) if method in WRITES else {}
            forms = [media_type for media_type in FORM_TYPES if media_type in content]
            for media_type in ["application/json", *forms[:1]] if "application/json" in content else forms[:1]:
                ref = content[media_type]["schema"]["$ref"]
                # A polymorphic body (an audit's launch): each paradigm's own fields, under its name.
                variants = resolve({"$ref": ref}, components).get("discriminator", {}).get("mapping", {None: ref})
                for name, variant in variants.items():
                    yield method, path, media_type, name, resolve({"$ref": variant}, components)


def json_cases(base: dict, paths: Iterator[tuple]) -> Iterator[tuple[str, bytes, str]]:
    for path in paths:
        text = json.dumps(with_mark(json.loads(json.dumps(base)), path))
        for poison, fragment in JSON_POISONS.items():
            if path[-1] != MARK or poison in KEY_POISONS:
                yield f"{form_key(path)} = {poison}", text.replace(f'"{MARK}"', fragment).encode(), "application/json"


def form_key(path: tuple) -> str:
    """How DRF names a nested value in a form: ``models[0]params.x`` for ``("models", 0, "params", "x")``."""
    key = str(path[0])
    for before, step in pairwise(path):
        key += f"[{step}]" if isinstance(step, int) else (step if isinstance(before, int) else f".{step}")
    return key


def form_values(value, path: tuple = ()) -> dict[str, str]:
    """``value`` (a JSON body) as the flat fields of a form."""
    if isinstance(value, dict):
        return {key: text for name, member in value.items() for key, text in form_values(member, (*path, name)).items()}
    if isinstance(value, list):
        return {key: text for n, item in enumerate(value) for key, text in form_values(item, (*path, n)).items()}
    return {form_key(path): str(value)}


def form_cases(variant: dict, components: dict, media_type: str, base: dict, paths: Iterator[tuple]
               ) -> Iterator[tuple[str, bytes, str]]:
    files = [name for name, member in variant.get("properties", {}).items()
             if resolve(member, components).get("format") == "binary"]
    for path in paths:
        if path[0] in files:
            continue
        values = form_values(with_mark(json.loads(json.dumps(base)), path))
        if media_type == "multipart/form-data":
            uploads = {name: SimpleUploadedFile(f"{name}.csv", autalic_like_csv(3)) for name in files}
            body, content_type = encode_multipart(BOUNDARY, {**values, **uploads}), MULTIPART_CONTENT
        else:
            body, content_type = urllib.parse.urlencode(values).encode(), media_type
        for poison, raw in FORM_POISONS.items():
            value = raw if content_type == MULTIPART_CONTENT else urllib.parse.quote_from_bytes(raw).encode()
            yield f"{form_key(path)} = {poison}", body.replace(MARK.encode(), value), content_type


def test_no_poisoned_field_of_any_write_is_a_5xx(api_client, client, seeded_ids):
    schema = client.get("/api/schema/?format=json").json()
    components = schema["components"]["schemas"]
    api_client.raise_request_exception = False
    failures, done = [], set()
    for method, path, media_type, paradigm, variant in operations(schema):
        url = path.replace("{id}", str(path_id(path, seeded_ids))) if "{id}" in path else path
        base = base_body(method, path, paradigm, seeded_ids)
        # A field every paradigm's launch shares is poisoned once.
        paths = [p for p in field_paths(variant, components) if (method, path, media_type, p) not in done]
        done.update((method, path, media_type, p) for p in paths)
        cases = (json_cases(base, paths) if media_type == "application/json"
                 else form_cases(variant, components, media_type, base, paths))
        for label, body, content_type in cases:
            # Each case alone: what one stored (or a failed statement, on PostgreSQL) never reaches the next.
            with transaction.atomic():
                response = getattr(api_client, method)(url, body, content_type=content_type)
                transaction.set_rollback(True)
            if response.status_code >= 500:
                failures.append(f"{method.upper()} {path} [{media_type}{', ' + paradigm if paradigm else ''}] "
                                f"{label}: {response.status_code}")
    assert {(method, path) for method, path, *_ in done} >= {
        ("post", "/api/audits/"), ("post", "/api/endpoints/"), ("put", "/api/coding-rounds/{id}/mappings/"),
        ("post", "/api/studies/{id}/imports/")}
    assert not failures, "\n".join(failures)
