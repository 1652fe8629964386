"""Small builders for test data (studies, researchers, item files)."""
from __future__ import annotations

import csv
import io
import itertools

from django.contrib.auth import get_user_model

from annotation.models import Study
from auditapp.services import researcher_create

_counter = itertools.count(1)


def make_study(**fields) -> Study:
    n = next(_counter)
    defaults = {"name": f"Study {n}", "slug": f"study-{n}"}
    return Study.objects.create(**{**defaults, **fields})


def make_researcher(username: str = "alice"):
    user, _, token = researcher_create(username=username)
    return user, token


def make_participant_user(username: str = "mallory"):
    return get_user_model().objects.create_user(username=username, password="x-not-staff-1")


def autalic_like_csv(n_items: int, annotators: tuple[str, ...] = ("A1", "A2", "A3"), *, seed: int = 0) -> bytes:
    """A file in the AUTALIC shape: id, context, sentence, then one <annotator>_Score column each.

    Labels cycle through 1, 0, -1 with an offset per annotator, so every value occurs.
    """
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["id", "preceding", "sentence", "following", *[f"{a}_Score" for a in annotators]])
    for i in range(n_items):
        labels = [(1, 0, -1)[(i + seed + k) % 3] for k in range(len(annotators))]
        writer.writerow([f"s{i:05d}", f"Before {i}.", f"Target sentence number {i}, with a comma.", f"After {i}.",
                         *labels])
    return buffer.getvalue().encode("utf-8")
