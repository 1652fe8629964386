"""Receivers that keep teams in step with the rest: a new owned object without a team gets its parent's (an audit its
study's or corpus's, a coding round its audit's) or its creator's (:func:`teams.scoping.team_for_new_object`); with
ONE_LAB every saved staff user is an editor of the Lab team."""
from __future__ import annotations

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db.models.signals import post_save, pre_save
from django.dispatch import receiver

from teams.scoping import lab_membership_ensure, team_for_new_object

# Each model whose team a new row takes from a parent when none is given: the parents' fields, in order.
PARENTS = {
    "auditapp.Audit": ("study", "corpus"),
    "coding.CodingRound": ("audit",),
    "auditapp.Corpus": (),
    "coding.Codebook": (),
}


def _team_from_parent_or_creator(sender, instance, raw: bool = False, **kwargs) -> None:
    if raw or instance.team_id is not None or instance.pk is not None:
        return
    for field in PARENTS.get(sender._meta.label, ()):
        parent = getattr(instance, field, None)
        if parent is not None and parent.team_id is not None:
            instance.team_id = parent.team_id
            return
    creator = getattr(instance, "created_by", None)
    if creator is not None and creator.is_staff:
        instance.team = team_for_new_object(creator)


for _label in PARENTS:
    pre_save.connect(_team_from_parent_or_creator, sender=_label, dispatch_uid=f"teams-new-{_label}")


@receiver(post_save, sender=get_user_model(), dispatch_uid="teams-one-lab")
def _one_lab_membership(sender, instance, raw: bool = False, **kwargs) -> None:
    if raw or not getattr(settings, "AUDITAPP_ONE_LAB", False) or not instance.is_staff or not instance.is_active:
        return
    lab_membership_ensure(instance)
