"""The API's one handler of application errors (common/api/errors.py): a service's refusal answers with its
reason, 409 when the audit's state refuses it, 400 otherwise, and nothing the refused request wrote is kept."""
from __future__ import annotations

import pytest
from django.db import transaction
from rest_framework.test import APIRequestFactory
from rest_framework.views import APIView

from auditapp.engine.errors import AuditError, AuditStateError
from auditapp.models import LLMEndpoint


class Refusing(APIView):
    permission_classes = ()
    authentication_classes = ()
    refusal: Exception = AuditError("refused")

    def post(self, request):
        with transaction.atomic():
            LLMEndpoint.objects.create(name="written before the refusal", base_url="http://127.0.0.1:9")
            raise self.refusal


@pytest.mark.django_db
@pytest.mark.parametrize(("refusal", "status"), [(AuditError("no models chosen"), 400),
                                                 (AuditStateError("a completed audit cannot be paused"), 409)])
def test_a_refusal_answers_its_reason_and_keeps_nothing(refusal, status):
    view = Refusing.as_view(refusal=refusal)
    response = view(APIRequestFactory().post("/", {}, format="json"))
    assert response.status_code == status
    assert response.data == {"detail": str(refusal)}
    assert not LLMEndpoint.objects.exists()


@pytest.mark.django_db
def test_other_errors_are_left_to_drf():
    view = Refusing.as_view(refusal=ValueError("a bug"))
    with pytest.raises(ValueError, match="a bug"):
        view(APIRequestFactory().post("/", {}, format="json"))
