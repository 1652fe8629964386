"""``GET /api/``: where a script starts. Every resource it names answers at its address, and it lists every
registered paradigm."""
from __future__ import annotations

import json

import pytest

from auditapp.engine import registry

pytestmark = pytest.mark.django_db


def test_the_root_names_every_resource_at_an_address_that_answers(api_client, client):
    root = client.get("/api/")  # anyone may read it: it names routes, not data
    assert root.status_code == 200
    body = root.json()
    assert {"studies", "instruments", "endpoints", "corpora", "audits", "teams", "schema"} <= set(body["resources"])
    assert [paradigm["name"] for paradigm in body["paradigms"]] == list(registry.PARADIGMS)
    for name, resource in body["resources"].items():
        assert resource["url"].startswith("http://testserver/api/") and resource["description"], name
        answer = api_client.get(resource["url"].removeprefix("http://testserver"))
        assert answer.status_code == 200, (name, answer.status_code)
        if name not in ("schema", "docs"):
            assert set(answer.json()) == {"count", "next", "previous", "results"}, name  # every list paginated alike
    assert client.get("/api/studies/").status_code in (401, 403)


@pytest.mark.parametrize("path", ["/api/nothing-here/", "/api/audits/abc/", "/api/endpoints/1/nope/"])
def test_a_path_no_api_route_matches_is_a_json_404_naming_where_the_routes_are(api_client, path):
    response = api_client.get(path)
    assert response.status_code == 404 and response["Content-Type"].startswith("application/json")
    assert response.json()["detail"] == (f"Not found: no API route is {path!r}. The routes are listed at /api/ and "
                                         "described at /api/docs/.")


def test_a_path_no_page_matches_outside_the_api_is_the_sites_page(client):
    response = client.get("/nothing-here/")
    assert response.status_code == 404 and response["Content-Type"].startswith("text/html")


def test_a_view_under_the_api_that_finds_nothing_is_a_plain_json_404(rf):
    from django.http import Http404

    from auditapp.views import not_found

    response = not_found(rf.get("/api/studies/1/items/"), Http404("no such study"))
    assert response.status_code == 404 and json.loads(response.content) == {"detail": "Not found."}
