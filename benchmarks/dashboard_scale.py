"""Benchmark: the server time of a study dashboard at seed 000's size (50 annotators × 2,121 items, built in
bulk and analysed by tests/scale_study.py), with weights and without (every item then lacks a weighted label:
the longest list). Each page is requested through Django's test client as a logged-in researcher, first page
and a filtered page, ``--repeat`` times; prints the median and the slowest, and the queries of one request.
Target: under 1 s.

    .venv/bin/python benchmarks/dashboard_scale.py [--participants 50] [--items 2121] [--repeat 5]

Runs on SQLite in a temporary VAR_DIR (or DATABASE_URL if set).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def researcher():
    """The team "Benchmarks", where the studies go, and a researcher who may read them."""
    from django.contrib.auth import get_user_model

    from teams import roles
    from teams.models import Membership, Team

    team = Team.objects.get_or_create(name="Benchmarks")[0]
    user = get_user_model().objects.create_user(f"bench-{time.time_ns()}", password="x", is_staff=True)
    Membership.objects.create(team=team, user=user, role=roles.VIEWER)
    return team, user


def build_study(team, **sizes):
    """tests/scale_study.py's study (``sizes``: its arguments), in ``team``."""
    from teams.scoping import new_objects_in
    from tests.scale_study import scale_study

    with new_objects_in(team):
        return scale_study(**sizes, slug=f"bench-{time.time_ns()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--participants", type=int, default=50)
    parser.add_argument("--items", type=int, default=2121)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    os.environ.setdefault("VAR_DIR", tempfile.mkdtemp(prefix="auditapp-bench-"))
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings.local"
    # The page names its static files unhashed, as DEBUG does: a temporary VAR_DIR has no collectstatic manifest.
    os.environ.setdefault("DEBUG", "1")
    os.environ["LOG_LEVEL"] = "WARNING"
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    settings.ANALYSIS_AUTO_RECOMPUTE = False
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
    call_command("migrate", verbosity=0)
    team, user = researcher()
    client = Client()
    client.force_login(user)
    for with_scores in (True, False):
        started = time.perf_counter()
        study = build_study(team, n_participants=args.participants, n_items=args.items, with_scores=with_scores)
        print(f"{'with' if with_scores else 'without'} weights: built and analysed in "
              f"{time.perf_counter() - started:.1f} s")
        url = f"/studies/{study.pk}/dashboard/"
        pages = [("first page", {}), ("filtered", {"ties_q": "sentence 21"})]
        if not with_scores:
            pages.append(("page 20 of ties", {"ties_page": 20}))
        for label, params in pages:
            timings, size = [], 0
            for _ in range(args.repeat):
                started = time.perf_counter()
                response = client.get(url, params)
                timings.append(time.perf_counter() - started)
                assert response.status_code == 200, response.content[:300]
                size = len(response.content)
            with CaptureQueriesContext(connection) as queries:
                client.get(url, params)
            print(f"  {label:16s} median {statistics.median(timings) * 1000:6.0f} ms, slowest "
                  f"{max(timings) * 1000:6.0f} ms over {args.repeat} runs; {len(queries)} queries; "
                  f"{size / 1024:.0f} KiB of HTML")


if __name__ == "__main__":
    main()
