"""Writes that concern researchers (staff accounts, their permissions and API tokens)."""
from __future__ import annotations

import secrets

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.db import transaction
from rest_framework.authtoken.models import Token

RESEARCHER_GROUP = "Researchers"
RESEARCHER_APPS = ("annotation", "psychometrics", "auditapp", "coding")


def researcher_group_ensure() -> Group:
    """The "Researchers" group, holding every permission on the product's own models."""
    group, _ = Group.objects.get_or_create(name=RESEARCHER_GROUP)
    group.permissions.set(Permission.objects.filter(content_type__app_label__in=RESEARCHER_APPS))
    return group


@transaction.atomic
def researcher_create(*, username: str, email: str = "", password: str | None = None,
                      superuser: bool = False) -> tuple[object, str, str]:
    """Create a staff user in the Researchers group with an API token; return (user, password, token).

    A password is generated when none is given. Raises ValueError if the username is taken.
    """
    user_model = get_user_model()
    if user_model.objects.filter(username=username).exists():
        raise ValueError(f"a user named '{username}' already exists")
    password = password or secrets.token_urlsafe(12)
    user = user_model.objects.create_user(username=username, email=email, password=password,
                                          is_staff=True, is_superuser=superuser)
    user.groups.add(researcher_group_ensure())
    token, _ = Token.objects.get_or_create(user=user)
    return user, password, token.key
