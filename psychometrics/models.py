"""Instruments (stored definitions), a study's questionnaire flow, participants' raw answers and scores,
the IAT: one session per participant (its counterbalancing condition and trial design) and its trials, and
annotator data imports (scores, raw answers or raw IAT trials from a file).

Scores taken in the app are always computed on the server from the raw answers and trials stored here.
Imported data lands in the same tables, marked by ``source_import``, so the analysis reads it exactly as it
reads the app's; imported raw answers and trials are scored by the same code as the app's.
"""
from __future__ import annotations

from functools import cached_property

from django.conf import settings
from django.db import models

from psychometrics import roles


class Instrument(models.Model):
    """A Likert instrument definition in our file format (``psychometrics.instruments``), by content hash."""

    slug = models.SlugField(max_length=100)
    name = models.CharField(max_length=200)
    version = models.CharField(max_length=50, blank=True)
    partial = models.BooleanField(default=False, help_text="Not the full published scale.")
    definition = models.JSONField()
    content_hash = models.CharField(max_length=64, unique=True)
    shipped = models.BooleanField(default=False, help_text="Ships with the product (not uploaded).")
    uploaded_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["slug", "-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.version or self.content_hash[:8]})"

    @cached_property
    def parsed(self):
        from psychometrics.instruments import load_instrument

        return load_instrument(self.definition)


class AnnotatorImport(models.Model):
    """One file of annotator data imported into a study, kept for provenance (``psychometrics.annotator_imports``).

    ``kind`` says its shape: per-annotator scores, raw questionnaire answers, or raw IAT trials. Only a file
    that imported entirely is stored (a bad file is refused with every problem and stores nothing). The bytes
    and their SHA-256, the column mapping and options, the counts written and the teams it changed are kept;
    every score, answer and trial it wrote points back to it, and deleting the import
    (``annotator_import_delete``) deletes them and restores the teams.
    """

    team_path = "study__team"

    class Kind(models.TextChoices):
        SCORES = "scores", "Per-annotator scores (AQ, SATA, IAT D)"
        ANSWERS = "answers", "Raw questionnaire answers"
        IAT = "iat", "Raw IAT trials"

    study = models.ForeignKey("annotation.Study", on_delete=models.CASCADE, related_name="annotator_imports")
    kind = models.CharField(max_length=8, choices=Kind.choices)
    uploaded_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    filename = models.CharField(max_length=255)
    file_format = models.CharField(max_length=8)
    content = models.BinaryField()
    sha256 = models.CharField(max_length=64)
    options = models.JSONField(default=dict, blank=True, help_text="Column mapping and parse options.")
    columns = models.JSONField(default=dict, blank=True, help_text="Which file column was read as what.")
    encoding = models.CharField(max_length=32, blank=True)
    warnings = models.JSONField(default=list, blank=True)
    n_rows = models.PositiveIntegerField(default=0)
    n_annotators = models.PositiveIntegerField(default=0)
    counts = models.JSONField(default=dict, blank=True, help_text="What was written, e.g. {'aq': 3, 'iat': 3}.")
    team_changes = models.JSONField(
        default=dict, blank=True,
        help_text="Annotators whose team the import changed: pseudonym → {'from': team before, 'to': team set}; "
                  "deleting the import puts back each team it still holds.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.filename} ({self.get_kind_display()})"


def _imported_by(related_name: str) -> models.ForeignKey:
    return models.ForeignKey(AnnotatorImport, null=True, blank=True, on_delete=models.CASCADE,
                             related_name=related_name, help_text="Set when imported from a file, not taken in the app.")


class StudyInstrument(models.Model):
    """An instrument in a study's flow, at a position, with its item order fixed or randomised.

    ``role`` tells the analysis which score is which: the AQ and SATA scores feed the trust weights
    (seed 000 Appendix B) and the exports' ``aq`` and ``sata`` columns. ``psychometrics.roles`` infers it from
    the instrument and checks a study's roles before they are stored.
    """

    team_path = "study__team"

    class Role(models.TextChoices):
        AQ = roles.AQ, "AQ (autistic traits)"
        SATA = roles.SATA, "SATA (attitudes towards autism)"
        OTHER = roles.OTHER, "Other"

    study = models.ForeignKey("annotation.Study", on_delete=models.CASCADE, related_name="study_instruments")
    instrument = models.ForeignKey(Instrument, on_delete=models.PROTECT, related_name="+")
    position = models.PositiveSmallIntegerField(default=0)
    randomise_items = models.BooleanField(default=False, help_text="A new item order for every participant.")
    role = models.CharField(max_length=8, choices=Role.choices, default=Role.OTHER)

    class Meta:
        ordering = ["study", "position", "id"]
        constraints = [
            models.UniqueConstraint(fields=["study", "instrument"], name="instrument_once_per_study"),
            models.UniqueConstraint(fields=["study", "role"], condition=~models.Q(role="other"),
                                    name="one_instrument_per_role"),
        ]

    def __str__(self) -> str:
        return f"{self.position}. {self.instrument}"


class QuestionnaireSession(models.Model):
    """A participant's pass through one instrument: the item order shown, and when it was finished."""

    team_path = "participant__study__team"

    participant = models.ForeignKey("annotation.Participant", on_delete=models.CASCADE,
                                    related_name="questionnaires")
    instrument = models.ForeignKey(Instrument, on_delete=models.PROTECT, related_name="+")
    item_order = models.JSONField(help_text="Item numbers in the order shown.")
    started_at = models.DateTimeField(auto_now_add=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    source_import = _imported_by("questionnaire_sessions")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["participant", "instrument"],
                                               name="questionnaire_once_per_participant")]

    def __str__(self) -> str:
        return f"Instrument {self.instrument_id} of participant {self.participant_id}"


class InstrumentResponse(models.Model):
    """One raw answer: the 0-based index into the instrument's response options, as given."""

    team_path = "participant__study__team"

    participant = models.ForeignKey("annotation.Participant", on_delete=models.CASCADE,
                                    related_name="instrument_responses")
    instrument = models.ForeignKey(Instrument, on_delete=models.PROTECT, related_name="+")
    item_number = models.PositiveSmallIntegerField()
    response_index = models.PositiveSmallIntegerField()
    position = models.PositiveSmallIntegerField(help_text="0-based position of the item on the page.")
    rt_ms = models.PositiveIntegerField(null=True, blank=True, help_text="Time spent on this item.")
    answered_at = models.DateTimeField(auto_now=True)
    writer = models.CharField(max_length=64, blank=True, default="", editable=False,
                              help_text="The questionnaire page that autosaved this answer (one load of it), or empty.")
    writer_seq = models.PositiveIntegerField(default=0, editable=False,
                                             help_text="How many answers that page had given with this one.")
    source_import = _imported_by("responses")

    class Meta:
        ordering = ["participant", "instrument", "position"]
        constraints = [models.UniqueConstraint(fields=["participant", "instrument", "item_number"],
                                               name="one_answer_per_item")]

    def __str__(self) -> str:
        return (f"Participant {self.participant_id}, instrument {self.instrument_id} item {self.item_number}: "
                f"{self.response_index}")


class InstrumentScore(models.Model):
    team_path = "participant__study__team"

    participant = models.ForeignKey("annotation.Participant", on_delete=models.CASCADE,
                                    related_name="instrument_scores")
    instrument = models.ForeignKey(Instrument, on_delete=models.PROTECT, related_name="+")
    total = models.FloatField()
    subscales = models.JSONField(default=dict)
    tier = models.CharField(max_length=200, blank=True)
    computed_at = models.DateTimeField(auto_now=True)
    source_import = _imported_by("scores")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["participant", "instrument"], name="one_score_per_instrument")]

    def __str__(self) -> str:
        return f"Instrument {self.instrument_id} score of participant {self.participant_id}: {self.total}"


class InputModality(models.TextChoices):
    """How a participant answered IAT trials: the E/I keys or taps on the two halves of the screen."""

    KEYBOARD = "keyboard", "Keyboard"
    TOUCH = "touch", "Touch"
    MIXED = "mixed", "Keyboard and touch"


class IATSession(models.Model):
    """A participant's IAT: counterbalancing condition, seed, the trial design shown, and the D score.

    ``block_modalities`` holds each stored block's input modality in block order, ``input_modality`` the
    participant's over all stored blocks (mixed when they used both); both are empty for an imported IAT,
    whose files do not say.
    """

    team_path = "participant__study__team"

    participant = models.OneToOneField("annotation.Participant", on_delete=models.CASCADE, related_name="iat")
    condition_index = models.PositiveSmallIntegerField(null=True, blank=True,
                                                       help_text="Empty for an IAT imported from a file.")
    seed = models.BigIntegerField()
    stimuli = models.JSONField()
    design = models.JSONField(help_text="The seven blocks with their trials, as shown.")
    blocks_done = models.PositiveSmallIntegerField(default=0)
    block_modalities = models.JSONField(default=list, blank=True,
                                        help_text="Input modality of each stored block, in block order.")
    input_modality = models.CharField(
        max_length=8, choices=InputModality.choices, blank=True,
        help_text="Keyboard, touch, or mixed (both) over the stored blocks; empty for an imported IAT. Touch "
                  "latencies are not comparable with key latencies.")
    started_at = models.DateTimeField(auto_now_add=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    d_score = models.FloatField(null=True, blank=True, help_text="Positive = more implicit bias.")
    d_practice = models.FloatField(null=True, blank=True)
    d_test = models.FloatField(null=True, blank=True)
    d600_score = models.FloatField(null=True, blank=True)
    error_rate = models.FloatField(null=True, blank=True)
    fast_fraction = models.FloatField(null=True, blank=True)
    flagged_fast = models.BooleanField(null=True, blank=True, help_text="Over 10% of trials under 300 ms.")
    n_dropped_slow = models.PositiveIntegerField(null=True, blank=True)
    source_import = _imported_by("iat_sessions")

    def __str__(self) -> str:
        return f"IAT of participant {self.participant_id}"


class IATTrial(models.Model):
    team_path = "participant__study__team"

    participant = models.ForeignKey("annotation.Participant", on_delete=models.CASCADE, related_name="iat_trials")
    block = models.PositiveSmallIntegerField()
    trial = models.PositiveSmallIntegerField()
    stimulus = models.CharField(max_length=200)
    stimulus_category = models.CharField(max_length=20)
    pairing = models.CharField(max_length=20, blank=True)
    correct_side = models.CharField(max_length=5)
    first_key = models.CharField(max_length=5, help_text="e (left) or i (right); for a touch trial, the half "
                                                         "tapped first, coded the same way.")
    modality = models.CharField(max_length=8, choices=InputModality.choices[:2], blank=True,
                                help_text="How this trial was answered; empty for an imported trial.")
    error = models.BooleanField()
    latency_first_ms = models.FloatField(null=True, blank=True,
                                         help_text="Empty for an imported trial whose file had no first-key latency.")
    latency_correct_ms = models.FloatField()
    source_import = _imported_by("iat_trials")

    class Meta:
        ordering = ["participant", "block", "trial"]
        constraints = [models.UniqueConstraint(fields=["participant", "block", "trial"], name="one_row_per_trial")]

    def __str__(self) -> str:
        return f"Participant {self.participant_id}, block {self.block} trial {self.trial}: {self.stimulus}"
