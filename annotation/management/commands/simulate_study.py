"""``manage.py simulate_study``: a study answered by simulated participants, for demos, tests and benchmarks.

The participants' latent traits, answers, IAT trials, items and labels come from
``annotation.simulation`` (reproducible from ``--seed``); everything they do goes through the same
services as a real participant's (``annotation.simulated_participation``).

Each item's latent truth is kept in its metadata (``simulated``: ableist, contested, true_ableism), so
tests and benchmarks can compare ground truths with it. The study is set up in one transaction and each
participant runs in their own (so a web app on the same SQLite file is never locked out for long); if
the simulation fails or is interrupted, the half-made study is deleted. The analysis recomputation
that ``participant_complete`` queues for every participant is held back while the simulation runs and
queued once at the end instead.
"""
from __future__ import annotations

import time

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.core.validators import validate_slug
from django.db import transaction
from django.test.utils import override_settings

from annotation import simulation
from annotation.models import Item, Label, Participant, Study
from annotation.participation import participants_invite
from annotation.simulated_participation import instrument_answers, participate
from annotation.study_analysis import study_analysis_enqueue
from psychometrics.models import IATTrial, InstrumentScore, StudyInstrument
from psychometrics.services import instruments_sync_shipped
from teams.models import Team
from teams.scoping import demo_team, new_objects_in


class Command(BaseCommand):
    help = ("Create a study whose simulated participants answer the AQ-50 and partial SATA, do the IAT and label "
            "the items, through the same services as real participants (reproducible from --seed).")

    def add_arguments(self, parser):
        parser.add_argument("--participants", type=int, default=50, help="Number of participants (default 50).")
        parser.add_argument("--items", type=int, default=2121, help="Number of items (default 2121).")
        parser.add_argument("--seed", type=int, default=1, help="Seed of everything simulated (default 1).")
        parser.add_argument("--slug", default=None, help="Slug of the new study (default simulated-<seed>).")
        parser.add_argument("--annotators-per-item", type=int, default=3, help="Labels per item (default 3).")
        parser.add_argument("--teams", type=int, default=2, help="Number of teams (default 2).")
        parser.add_argument("--owner-team", default=None,
                            help="The researchers' team the study belongs to, by name (created if there is none; "
                                 "default: the Demo team, Lab with ONE_LAB). Not --teams, the annotators' teams.")

    def handle(self, *args, participants: int, items: int, seed: int, slug: str | None, annotators_per_item: int,
               teams: int, owner_team: str | None = None, **options):
        if participants < 1 or items < 1 or annotators_per_item < 1:
            raise CommandError("--participants, --items and --annotators-per-item must be at least 1")
        if seed < 0:
            raise CommandError("--seed must be a non-negative integer")
        if not 1 <= teams <= participants:
            raise CommandError(f"--teams must be between 1 and the number of participants ({participants})")
        slug = slug or f"simulated-{seed}"
        try:
            validate_slug(slug)
        except ValidationError as exc:
            raise CommandError(f"--slug {slug!r} is not a slug") from exc
        if len(slug) > Study._meta.get_field("slug").max_length:
            raise CommandError(f"--slug {slug!r} is too long")
        if Study.objects.filter(slug=slug).exists():
            raise CommandError(f"a study with slug {slug!r} already exists")

        started = time.perf_counter()
        team = Team.objects.get_or_create(name=owner_team)[0] if owner_team else demo_team()
        with override_settings(ANALYSIS_AUTO_RECOMPUTE=False), new_objects_in(team):
            study = _simulate(slug=slug, n_participants=participants, n_items=items, seed=seed,
                              annotators_per_item=annotators_per_item, teams=teams)
        study_analysis_enqueue(study_id=study.pk)
        seconds = time.perf_counter() - started

        people = Participant.objects.filter(study=study)
        self.stdout.write(
            f"Simulated study '{study.slug}' (id {study.pk}), seed {seed}: "
            f"{people.count()} participants in {teams} team(s) "
            f"({people.filter(status=Participant.Status.COMPLETED).count()} completed), "
            f"{study.items.count()} items, {Label.objects.filter(item__study=study).count()} labels "
            f"({annotators_per_item} per item, {study.items_per_annotator} per annotator), "
            f"{IATTrial.objects.filter(participant__study=study).count()} IAT trials, "
            f"{InstrumentScore.objects.filter(participant__study=study).count()} instrument scores; "
            f"{seconds:.1f} s.")


def _simulate(*, slug: str, n_participants: int, n_items: int, seed: int, annotators_per_item: int,
              teams: int) -> Study:
    """Create the study, then take every participant through the flow; delete the study on any failure."""
    traits = simulation.draw_participants(seed, n_participants, teams=teams)
    truth = simulation.draw_items(seed, n_items)
    with transaction.atomic():
        study, people, answers, item_index = _setup(slug=slug, traits=traits, truth=truth, seed=seed,
                                                    annotators_per_item=annotators_per_item)
    try:
        for index, person in enumerate(people):
            with transaction.atomic():
                values = simulation.participant_labels(traits, index, truth, seed=seed)
                participate(person, index, traits=traits, answers=answers, seed=seed,
                            labels={item_id: int(values[position]) for item_id, position in item_index.items()})
    except BaseException:
        Study.objects.filter(pk=study.pk).delete()
        raise
    return study


def _setup(*, slug: str, traits: simulation.SimulatedParticipants, truth: simulation.SimulatedItems, seed: int,
           annotators_per_item: int):
    """The study, its items (latent truth in the metadata), instruments and invited participants (seeds set)."""
    n_participants, n_items, teams = len(traits), len(truth), int(traits.team.max()) + 1
    study = Study.objects.create(
        name=f"Simulated study (seed {seed})", slug=slug,
        description=(f"Simulated by manage.py simulate_study --participants {n_participants} --items {n_items} "
                     f"--seed {seed} --annotators-per-item {annotators_per_item} --teams {teams}. "
                     "No real person took part."),
        content_warning="Simulated data: the sentences are placeholders.",
        consent_text="Simulated participants only.",
        labelling_instructions="Decide whether the sentence is ableist towards autistic people.",
        label_scheme=Study.LabelScheme.BINARY_WITH_UNRELATED, status=Study.Status.OPEN, iat_enabled=True,
        annotators_per_item=annotators_per_item,
        items_per_annotator=simulation.items_per_annotator(n_items, annotators_per_item, n_participants))
    width = len(str(n_items))
    Item.objects.bulk_create([
        Item(study=study, external_id=f"sim-{n:0{width}d}", position=n, target=f"Simulated sentence {n}.",
             preceding=f"Simulated sentence before {n}.", following=f"Simulated sentence after {n}.",
             metadata={"simulated": {"ableist": int(truth.ableist[n]), "contested": bool(truth.contested[n]),
                                     "true_ableism": round(float(truth.true_ableism[n]), 6)}})
        for n in range(n_items)], batch_size=1000)
    item_index = dict(Item.objects.filter(study=study).values_list("id", "position"))

    shipped = {instrument.slug: instrument for instrument in instruments_sync_shipped()}
    aq, sata = shipped["aq50"], shipped["sata_partial"]
    StudyInstrument.objects.create(study=study, instrument=aq, position=0, role=StudyInstrument.Role.AQ,
                                   randomise_items=True)
    StudyInstrument.objects.create(study=study, instrument=sata, position=1, role=StudyInstrument.Role.SATA)
    answers = instrument_answers(traits, aq=aq, sata=sata, seed=seed)

    people: list[Participant] = []
    for team in range(teams):
        people += participants_invite(study=study, count=int((traits.team == team).sum()), team=f"team-{team + 1}")
    for person, person_seed in zip(people, simulation.participant_seeds(seed, n_participants), strict=True):
        person.seed = person_seed
    Participant.objects.bulk_update(people, ["seed"])
    return study, people, answers, item_index
