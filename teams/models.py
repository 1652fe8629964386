"""Teams, their members with a role each, and the access log (exports and team changes)."""
from __future__ import annotations

from django.conf import settings
from django.db import models

from teams import roles


class Team(models.Model):
    """A group of researchers who share studies, audits, corpora, endpoints, codebooks and coding rounds."""

    name = models.CharField(max_length=150, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    """A researcher's role in a team (teams.roles: viewer < editor < owner)."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="team_memberships")
    role = models.CharField(max_length=10, choices=roles.CHOICES, default=roles.VIEWER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["team", "user"]
        constraints = [models.UniqueConstraint(fields=["team", "user"], name="membership_once")]

    def __str__(self) -> str:
        return f"{self.user} in {self.team} ({self.role})"


class AccessEvent(models.Model):
    """One export of data or one change to a team, kept after the user or the team is gone (``username`` stays)."""

    at = models.DateTimeField(auto_now_add=True, db_index=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                             related_name="+")
    username = models.CharField(max_length=150, blank=True)
    team = models.ForeignKey(Team, null=True, blank=True, on_delete=models.SET_NULL, related_name="access_events")
    action = models.CharField(max_length=40, help_text="e.g. export, member_added, role_changed.")
    target_kind = models.CharField(max_length=60, blank=True, help_text="e.g. annotation.study.")
    target_id = models.CharField(max_length=64, blank=True)
    detail = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M} {self.username} {self.action} {self.target_kind} {self.target_id}"
