"""Models of an annotation study: Study, Item, Participant, Label, and ItemImport (one uploaded file).

A label's value is an integer: 1 (positive, e.g. ableist), 0 (negative), and, where the study's label
scheme allows it, -1 for "unrelated / needs more context" (the coding AUTALIC uses for its -1).
"""
from __future__ import annotations

import secrets

from django.conf import settings
from django.db import models


def new_invite_token() -> str:
    """An unguessable URL-safe token (192 bits) for a participant's invite link."""
    return secrets.token_urlsafe(24)


def new_seed() -> int:
    """A random seed for one participant's item orders and IAT trials (recorded, so reproducible)."""
    return secrets.randbits(31)


def new_completion_code() -> str:
    """A completion code to show crowd workers at the end (e.g. for Prolific)."""
    return secrets.token_hex(4).upper()


class LabelValue(models.IntegerChoices):
    POSITIVE = 1, "1 (positive: ableist)"
    NEGATIVE = 0, "0 (negative: not ableist)"
    UNRELATED = -1, "-1 (unrelated / needs more context)"


class Study(models.Model):
    team_path = "team"

    class Status(models.TextChoices):
        DRAFT = "draft", "Draft"
        OPEN = "open", "Open for annotators"
        CLOSED = "closed", "Closed"
        ARCHIVED = "archived", "Archived"

    class LabelScheme(models.TextChoices):
        BINARY = "binary", "0 / 1"
        BINARY_WITH_UNRELATED = "binary_unrelated", "0 / 1, or unrelated / needs more context (-1)"

    class Skipping(models.TextChoices):
        OFF = "off", "Not allowed: every sentence needs a label"
        REASSIGN = "reassign", "Allowed: a skipped sentence goes back to other annotators"
        KEEP = "keep", "Allowed: a skipped sentence is not handed to anyone else"

    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=100, unique=True)
    description = models.TextField(blank=True)
    content_warning = models.TextField(
        blank=True, help_text="Shown to annotators before consent and before any sentence."
    )
    consent_text = models.TextField(blank=True)
    label_scheme = models.CharField(
        max_length=32, choices=LabelScheme.choices, default=LabelScheme.BINARY_WITH_UNRELATED
    )
    annotators_per_item = models.PositiveSmallIntegerField(default=3)
    items_per_annotator = models.PositiveIntegerField(
        default=0, help_text="Items each annotator labels (attention checks come on top); 0 = as many as needed."
    )
    labelling_instructions = models.TextField(blank=True)
    iat_enabled = models.BooleanField(default=True, help_text="Run the IAT after the questionnaires.")
    keyboard_required = models.BooleanField(
        default=False,
        help_text="Participants must have a physical keyboard for the IAT: they are told so before consent, and a "
                  "touch-only device cannot start. Off: the IAT also runs by taps on touch screens.")
    iat_stimuli = models.JSONField(
        default=dict, blank=True,
        help_text="IAT categories and words; empty = the defaults (seed 000 Appendix A.3 categories).",
    )
    attention_check_pass_threshold = models.FloatField(
        default=1.0, help_text="Share of attention-check items answered correctly needed to pass (0–1)."
    )
    assignment_timeout_minutes = models.PositiveIntegerField(
        default=120, help_text="Unlabelled items of an inactive annotator go back to others after this time."
    )
    completion_code = models.CharField(max_length=32, default=new_completion_code)
    completion_url = models.URLField(
        blank=True, help_text="Optional: where annotators go at the end (e.g. a Prolific completion URL)."
    )
    no_consent_url = models.URLField(
        blank=True, help_text="Optional: where a visitor who declines consent goes (e.g. Prolific's URL with the "
                              "no-consent code). Empty: they see a thank-you page.")
    estimated_minutes = models.PositiveSmallIntegerField(
        null=True, blank=True,
        help_text="The duration shown before consent, in minutes. Empty: estimated from the study's instruments, "
                  "IAT and items (annotation.duration).")

    skipping = models.CharField(
        max_length=8, choices=Skipping.choices, default=Skipping.REASSIGN,
        help_text="Whether annotators may skip a sentence (with a reason), and whether its place goes to someone "
                  "else. A skipped attention check counts as missed.")
    open_link_token = models.CharField(max_length=64, unique=True, default=new_invite_token, editable=False)
    open_link_enabled = models.BooleanField(
        default=False, help_text="One shared link that creates a participant per visitor, up to the cap."
    )
    open_link_cap = models.PositiveIntegerField(default=0, help_text="Most participants the open link creates.")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.DRAFT)
    team = models.ForeignKey("teams.Team", on_delete=models.PROTECT, related_name="studies",
                             help_text="The team whose members may see and change it (teams.scoping).")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "studies"
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        """IAT stimuli, when given, must make a valid IAT (the same check the IAT page relies on)."""
        from django.core.exceptions import ValidationError

        from psychometrics.iat import IATStimuli

        if self.iat_stimuli:
            if not isinstance(self.iat_stimuli, dict):
                raise ValidationError({"iat_stimuli": "Give an object with the eight fields of IATStimuli."})
            try:
                IATStimuli(**self.iat_stimuli)
            except (TypeError, ValueError) as error:
                raise ValidationError({"iat_stimuli": f"Not a valid IAT: {error}. Fields: target_a_label, "
                                       "target_a_words, target_b_label, target_b_words, attribute_pos_label, "
                                       "attribute_pos_words, attribute_neg_label, attribute_neg_words."}) from error

    @property
    def allowed_label_values(self) -> frozenset[int]:
        if self.label_scheme == self.LabelScheme.BINARY_WITH_UNRELATED:
            return frozenset({0, 1, -1})
        return frozenset({0, 1})


class ItemImport(models.Model):
    """One uploaded file of items (and optional per-annotator labels), kept for provenance.

    The raw bytes and their SHA-256 are stored, so the exact data behind a study can be named in an
    audit manifest and re-examined later. An import is all or nothing: ``errors`` lists every
    problem found (row, column, message) and, when it is non-empty, nothing was written.
    """

    team_path = "study__team"

    class Status(models.TextChoices):
        PENDING = "pending", "Waiting for a worker"
        SUCCEEDED = "succeeded", "Imported"
        FAILED = "failed", "Failed: nothing imported"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="imports")
    uploaded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    filename = models.CharField(max_length=255)
    file_format = models.CharField(max_length=8)
    content = models.BinaryField()
    sha256 = models.CharField(max_length=64)
    options = models.JSONField(default=dict, blank=True, help_text="Column mapping and parse options.")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    errors = models.JSONField(default=list, blank=True)
    warnings = models.JSONField(default=list, blank=True)
    encoding = models.CharField(max_length=32, blank=True)
    n_items = models.PositiveIntegerField(default=0)
    n_labels = models.PositiveIntegerField(default=0)
    n_participants = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    queued_at = models.DateTimeField(null=True, blank=True,
                                     help_text="When its task was last sent (empty: not sent; the recovery sends it).")
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.filename} ({self.get_status_display()})"


class Item(models.Model):
    team_path = "study__team"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="items")
    external_id = models.CharField(max_length=200)
    target = models.TextField(help_text="The sentence to label.")
    preceding = models.TextField(blank=True, help_text="The sentence before the target (context).")
    following = models.TextField(blank=True, help_text="The sentence after the target (context).")
    metadata = models.JSONField(default=dict, blank=True)
    attention_check_answer = models.SmallIntegerField(
        null=True, blank=True, choices=LabelValue.choices,
        help_text="Set for attention-check items: the label an attentive annotator gives.",
    )
    source_import = models.ForeignKey(
        ItemImport, null=True, blank=True, on_delete=models.SET_NULL, related_name="items"
    )
    position = models.PositiveIntegerField(default=0, help_text="Order within the study.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["study", "position", "id"]
        constraints = [
            models.UniqueConstraint(fields=["study", "external_id"], name="item_external_id_unique_in_study")
        ]

    def __str__(self) -> str:
        return f"{self.external_id}: {self.target[:60]}"


# The team of a participant nobody assigned to one; an annotator data import may move them to the file's team.
DEFAULT_TEAM = "default"


class Participant(models.Model):
    team_path = "study__team"

    class Status(models.TextChoices):
        INVITED = "invited", "Invited"
        ACTIVE = "active", "In progress"
        COMPLETED = "completed", "Completed"
        WITHDRAWN = "withdrawn", "Withdrawn"
        DECLINED = "declined", "Declined consent"
        IMPORTED = "imported", "Imported with a data file"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="participants")
    pseudonym = models.CharField(
        max_length=100, help_text="The only name under which the participant appears in exports."
    )
    invite_token = models.CharField(max_length=64, unique=True, default=new_invite_token, editable=False)
    team = models.CharField(max_length=100, default=DEFAULT_TEAM, help_text="Used for team-relative weights.")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.INVITED)
    source_import = models.ForeignKey(
        ItemImport, null=True, blank=True, on_delete=models.SET_NULL, related_name="participants"
    )
    via_open_link = models.BooleanField(default=False)
    prolific_pid = models.CharField(max_length=64, blank=True)
    prolific_study_id = models.CharField(max_length=64, blank=True)
    prolific_session_id = models.CharField(max_length=64, blank=True)
    seed = models.BigIntegerField(default=new_seed, help_text="Seeds this participant's item orders and IAT trials.")
    read_instructions_at = models.DateTimeField(null=True, blank=True)
    attention_checks_passed = models.BooleanField(null=True, blank=True)
    attention_check_score = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    opened_at = models.DateTimeField(
        null=True, blank=True,
        help_text="When a page of their link was first loaded (empty for participants from before it was kept, and "
                  "cleared when they decline: their consent or decline shows they opened it).")
    started_at = models.DateTimeField(null=True, blank=True, help_text="When consent was given.")
    completed_at = models.DateTimeField(null=True, blank=True)
    withdrawn_at = models.DateTimeField(null=True, blank=True)
    declined_at = models.DateTimeField(null=True, blank=True,
                                       help_text="When consent was declined: nothing else is kept of them.")

    class Meta:
        ordering = ["study", "pseudonym"]
        constraints = [
            models.UniqueConstraint(fields=["study", "pseudonym"], name="participant_pseudonym_unique_in_study")
        ]

    def __str__(self) -> str:
        return self.pseudonym


class Label(models.Model):
    team_path = "item__study__team"

    participant = models.ForeignKey(Participant, on_delete=models.CASCADE, related_name="labels")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="labels")
    value = models.SmallIntegerField(choices=LabelValue.choices)
    rationale = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["item", "participant"]
        constraints = [
            models.UniqueConstraint(fields=["participant", "item"], name="label_one_per_participant_and_item"),
            models.CheckConstraint(condition=models.Q(value__in=[-1, 0, 1]), name="label_value_known"),
        ]

    def __str__(self) -> str:
        return f"{self.participant_id} → {self.item_id}: {self.value}"


class LabelChange(models.Model):
    """A label the annotator went back to and changed: the value it had, and when each was given.

    The label row holds the current value; its changes, in order, hold every earlier one, so the
    first answer and each revision stay in the record (a researcher may analyse first answers only).
    """

    team_path = "label__item__study__team"

    label = models.ForeignKey(Label, on_delete=models.CASCADE, related_name="changes")
    previous_value = models.SmallIntegerField(choices=LabelValue.choices)
    previous_rationale = models.TextField(blank=True)
    previous_at = models.DateTimeField(help_text="When the replaced value was given.")
    changed_at = models.DateTimeField(help_text="When it was replaced.")

    class Meta:
        ordering = ["label", "changed_at", "id"]

    def __str__(self) -> str:
        return f"label {self.label_id}: {self.previous_value} replaced at {self.changed_at:%Y-%m-%d %H:%M:%S}"


class Assignment(models.Model):
    """An item handed to a participant to label, in the participant's own (randomised) order.

    An unlabelled assignment counts toward the item's annotators only until ``expires_at``; an
    annotator's activity moves that time on, so an abandoned session frees its items for others.
    """

    team_path = "item__study__team"

    participant = models.ForeignKey(Participant, on_delete=models.CASCADE, related_name="assignments")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="assignments")
    position = models.PositiveIntegerField()
    assigned_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    skipped_at = models.DateTimeField(null=True, blank=True, help_text="When the annotator skipped it unlabelled.")
    skip_reason = models.CharField(max_length=500, blank=True)
    flagged_at = models.DateTimeField(null=True, blank=True,
                                      help_text="When the annotator flagged the sentence for the researchers.")
    flag_reason = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["participant", "position"]
        constraints = [
            models.UniqueConstraint(fields=["participant", "item"], name="assignment_once_per_participant_item"),
        ]
        indexes = [models.Index(fields=["item", "expires_at"])]

    def __str__(self) -> str:
        return f"{self.participant} #{self.position}: {self.item.external_id}"


class StudyAnalysisSettings(models.Model):
    """A study's choices for the weighted ground truth and its groups (``annotation.analysis``)."""

    team_path = "study__team"

    class MissingInstrument(models.TextChoices):
        EXCLUDE = "exclude", "Give no weight to annotators missing an instrument"
        AVERAGE = "average", "Average the instruments an annotator has"

    class TieRule(models.TextChoices):
        NONE = "none", "No label (listed as a tie)"
        POSITIVE = "positive", "1"
        NEGATIVE = "negative", "0"

    class BiasMethod(models.TextChoices):
        QUANTILE = "quantile", "Quantiles of the bias index"
        THRESHOLD = "threshold", "Values of the bias index"

    study = models.OneToOneField(Study, on_delete=models.CASCADE, related_name="analysis_settings")
    missing_instrument = models.CharField(max_length=8, choices=MissingInstrument.choices,
                                          default=MissingInstrument.EXCLUDE)
    threshold = models.FloatField(default=0.5, help_text="Weighted score at or above which the label is 1.")
    weighted_tie_rule = models.CharField(max_length=8, choices=TieRule.choices, default=TieRule.POSITIVE,
                                         help_text="Label when the weighted score equals the threshold.")
    majority_tie_rule = models.CharField(max_length=8, choices=TieRule.choices, default=TieRule.NONE,
                                         help_text="Label shown for a majority tie (always marked as a tie).")
    aq_high = models.FloatField(default=32, help_text="High-AQ group: AQ ≥ this (ICL-A).")
    aq_low = models.FloatField(default=26, help_text="Low-AQ group: AQ < this (ICL-B).")
    bias_method = models.CharField(max_length=10, choices=BiasMethod.choices, default=BiasMethod.QUANTILE)
    bias_low_cut = models.FloatField(default=0.25)
    bias_high_cut = models.FloatField(default=0.75)
    min_group_labels = models.PositiveSmallIntegerField(default=2, help_text="Labels needed for a test-set item.")
    icl_size = models.PositiveIntegerField(default=284)
    icl_seed = models.IntegerField(default=0)
    evaluation_set = models.CharField(max_length=20, blank=True,
                                      help_text="Test set the ICL examples must not overlap (e.g. 'all').")
    touch_iat_in_weights = models.BooleanField(
        default=True,
        help_text="Let IAT D scores measured by touch (or partly by touch) enter the trust weights. Tap latencies "
                  "are longer and differ from key latencies; D divides by each participant's own SD, which removes "
                  "most of that, but touch and keyboard D are not known to be equivalent. Off: a touch D counts as "
                  "missing, and the missing-instrument rule decides.")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "study analysis settings"

    def __str__(self) -> str:
        return f"Analysis settings of {self.study}"


class AnalysisRun(models.Model):
    """The latest analysis of a study: when, with which settings, and the study-level results."""

    team_path = "study__team"

    study = models.OneToOneField(Study, on_delete=models.CASCADE, related_name="analysis_run")
    computed_at = models.DateTimeField()
    duration_ms = models.PositiveIntegerField(default=0)
    settings = models.JSONField(default=dict)
    notes = models.JSONField(default=list)
    agreement = models.JSONField(default=list)
    cohen_kappa = models.JSONField(default=dict, help_text="{annotators: [...], kappa: [[...]]}")
    alternatives = models.JSONField(default=dict, blank=True,
                                    help_text="The alternative ground truths (annotation.alternatives): settings, "
                                              "per-item labels, summary, agreement matrix, flipped items, crowd-kit "
                                              "outputs as returned. Computed after the run by its own task "
                                              "(annotation.study_alternatives): empty until then.")
    alternatives_inputs_digest = models.CharField(
        max_length=64, blank=True, default="",
        help_text="A hash of the scores, labels and settings this run used: the alternatives task computes from the "
                  "same inputs or not at all.")
    alternatives_requested_at = models.DateTimeField(
        null=True, blank=True, help_text="When this run asked for its alternatives (it names the request).")
    alternatives_sent_at = models.DateTimeField(
        null=True, blank=True, help_text="When their task was last sent (None: the broker was away; the recovery "
                                         "sends it).")
    alternatives_computed_at = models.DateTimeField(null=True, blank=True)
    alternatives_error = models.TextField(blank=True, default="",
                                          help_text="Why the alternatives could not be computed for this run.")

    def __str__(self) -> str:
        return f"Analysis run of study {self.study_id}"

    @property
    def alternatives_status(self) -> str:
        """``ready`` (stored), ``failed`` (``alternatives_error`` says why), ``computing`` (asked at
        ``alternatives_requested_at``), or ``none`` (a run from before they existed)."""
        if self.alternatives_computed_at is not None:
            return "ready"
        if self.alternatives_error:
            return "failed"
        return "computing" if self.alternatives_requested_at is not None else "none"


class AnalysisRunInputs(models.Model):
    """The inputs an analysis run used, kept until its alternatives task has stored them or failed
    (``annotation.study_alternatives``): labels may arrive in between, and the alternatives must be those of the
    run. One row per run, replaced by each new request, deleted when it is answered."""

    team_path = "run__study__team"

    run = models.OneToOneField(AnalysisRun, on_delete=models.CASCADE, primary_key=True, related_name="inputs")
    requested_at = models.DateTimeField(help_text="The alternatives request these inputs belong to.")
    data = models.BinaryField(help_text="annotation.alternatives.alternatives_inputs_pack: compressed scores, "
                                        "labels and settings.")

    def __str__(self) -> str:
        return f"Inputs of analysis run {self.run_id}"


class ParticipantWeight(models.Model):
    """An annotator's standardised scores, raw trust R and weight W in the latest analysis (Appendix B)."""

    team_path = "participant__study__team"

    participant = models.OneToOneField(Participant, on_delete=models.CASCADE, related_name="weight")
    aq = models.FloatField(null=True)
    sata = models.FloatField(null=True)
    iat_d = models.FloatField(null=True)
    aq_norm = models.FloatField(null=True)
    sata_norm = models.FloatField(null=True)
    iat_norm = models.FloatField(null=True)
    trust_raw = models.FloatField(null=True)
    weight = models.FloatField(null=True)
    included = models.BooleanField()
    bias_index = models.FloatField(null=True)
    high_aq = models.BooleanField()
    low_aq = models.BooleanField()
    low_bias = models.BooleanField()
    high_bias = models.BooleanField()

    def __str__(self) -> str:
        return f"Weight of participant {self.participant_id}: {self.weight}"


class ItemGroundTruth(models.Model):
    team_path = "item__study__team"

    item = models.OneToOneField(Item, on_delete=models.CASCADE, related_name="ground_truth")
    n_labels = models.PositiveIntegerField()
    n_excluded = models.PositiveIntegerField()
    majority_label = models.SmallIntegerField(null=True)
    majority_tie = models.BooleanField()
    n_weighted = models.PositiveIntegerField()
    weighted_score = models.FloatField(null=True)
    weighted_label = models.SmallIntegerField(null=True)
    weighted_tie = models.BooleanField()

    def __str__(self) -> str:
        return f"Ground truth of item {self.item_id}: majority {self.majority_label}, weighted {self.weighted_label}"


class ItemSetMember(models.Model):
    """An item in a test set (perfect agreement within a group) or an ICL example set, with its label."""

    team_path = "study__team"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="item_sets")
    set_name = models.CharField(max_length=20)
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="+")
    label = models.SmallIntegerField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["set_name", "item"], name="item_once_per_set")]

    def __str__(self) -> str:
        return f"{self.set_name}: item {self.item_id} labelled {self.label}"


class AnalysisState(models.Model):
    """Whether a study's analysis waits for a worker or is being computed, so that requests coalesce.

    At most one computation is queued and one running per study (``annotation.study_analysis``): a request
    while one is queued changes nothing, since the queued run reads everything when it starts; a request
    while one runs sets ``dirty``, and exactly one more run follows it. ``queued_at`` is when the task was
    sent (None when sending failed: the recovery task sends it again); ``started_at`` is when the current
    run began and names it, so a run whose worker died can be taken over once its lease has expired.
    ``finished_at`` and ``error`` describe the last run that ended: ``error`` is empty when it stored its
    results, and names the exception when it failed (the results of the run before it are kept).
    """

    team_path = "study__team"

    class Status(models.TextChoices):
        IDLE = "idle", "Up to date"
        QUEUED = "queued", "Waiting for a worker"
        RUNNING = "running", "Computing"

    study = models.OneToOneField(Study, on_delete=models.CASCADE, primary_key=True, related_name="analysis_state")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.IDLE)
    dirty = models.BooleanField(default=False, help_text="Requested again while running: run once more.")
    queued_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True, help_text="Why the last run failed; empty when it succeeded.")

    def __str__(self) -> str:
        return f"Analysis of {self.study_id}: {self.get_status_display()}"
