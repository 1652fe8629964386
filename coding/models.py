"""Coding rounds: codebooks (versioned, one per lens), the sampled excerpts, coders and their codes.

Excerpts are snapshots of the audited replies (sentence, context, the model's label and explanation, model,
condition and references) taken when the round is drawn, so a re-parse or a new ground truth never changes what
coders coded. A coder codes the whole sample alone under one lens; ``ExcerptCoding`` holds one coder's codes and
memo for one excerpt, saved as they are given.
"""
from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

from annotation.models import new_invite_token, new_seed


class Codebook(models.Model):
    """One version of a lens's codebook. Versions of one codebook share ``lineage``; a version a round uses is
    never edited: editing it makes the next version."""

    team_path = "team"
    team_null_visible = True  # no team: shipped with the app, every researcher reads it

    lineage = models.UUIDField(default=uuid.uuid4, editable=False, help_text="Shared by every version.")
    version = models.PositiveIntegerField(default=1, editable=False)
    name = models.CharField(max_length=200, help_text="The lens, e.g. “Thematic content and error type”.")
    description = models.TextField(blank=True, help_text="What the lens looks at, for coders.")
    source = models.TextField(blank=True, help_text="Where the codes and their definitions come from.")
    shipped = models.BooleanField(default=False, editable=False,
                                  help_text="One of the defaults this app ships (seed 000 §3.4, §4.3).")
    team = models.ForeignKey("teams.Team", null=True, blank=True, on_delete=models.PROTECT, related_name="codebooks",
                             help_text="The team whose members may see and change it; empty: shipped with the app, read by every researcher and changed by superusers only.")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "-version"]
        constraints = [models.UniqueConstraint(fields=["lineage", "version"], name="codebook_version_unique")]

    def __str__(self) -> str:
        return f"{self.name} (v{self.version})"


class Code(models.Model):
    team_path = "codebook__team"
    team_null_visible = True

    codebook = models.ForeignKey(Codebook, on_delete=models.CASCADE, related_name="codes")
    name = models.CharField(max_length=100)
    definition = models.TextField(blank=True)
    examples = models.JSONField(default=list, blank=True, help_text="Example phrases or excerpts (strings).")
    definition_is_ours = models.BooleanField(
        default=False, help_text="The definition was written by this project: the paper names the code only.")
    shortcut = models.CharField(max_length=1, blank=True, help_text="The key that toggles the code while coding.")
    position = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["codebook", "position", "id"]
        constraints = [
            models.UniqueConstraint(fields=["codebook", "name"], name="code_name_unique_in_codebook"),
            models.UniqueConstraint(fields=["codebook", "shortcut"], condition=~models.Q(shortcut=""),
                                    name="code_shortcut_unique_in_codebook"),
        ]

    def __str__(self) -> str:
        return self.name


class CodingRound(models.Model):
    """A sample of one audit's explained replies, coded independently under one or more lenses."""

    team_path = "team"

    class Allocation(models.TextChoices):
        PROPORTIONAL = "proportional", "Proportional to each model × condition stratum's size"
        EQUAL = "equal", "Equal across model × condition strata"

    class Eligible(models.TextChoices):
        PARSED = "parsed", "Every parsed reply (a label and an explanation)"
        DISAGREE = "disagree", "Parsed replies whose label differs from the weighted ground truth"

    audit = models.ForeignKey("auditapp.Audit", on_delete=models.PROTECT, related_name="coding_rounds")
    team = models.ForeignKey("teams.Team", on_delete=models.PROTECT, related_name="coding_rounds",
                             help_text="The team whose members may see and change it (teams.scoping).")
    name = models.CharField(max_length=200)
    sample_size = models.PositiveIntegerField(default=99)
    allocation = models.CharField(max_length=16, choices=Allocation.choices, default=Allocation.PROPORTIONAL)
    eligible = models.CharField(max_length=16, choices=Eligible.choices, default=Eligible.PARSED)
    models_included = models.JSONField(default=list, blank=True,
                                       help_text="AuditModel ids to sample from; empty: every model.")
    conditions_included = models.JSONField(default=list, blank=True,
                                           help_text="Conditions to sample from; empty: every condition.")
    seed = models.BigIntegerField(default=new_seed)
    show_model = models.BooleanField(default=False, help_text="Coders see which model answered.")
    show_condition = models.BooleanField(default=False, help_text="Coders see the prompting condition.")
    show_reference = models.BooleanField(default=False, help_text="Coders see the weighted ground truth.")
    draw = models.JSONField(default=dict, blank=True, editable=False,
                            help_text="The eligible strata, the allocation and the drawn requests, to rebuild it.")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    closed_at = models.DateTimeField(null=True, blank=True, help_text="No more coding is accepted.")

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.name


class RoundLens(models.Model):
    """A lens of a round: the codebook version its coders use."""

    team_path = "round__team"

    round = models.ForeignKey(CodingRound, on_delete=models.CASCADE, related_name="lenses")
    codebook = models.ForeignKey(Codebook, on_delete=models.PROTECT, related_name="+")
    position = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["round", "position"]
        constraints = [models.UniqueConstraint(fields=["round", "codebook"], name="lens_codebook_once_per_round")]

    def __str__(self) -> str:
        return f"Lens {self.position + 1}: {self.codebook}"


class Excerpt(models.Model):
    """One sampled reply, as coders see it (a snapshot taken when the round was drawn)."""

    team_path = "round__team"

    round = models.ForeignKey(CodingRound, on_delete=models.CASCADE, related_name="excerpts")
    request = models.ForeignKey("auditapp.AuditRequest", on_delete=models.PROTECT, related_name="+")
    position = models.PositiveIntegerField(help_text="The order coders see the sample in.")
    model_name = models.CharField(max_length=200)
    condition = models.CharField(max_length=40)
    target = models.TextField()
    preceding = models.TextField(blank=True)
    following = models.TextField(blank=True)
    label = models.SmallIntegerField(help_text="The model's label.")
    explanation = models.TextField(blank=True)
    reference_label = models.SmallIntegerField(null=True, help_text="The weighted ground truth.")
    majority_label = models.SmallIntegerField(null=True)

    class Meta:
        ordering = ["round", "position"]
        constraints = [
            models.UniqueConstraint(fields=["round", "position"], name="excerpt_position_unique_in_round"),
            models.UniqueConstraint(fields=["round", "request"], name="excerpt_request_once_per_round"),
        ]

    def __str__(self) -> str:
        return f"#{self.position + 1}: {self.target[:60]}"


class Coder(models.Model):
    """A person coding a round's whole sample under one lens: a researcher's account, or an outside coder whose
    invite link reaches only this coder's pages."""

    team_path = "round__team"

    round = models.ForeignKey(CodingRound, on_delete=models.CASCADE, related_name="coders")
    lens = models.ForeignKey(RoundLens, on_delete=models.CASCADE, related_name="coders")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                             related_name="coding_assignments")
    name = models.CharField(max_length=100, help_text="The only name under which the coder appears in exports.")
    invite_token = models.CharField(max_length=64, unique=True, default=new_invite_token, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["round", "lens", "name"]
        constraints = [
            models.UniqueConstraint(fields=["round", "name"], name="coder_name_unique_in_round"),
            models.UniqueConstraint(fields=["round", "user"], condition=models.Q(user__isnull=False),
                                    name="coder_account_once_per_round"),
        ]

    def __str__(self) -> str:
        return self.name


class ExcerptCoding(models.Model):
    """One coder's codes and memo for one excerpt. ``confirmed_at`` is set when the coder finishes the excerpt
    (an excerpt may rightly get no code); progress counts confirmed excerpts. ``revision`` lets a page that saves
    say which state it changed, so a change made on another device meanwhile is never overwritten; ``writer`` and
    ``writer_seq`` tell one page's own saves apart, so its later state (a keepalive sent while an earlier save was
    in flight) is taken and its earlier one, arriving late, is not."""

    team_path = "coder__round__team"

    coder = models.ForeignKey(Coder, on_delete=models.CASCADE, related_name="codings")
    excerpt = models.ForeignKey(Excerpt, on_delete=models.CASCADE, related_name="codings")
    codes = models.ManyToManyField(Code, blank=True, related_name="+")
    memo = models.TextField(blank=True)
    confirmed_at = models.DateTimeField(null=True, blank=True)
    revision = models.PositiveIntegerField(
        default=0, help_text="Counts the saves; a save based on an older revision is refused (another device saved).")
    writer = models.CharField(max_length=64, blank=True, help_text="The page (one load of it) that saved last.")
    writer_seq = models.PositiveIntegerField(default=0, help_text="That page's count of its saves, at the last one.")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["coder", "excerpt"]
        constraints = [models.UniqueConstraint(fields=["coder", "excerpt"], name="coding_once_per_coder_excerpt")]

    def __str__(self) -> str:
        return f"{self.coder} → {self.excerpt_id}"


class CodeMapping(models.Model):
    """Codes of different lenses a researcher reads as one finding (e.g. STEREOTYPES in lenses 1 and 2), for the
    round's convergence table."""

    team_path = "round__team"

    round = models.ForeignKey(CodingRound, on_delete=models.CASCADE, related_name="mappings")
    name = models.CharField(max_length=200)
    codes = models.ManyToManyField(Code, related_name="+")

    class Meta:
        ordering = ["round", "name"]
        constraints = [models.UniqueConstraint(fields=["round", "name"], name="mapping_name_unique_in_round")]

    def __str__(self) -> str:
        return self.name
