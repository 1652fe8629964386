"""A study's text fields take text only and its annotators per item a number every database stores: both are 400s
naming the field, on SQLite as on PostgreSQL (schemathesis found SQLite storing 4,055,614,977 and the name -5)."""
from __future__ import annotations

import pytest

from annotation.models import Study

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(("change", "field"), [
    ({"name": -5}, "name"),
    ({"slug": 123}, "slug"),
    ({"annotators_per_item": 4055614977}, "annotators_per_item"),
    ({"annotators_per_item": 0}, "annotators_per_item"),
])
def test_a_study_with_a_wrong_field_is_a_400_naming_it(api_client, change, field):
    body = {"slug": "s1", "name": "Study", "label_scheme": "binary_unrelated", "consent_text": "x", **change}
    response = api_client.post("/api/studies/", body, format="json")
    assert response.status_code == 400 and field in response.json(), response.content
    assert not Study.objects.exists()
