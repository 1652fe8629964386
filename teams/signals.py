"""Receivers that keep teams in step with the rest: a new owned object without a team gets, in this order, its parent's
(an audit its study's, a coding round its audit's), the team of :func:`teams.scoping.new_objects_in` (the one an API
request or a command chose: it is explicit, so it goes before the creator's default), its creator's
(:func:`teams.scoping.team_for_new_object`), or as a last resort a parent's that may be shared (an audit its corpus's);
with ONE_LAB every saved staff user is an editor of the
Lab team. An object none of these names stays without a team, which the database refuses."""
from __future__ import annotations

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db.models.signals import post_save, pre_save
from django.dispatch import receiver

from teams.scoping import lab_membership_ensure, team_for_new_object, team_of_new_objects

# Each owned model, with the parents whose team a new row takes first, and those it takes last.
PARENTS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "annotation.Study": ((), ()),
    "auditapp.Audit": (("study",), ("corpus",)),
    "auditapp.Corpus": ((), ()),
    "auditapp.LLMEndpoint": ((), ()),
    "coding.CodingRound": (("audit",), ()),
    "coding.Codebook": ((), ()),
}


def _parents_team(instance, fields: tuple[str, ...]) -> int | None:
    for field in fields:
        parent = getattr(instance, field, None)
        if parent is not None and parent.team_id is not None:
            return parent.team_id
    return None


def _team_from_parent_or_creator(sender, instance, raw: bool = False, **kwargs) -> None:
    if raw or instance.team_id is not None or instance.pk is not None:
        return
    first, last = PARENTS[sender._meta.label]
    creator = getattr(instance, "created_by", None)
    if (team_id := _parents_team(instance, first)) is not None:
        instance.team_id = team_id
    elif (team := team_of_new_objects()) is not None:
        if sender._meta.label != "coding.Codebook" or not instance.shipped:
            instance.team = team
    elif creator is not None and creator.is_staff:
        instance.team = team_for_new_object(creator)
    elif (team_id := _parents_team(instance, last)) is not None:
        instance.team_id = team_id


for _label in PARENTS:
    pre_save.connect(_team_from_parent_or_creator, sender=_label, dispatch_uid=f"teams-new-{_label}")


@receiver(post_save, sender=get_user_model(), dispatch_uid="teams-one-lab")
def _one_lab_membership(sender, instance, raw: bool = False, **kwargs) -> None:
    if raw or not getattr(settings, "AUDITAPP_ONE_LAB", False) or not instance.is_staff or not instance.is_active:
        return
    lab_membership_ensure(instance)
