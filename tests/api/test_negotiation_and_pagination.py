"""Bad ``?format=``, ``?page=`` and ``?page_size=`` values are 4xx answers naming what is wrong, in every format."""
from __future__ import annotations

import pytest

from tests.factories import make_study

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("path", ["/api/studies/", "/api/endpoints/", "/api/instruments/"])
@pytest.mark.parametrize("format_", ["xlsx", ""])
def test_an_unknown_or_empty_format_is_a_406_naming_the_formats_offered(api_client, path, format_):
    response = api_client.get(f"{path}?format={format_}")
    assert response.status_code == 406
    assert response["Content-Type"] == "application/json"
    detail = response.json()["detail"]
    assert f"format {format_!r} is not offered" in detail and "json" in detail and "csv" in detail


def test_an_unknown_format_on_an_object_is_a_406_not_a_404(api_client):
    study = make_study()
    assert api_client.get(f"/api/studies/{study.id}/?format=xml").status_code == 406
    assert api_client.get(f"/api/studies/{study.id}/?format=json").status_code == 200


@pytest.mark.parametrize("query", ["page_size=abc", "page_size=0", "page_size=-3", "page_size=", "page_size=1.5",
                                   "page=abc", "page=0", "page=-979", "page="])
@pytest.mark.parametrize("format_", ["json", "csv"])
def test_a_bad_page_or_page_size_is_a_400_naming_it(api_client, query, format_):
    study = make_study()
    name, value = query.split("=")
    for path in ("/api/studies/", f"/api/studies/{study.id}/labels/", "/api/audits/"):
        response = api_client.get(f"{path}?{query}&format={format_}")
        assert response.status_code == 400, (path, response.content)
        text = response.content.decode()
        assert name in text and f"not {value!r}" in text.replace('""', '"')


def test_good_pages_still_work_and_a_large_page_size_is_capped(api_client):
    for i in range(3):
        make_study(slug=f"s{i}")
    assert len(api_client.get("/api/studies/?page_size=2&page=2").json()["results"]) == 1
    assert api_client.get("/api/studies/?page=3&page_size=2").status_code == 404
    assert api_client.get("/api/studies/?page=last&page_size=2").status_code == 200
    assert len(api_client.get("/api/studies/?page_size=50000").json()["results"]) == 3
