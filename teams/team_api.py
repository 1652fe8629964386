"""The teams' REST API, under ``/api/teams/``: your teams with your role in each; a team's members, which its owners
add (by username), give another role and remove; a team's access log for its owners (JSON pages, or every event as
CSV with ``?format=csv``, as every list of the API).

A team you are not in is 404 (its existence is not revealed); a change by a member who is not an owner is 403; a
change that would leave the team without an owner, or delete a team that still holds objects, is 409. Every change
goes through :mod:`teams.services`, which writes it to the access log.
"""
from __future__ import annotations

from functools import cached_property
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import Count
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import generics, serializers, status
from rest_framework.exceptions import PermissionDenied
from rest_framework.response import Response
from rest_framework.views import APIView

from common.api.exports import ExportListAPIView
from common.api.fields import StrictCharField
from common.api.parsers import JSONObjectParser
from common.export_rows import Export
from teams import roles, services
from teams.models import Membership, Team
from teams.selectors import ACCESS_LOG_COLUMNS, access_event_rows, teams_with_role


class TeamRefusedSerializer(serializers.Serializer):
    detail = serializers.CharField(help_text="What went wrong.")


class TeamSerializer(serializers.ModelSerializer):
    my_role = serializers.ChoiceField(choices=roles.CHOICES, read_only=True, allow_null=True,
                                      help_text="Your role in the team (null: a superuser who is not a member).")
    n_members = serializers.IntegerField(read_only=True)
    name = StrictCharField(max_length=150, help_text="Unique across the server.")

    class Meta:
        model = Team
        fields = ["id", "name", "my_role", "n_members", "created_at"]
        read_only_fields = ["id", "created_at"]


class MemberSerializer(serializers.ModelSerializer):
    user_id = serializers.IntegerField(source="user.id", read_only=True)
    username = serializers.CharField(source="user.username", read_only=True)

    class Meta:
        model = Membership
        fields = ["user_id", "username", "role", "created_at"]
        read_only_fields = ["role", "created_at"]


class MemberAddSerializer(serializers.Serializer):
    username = StrictCharField(max_length=150, help_text="The researcher's username.")
    role = serializers.ChoiceField(choices=roles.CHOICES, default=roles.VIEWER)


class MemberRoleSerializer(serializers.Serializer):
    role = serializers.ChoiceField(choices=roles.CHOICES)


class AccessEventSerializer(serializers.Serializer):
    at = serializers.DateTimeField()
    username = serializers.CharField(help_text="Who (kept after the account is gone).")
    team = serializers.CharField(allow_null=True, help_text="The team's name.")
    action = serializers.CharField(help_text="export, team_created, team_renamed, team_deleted, member_added, "
                                             "role_changed or member_removed.")
    target_kind = serializers.CharField(help_text="e.g. annotation.study, teams.team.")
    target_id = serializers.CharField()
    detail = serializers.JSONField(help_text="What exactly: the export's kind and format, the member and roles.")


def _refused(error: services.TeamError) -> Response:
    code: int
    if isinstance(error, services.NotTeamOwner):
        code = status.HTTP_403_FORBIDDEN
    elif isinstance(error, services.LastOwner | services.TeamNotEmpty):
        code = status.HTTP_409_CONFLICT
    else:
        code = status.HTTP_400_BAD_REQUEST
    return Response({"detail": str(error)}, status=code)


def _teams(user: Any):
    return teams_with_role(user).annotate(n_members=Count("memberships")).order_by("name")


class TeamScoped:
    """For the views under ``/api/teams/{pk}/``: the team among the user's (404 otherwise), and whether they own it."""

    request: Any
    kwargs: dict[str, Any]

    @cached_property
    def team(self) -> Team:
        return get_object_or_404(_teams(self.request.user), pk=self.kwargs["pk"])

    def require_owner(self) -> None:
        if not services.is_owner(self.request.user, self.team):
            raise PermissionDenied("Only an owner of the team manages it.")


class TeamListView(generics.ListCreateAPIView):
    """Your teams, with your role in each; POST creates a team with you as its owner."""

    parser_classes = [JSONObjectParser]

    serializer_class = TeamSerializer

    def get_queryset(self):
        return _teams(self.request.user)

    def perform_create(self, serializer):
        try:
            team = services.create_team(user=self.request.user, name=serializer.validated_data["name"])
        except services.TeamError as error:
            raise serializers.ValidationError({"name": [str(error)]}) from error
        serializer.instance = _teams(self.request.user).get(pk=team.pk)


class TeamDetailView(TeamScoped, APIView):
    """One of your teams; its owners rename it (PATCH) and delete it once it holds nothing (DELETE)."""

    parser_classes = [JSONObjectParser]

    @extend_schema(summary="One of your teams", responses={200: TeamSerializer})
    def get(self, request, pk: int):
        return Response(TeamSerializer(self.team).data)

    @extend_schema(request=TeamSerializer, summary="Rename a team (owners)",
                   responses={200: TeamSerializer, 409: TeamRefusedSerializer})
    def patch(self, request, pk: int):
        self.require_owner()
        body = TeamSerializer(self.team, data=request.data, partial=True)
        body.is_valid(raise_exception=True)
        if "name" in body.validated_data:
            try:
                services.rename_team(user=request.user, team=self.team, name=body.validated_data["name"])
            except services.TeamError as error:
                return _refused(error)
        return Response(TeamSerializer(_teams(request.user).get(pk=self.team.pk)).data)

    @extend_schema(summary="Delete a team that holds nothing (owners)", responses={204: None, 409: TeamRefusedSerializer})
    def delete(self, request, pk: int):
        self.require_owner()
        try:
            services.delete_team(user=request.user, team=self.team)
        except services.TeamError as error:
            return _refused(error)
        return Response(status=status.HTTP_204_NO_CONTENT)


class TeamMembersView(TeamScoped, generics.ListCreateAPIView):
    """The members of one of your teams with their roles; its owners add a researcher by username (POST)."""

    parser_classes = [JSONObjectParser]

    serializer_class = MemberSerializer

    def get_queryset(self):
        return self.team.memberships.select_related("user").order_by("user__username")

    @extend_schema(request=MemberAddSerializer, summary="Add a member (owners)",
                   responses={201: MemberSerializer, 409: TeamRefusedSerializer})
    def post(self, request, pk: int):
        self.require_owner()
        body = MemberAddSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        member = get_user_model().objects.filter(username=body.validated_data["username"], is_staff=True,
                                                 is_active=True).first()
        if member is None:
            raise serializers.ValidationError({"username": ["no active researcher has this username"]})
        try:
            membership = services.add_member(user=request.user, team=self.team, member=member,
                                             role=body.validated_data["role"])
        except services.TeamError as error:
            return _refused(error)
        return Response(MemberSerializer(membership).data, status=status.HTTP_201_CREATED)


class TeamMemberView(TeamScoped, APIView):
    """One member of one of your teams: its owners give them another role (PATCH) or remove them (DELETE); the last
    owner stays (409)."""

    parser_classes = [JSONObjectParser]

    def membership(self, user_id: int) -> Membership:
        self.require_owner()
        return get_object_or_404(self.team.memberships.select_related("user"), user_id=user_id)

    @extend_schema(request=MemberRoleSerializer, summary="Change a member's role (owners)",
                   responses={200: MemberSerializer, 409: TeamRefusedSerializer})
    def patch(self, request, pk: int, user_id: int):
        membership = self.membership(user_id)
        body = MemberRoleSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            membership = services.change_role(user=request.user, membership=membership,
                                              role=body.validated_data["role"])
        except services.TeamError as error:
            return _refused(error)
        return Response(MemberSerializer(membership).data)

    @extend_schema(summary="Remove a member (owners)", responses={204: None, 409: TeamRefusedSerializer})
    def delete(self, request, pk: int, user_id: int):
        membership = self.membership(user_id)
        try:
            services.remove_member(user=request.user, membership=membership)
        except services.TeamError as error:
            return _refused(error)
        return Response(status=status.HTTP_204_NO_CONTENT)


class TeamAccessLogView(TeamScoped, ExportListAPIView):
    """The team's access log, newest first: who exported what and who changed the team (owners)."""

    serializer_class = AccessEventSerializer

    def get_queryset(self):
        return self.team.access_events.all()

    def initial(self, request, *args, **kwargs) -> None:
        super().initial(request, *args, **kwargs)
        self.require_owner()

    def export_rows(self) -> Export:
        return Export(ACCESS_LOG_COLUMNS, access_event_rows(self.get_queryset()))

    def export_filename(self) -> str:
        return f"team-{self.team.pk}-access-log.csv"
